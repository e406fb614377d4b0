// RunListModel: the runs table (id, name, target, status, steps, last loss, started). Rows come
// whole from the worker's listing; an unchanged set of ids updates in place (dataChanged), so the
// view keeps its selection and scroll position while a run streams. While a remote target is
// re-establishing its connection, its live runs read "reconnecting (attempt N)" in an amber italic,
// not the red of a failure: the run itself is fine, only the view of it is interrupted.
// Threading: GUI thread only.
#pragma once

#include "ui/meta_types.h"

#include <QAbstractTableModel>
#include <QMap>

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

    /// `target` (as recorded, "ssh:HOST") is on reconnect attempt `attempt`; 0 = connected again.
    void setTargetReconnecting(const QString& target, int attempt, const QString& reason);
    /// The reconnect attempt shown for the run's target, 0 when none (or the run is not live).
    int reconnectAttempt(const RunRow& row) const;
    /// Why the run's target is reconnecting (the connection error); empty when it is not.
    QString reconnectReason(const RunRow& row) const;

private:
    struct Reconnect {
        int attempt = 0;
        QString reason;
    };
    RunRowList m_runs;
    QMap<QString, Reconnect> m_reconnecting;  // by target name
};

}  // namespace wb::ui
