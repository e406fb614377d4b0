// RunListPanel: every run in the store, newest first, with its status per run; selecting one
// shows it in the charts. Keeps the selection across the worker's periodic re-listing.
// Threading: GUI thread only.
#pragma once

#include "ui/meta_types.h"

#include <QString>
#include <QWidget>

QT_BEGIN_NAMESPACE
class QLabel;
class QMenu;
class QTableView;
QT_END_NAMESPACE

namespace wb::ui {

class RunListModel;

class RunListPanel : public QWidget {
    Q_OBJECT

public:
    explicit RunListPanel(QWidget* parent = nullptr);

    RunListModel* model() const { return m_model; }
    QTableView* view() const { return m_view; }
    QString selectedRunId() const;
    /// The run's context menu (what a right click on its row opens): Rename…, Delete…, Export
    /// steps as CSV…, Copy run id, Open run directory. Null when the run is not listed; the caller
    /// owns the menu.
    QMenu* contextMenuFor(const QString& runId);

public slots:
    void setRuns(const wb::ui::RunRowList& runs);
    /// Selects the run now if listed, else as soon as a listing contains it (a run just started).
    void selectRun(const QString& runId);

signals:
    /// The user (or selectRun) picked a run. `name` is its display name.
    void runSelected(const QString& runId, const QString& name);
    /// The selected run's planned step count changed (known once its config is read).
    void selectedRunPlannedSteps(int64_t steps);
    /// From the context menu: the window asks (a name, a confirmation, a file) and then acts.
    void renameRequested(const QString& runId);
    void deleteRequested(const QString& runId);
    void exportCsvRequested(const QString& runId);

private:
    void onCurrentChanged();
    void updateDetails();
    void fitColumns();

    RunListModel* m_model = nullptr;
    QTableView* m_view = nullptr;
    QLabel* m_header = nullptr;
    QLabel* m_details = nullptr;
    QString m_selectedId;
    QString m_pendingSelection;
};

}  // namespace wb::ui
