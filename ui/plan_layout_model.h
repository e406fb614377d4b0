// PlanLayoutModel: the planner's ranked layouts as a table (one row per candidate, best first):
// sizes, batch, recompute, dispatcher, graphs, predicted memory, step time, tokens/s/GPU, TFLOP/s,
// MFU and the lint count. The memory column carries its per-category breakdown (MemoryRole) for
// PlanMemoryBarDelegate. Threading: GUI thread only (the search result is moved in whole).
#pragma once

#include "core/planner/layout_search.h"

#include <QAbstractTableModel>

#include <vector>

namespace wb::ui {

class PlanLayoutModel : public QAbstractTableModel {
    Q_OBJECT

public:
    /// The predictions first (issue 18 item 4: at 1600 px they were off-screen), then the layout.
    /// RankColumn is the layout's number as `plan` prints it and `generate --layout N` takes it (0 = best).
    enum Column {
        RankColumn, StepColumn, TokensColumn, TflopsColumn, MfuColumn, MemoryColumn, LintColumn,
        TpColumn, CpColumn, PpColumn, VppColumn, EpColumn, EtpColumn, DpColumn, MbsColumn,
        RecomputeColumn, DispatcherColumn, GraphsColumn, ColumnCount
    };
    /// MemoryColumn, this role: QVariantList of GiB {weights, grads, optimizer, activations, other, hbm}.
    static constexpr int MemoryRole = Qt::UserRole + 1;
    /// Any column, this role: the row's total memory in GiB (double).
    static constexpr int MemoryTotalRole = Qt::UserRole + 2;

    explicit PlanLayoutModel(QObject* parent = nullptr);

    void setResult(std::vector<core::planner::Candidate> ranked, double hbmGib);
    const core::planner::Candidate* candidate(int row) const;
    double hbmGib() const { return m_hbmGib; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// The memory categories in bar order (core names), with their translated labels.
    static const QStringList& memoryCategories();
    static QString memoryCategoryLabel(int index);

private:
    QVariant display(const core::planner::Candidate& c, int row, int column) const;

    std::vector<core::planner::Candidate> m_ranked;
    double m_hbmGib = 0;
};

}  // namespace wb::ui
