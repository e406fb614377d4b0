// MainWindow: wires the panels (run list, charts), the run session (worker thread) and the
// sample-run launcher together, and owns menus, toolbar and status bar. No logic of its own beyond
// routing signals: each panel is its own class.
// Threading: GUI thread only.
#pragma once

#include "ui/launch_targets.h"
#include "ui/run_follow_worker.h"
#include "ui/sample_run_launcher.h"

#include <QMainWindow>
#include <QString>

QT_BEGIN_NAMESPACE
class QAction;
class QDialog;
class QLabel;
class QMessageBox;
class QProgressBar;
QT_END_NAMESPACE

namespace wb::ui {

class CompareView;
class HostsDialog;
class ImportRunDialog;
class ImportRunDialog;
class LaunchDialog;
class PlanningView;
class RunChartsPanel;
class RunListPanel;
class RunSession;

struct MainWindowOptions {
    QString storePath;                            ///< the SQLite run store
    RunFollowWorker::TargetFactory targetFactory; ///< the default target (app/ injects "local")
    /// Makes any other target ("ssh:HOST", ...) for the launch dialog and for following runs
    /// recorded on it. Empty: only the default target (no launch dialog targets but it).
    TargetResolver targetResolver;
    QString hostsPath;  ///< hosts.json (remote::defaultHostsPath of the store); empty = no hosts panel
    SampleRunOptions sampleRun;
    QString catalogDir;      ///< the planner's built-in catalog (resources/catalog)
    QString userCatalogDir;  ///< user catalog files that add or replace entries; may be empty
};

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(MainWindowOptions options, QWidget* parent = nullptr);
    ~MainWindow() override;

    QAction* startSampleRunAction() const { return m_startSampleRun; }
    RunListPanel* runListPanel() const { return m_runList; }
    RunChartsPanel* chartsPanel() const { return m_charts; }
    RunSession* session() const { return m_session; }

public slots:
    void startSampleRun();
    /// Opens the planning view in its own window (Run → Plan a training run…).
    PlanningView* openPlanningView();
    /// Run → Compare runs…: a compare view over this store in its own window.
    CompareView* openCompareView();
    /// Remote → SSH hosts… (one dialog, raised when already open).
    HostsDialog* openHostsDialog();
    /// Run → Launch run…; with a config (and the plan's prediction, stored with the run) when the
    /// planning view hands one over (PlanningView::launchRequested is connected here).
    LaunchDialog* openLaunchDialog(const QString& configJson = {}, const QString& predictionJson = {});
    /// Run → Import Megatron-Bridge run…: the dialog (window-modal, deleted on close); Import runs
    /// importRun with its choice.
    ImportRunDialog* openImportDialog();
    /// Imports on the session's worker; the run list selects the run and a box shows the report.
    void importRun(const BridgeImportArgs& args);
    /// Run → Cancel run: asks first, naming the run and its target (non-modal box
    /// "cancelConfirmBox", deleted on close); "Cancel the run" cancels it. Null: no such run listed.
    QMessageBox* confirmCancel(const QString& runId);
    /// The run list's Rename… / Delete… / Export steps as CSV…: a non-modal dialog each
    /// ("renameRunDialog", "deleteRunBox" with an "also its run directory" check box for runs on
    /// this machine, "exportCsvDialog"), deleted on close; accepting it asks the session's worker.
    QDialog* askRename(const QString& runId);
    QMessageBox* confirmDelete(const QString& runId);
    QDialog* askExportCsv(const QString& runId);

private:
    void createActions();
    void createMenus();
    void createStatusBar();
    void connectSession();
    void showError(const QString& title, const QString& message);
    void showStatus(const QString& message, bool isError = false);
    void updateActions();
    void syncSelectedRunState();

    RunSession* m_session = nullptr;
    SampleRunLauncher* m_sampleLauncher = nullptr;
    RunListPanel* m_runList = nullptr;
    RunChartsPanel* m_charts = nullptr;

    HostsDialog* m_hostsDialog = nullptr;
    LaunchDialog* m_launchDialog = nullptr;
    TargetResolver m_resolver;
    quint64 m_sampleLaunch = 0;  // the sample run's launch request (its errors are shown here)
    QString m_hostsPath;

    QAction* m_startSampleRun = nullptr;
    QAction* m_importRun = nullptr;
    QAction* m_launchRun = nullptr;
    QAction* m_hosts = nullptr;
    QAction* m_cancelRun = nullptr;
    QAction* m_refresh = nullptr;
    QAction* m_quit = nullptr;
    QAction* m_about = nullptr;

    QLabel* m_statusText = nullptr;
    QProgressBar* m_busy = nullptr;
    QLabel* m_storeLabel = nullptr;
    QLabel* m_targetLabel = nullptr;

    QString m_catalogDir;
    QString m_userCatalogDir;
};

}  // namespace wb::ui
