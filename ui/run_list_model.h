// RunListModel: the runs table (id, name, target, status, steps, last loss, started). Rows come
// whole from the worker's listing; an unchanged set of ids updates in place (dataChanged), so the
// view keeps its selection and scroll position while a run streams.
// Threading: GUI thread only.
#pragma once

#include "ui/meta_types.h"

#include <QAbstractTableModel>

namespace wb::ui {

class RunListModel : public QAbstractTableModel {
    Q_OBJECT

public:
    /// The start time is in the id (and the details box), so it gets no column of its own.
    enum Column { Id, Name, Target, Status, Steps, LastLoss, ColumnCount };
    static constexpr int kRunIdRole = Qt::UserRole + 1;

    using QAbstractTableModel::QAbstractTableModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    void setRuns(const RunRowList& runs);
    const RunRow* runAt(int row) const;
    const RunRow* runById(const QString& runId) const;
    int rowOf(const QString& runId) const;  ///< -1 if absent

private:
    RunRowList m_runs;
};

}  // namespace wb::ui
