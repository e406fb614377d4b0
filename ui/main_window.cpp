#include "ui/main_window.h"

#include "core/log.h"
#include "ui/compare_view.h"
#include "ui/hosts_dialog.h"
#include "ui/import_run_dialog.h"
#include "ui/launch_dialog.h"
#include "ui/meta_types.h"
#include "ui/planning_view.h"
#include "ui/run_charts_panel.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui/run_session.h"
#include "ui/run_status_style.h"

#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QInputDialog>
#include <QPushButton>
#include <QApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>

#include <utility>

// Resources of a static library must be initialised by name, outside any namespace.
static void initWorkbenchResources()
{
    Q_INIT_RESOURCE(moe_workbench);
}

namespace wb::ui {

MainWindow::MainWindow(MainWindowOptions options, QWidget* parent) : QMainWindow(parent)
{
    initWorkbenchResources();
    registerMetaTypes();
    setWindowTitle(tr("MoE-VLM Workbench"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/moe-workbench.png")));
    setObjectName(QStringLiteral("mainWindow"));
    m_catalogDir = options.catalogDir;
    m_userCatalogDir = options.userCatalogDir;

    m_resolver = options.targetResolver;
    m_hostsPath = options.hostsPath;
    m_session = new RunSession(options.storePath, std::move(options.targetFactory), options.targetResolver, this);
    m_sampleLauncher = new SampleRunLauncher(std::move(options.sampleRun), this);
    m_runList = new RunListPanel(this);
    m_charts = new RunChartsPanel(this);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_runList);
    splitter->addWidget(m_charts);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({535, 865});
    setCentralWidget(splitter);

    createActions();
    createMenus();
    createStatusBar();
    connectSession();
    updateActions();
    resize(1400, 900);

    m_session->start();
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions()
{
    m_startSampleRun = new QAction(style()->standardIcon(QStyle::SP_MediaPlay), tr("Start &sample run"), this);
    m_startSampleRun->setObjectName(QStringLiteral("startSampleRunAction"));
    m_startSampleRun->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_startSampleRun->setToolTip(tr("Train the small bundled sample model on this machine and watch it live"));
    connect(m_startSampleRun, &QAction::triggered, this, &MainWindow::startSampleRun);

    m_cancelRun = new QAction(style()->standardIcon(QStyle::SP_MediaStop), tr("&Cancel run"), this);
    m_cancelRun->setObjectName(QStringLiteral("cancelRunAction"));
    m_cancelRun->setToolTip(tr("Stop the selected run (its whole process group)"));
    connect(m_cancelRun, &QAction::triggered, this, [this] { confirmCancel(m_runList->selectedRunId()); });

    m_launchRun = new QAction(style()->standardIcon(QStyle::SP_ArrowForward), tr("&Launch run…"), this);
    m_launchRun->setObjectName(QStringLiteral("launchRunAction"));
    m_launchRun->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
    m_launchRun->setToolTip(tr("Start a run from a config, here or on an SSH host"));
    m_launchRun->setEnabled(static_cast<bool>(m_resolver));
    connect(m_launchRun, &QAction::triggered, this, [this] { openLaunchDialog(); });

    m_importRun = new QAction(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("&Import Megatron-Bridge run…"), this);
    m_importRun->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    m_importRun->setStatusTip(tr("Bring a finished Megatron-Bridge job (its log and config) into the run store"));
    connect(m_importRun, &QAction::triggered, this, [this] { openImportDialog(); });

    m_hosts = new QAction(style()->standardIcon(QStyle::SP_DriveNetIcon), tr("SSH &hosts…"), this);
    m_hosts->setObjectName(QStringLiteral("hostsAction"));
    m_hosts->setToolTip(tr("Register, edit and test the SSH hosts runs can be launched on"));
    m_hosts->setEnabled(!m_hostsPath.isEmpty());
    connect(m_hosts, &QAction::triggered, this, [this] { openHostsDialog(); });

    m_refresh = new QAction(style()->standardIcon(QStyle::SP_BrowserReload), tr("&Refresh"), this);
    m_refresh->setShortcut(QKeySequence::Refresh);
    connect(m_refresh, &QAction::triggered, m_session, &RunSession::refreshRuns);

    m_quit = new QAction(tr("&Quit"), this);
    m_quit->setShortcut(QKeySequence::Quit);
    connect(m_quit, &QAction::triggered, this, &QWidget::close);

    m_about = new QAction(tr("&About"), this);
    connect(m_about, &QAction::triggered, this, [this] {
        QMessageBox::about(this, tr("About MoE-VLM Workbench"),
                           tr("<b>MoE-VLM Workbench</b> %1<br>Plan, launch, watch and compare "
                              "Mixture-of-Experts vision-language training runs.")
                               .arg(QCoreApplication::applicationVersion()));
    });

    auto* toolbar = addToolBar(tr("Runs"));
    toolbar->setObjectName(QStringLiteral("runsToolBar"));
    toolbar->setMovable(false);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    toolbar->addAction(m_startSampleRun);
    toolbar->addAction(m_launchRun);
    toolbar->addAction(m_cancelRun);
    toolbar->addSeparator();
    toolbar->addAction(m_refresh);
}

PlanningView* MainWindow::openPlanningView()
{
    auto* view = new PlanningView(m_catalogDir, m_userCatalogDir, this);
    view->setRemembersInputs(true);  // the inputs and answers of the last session
    connect(view, &PlanningView::status, this, &MainWindow::showStatus);
    // "Launch…" on a layout: the launch dialog, filled with its config and the plan's prediction.
    connect(view, &PlanningView::launchRequested, this,
            [this](const QString& configJson, const QString& predictionJson) {
                openLaunchDialog(configJson, predictionJson);
            });
    view->setWindowFlag(Qt::Window);
    view->setAttribute(Qt::WA_DeleteOnClose);
    view->resize(1600, 1000);
    view->show();
    return view;
}

CompareView* MainWindow::openCompareView()
{
    auto* view = new CompareView(m_session->storePath(), this);
    view->setWindowFlag(Qt::Window);
    view->setAttribute(Qt::WA_DeleteOnClose);
    view->resize(1400, 900);
    view->show();
    return view;
}

HostsDialog* MainWindow::openHostsDialog()
{
    if (!m_hostsDialog) {
        m_hostsDialog = new HostsDialog(m_hostsPath, this);
        connect(m_hostsDialog, &HostsDialog::hostsChanged, this, [this] {
            if (m_launchDialog)
                m_launchDialog->reloadTargets();
        });
    }
    m_hostsDialog->show();
    m_hostsDialog->raise();
    m_hostsDialog->activateWindow();
    return m_hostsDialog;
}

LaunchDialog* MainWindow::openLaunchDialog(const QString& configJson, const QString& predictionJson)
{
    if (!m_launchDialog) {
        // One dialog, kept (hidden) after it is closed: a launch still under way reports to it.
        // The launch's worker follows the run; the session's launchFinished selects it.
        m_launchDialog = new LaunchDialog({m_hostsPath, m_session, m_catalogDir, m_userCatalogDir}, this);
    } else {
        m_launchDialog->reloadTargets();
    }
    if (!configJson.isEmpty())
        m_launchDialog->setConfigJson(configJson, predictionJson);
    m_launchDialog->show();
    m_launchDialog->raise();
    m_launchDialog->activateWindow();
    return m_launchDialog;
}

ImportRunDialog* MainWindow::openImportDialog()
{
    auto* dialog = new ImportRunDialog(m_catalogDir, m_userCatalogDir, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { importRun(dialog->args()); });
    dialog->open();
    return dialog;
}

void MainWindow::importRun(const BridgeImportArgs& args)
{
    showStatus(tr("Importing %1…").arg(args.logPath));
    m_session->importBridgeRun(args);
}

void MainWindow::createMenus()
{
    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_quit);
    auto* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(m_startSampleRun);
    run->addAction(m_launchRun);
    run->addAction(m_importRun);
    run->addAction(m_cancelRun);
    run->addSeparator();
    run->addAction(m_refresh);
    // Compare runs: its own window over the same store (the view opens its own connection).
    run->addAction(tr("Co&mpare runs…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), this,
                   [this] { openCompareView(); })
        ->setObjectName(QStringLiteral("compareRunsAction"));
    // Planning: its own window over the catalog (pure computation; no store).
    run->addAction(tr("&Plan a training run…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P), this,
                   [this] { openPlanningView(); })
        ->setObjectName(QStringLiteral("planRunAction"));
    auto* remoteMenu = menuBar()->addMenu(tr("Re&mote"));
    remoteMenu->addAction(m_hosts);
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(m_about);
}

void MainWindow::createStatusBar()
{
    m_statusText = new QLabel(this);
    m_statusText->setObjectName(QStringLiteral("statusText"));
    m_busy = new QProgressBar(this);
    m_busy->setRange(0, 0);  // indeterminate: building the sample set has no reliable percentage
    m_busy->setMaximumWidth(120);
    m_busy->setMaximumHeight(14);
    m_busy->setVisible(false);
    m_storeLabel = new QLabel(this);
    m_targetLabel = new QLabel(this);
    statusBar()->addWidget(m_statusText, 1);
    statusBar()->addPermanentWidget(m_busy);
    statusBar()->addPermanentWidget(m_targetLabel);
    statusBar()->addPermanentWidget(m_storeLabel);
    showStatus(tr("Opening the run store…"));
}

void MainWindow::connectSession()
{
    const RunEvents* events = m_session->events();
    connect(events, &RunEvents::ready, this, [this](const QString& storePath, const QString& target) {
        m_storeLabel->setText(tr("Store: %1").arg(storePath));
        m_targetLabel->setText(target.isEmpty() ? tr("No target") : tr("Target: %1").arg(target));
        showStatus(tr("Ready."));
    });
    connect(events, &RunEvents::runsListed, m_runList, &RunListPanel::setRuns);
    connect(events, &RunEvents::targetReconnecting, this,
            [this](const QString& target, int attempt, const QString& reason) {
                m_runList->model()->setTargetReconnecting(target, attempt, reason);
                syncSelectedRunState();  // the charts header of a run on that target says so too
                if (attempt > 0)
                    showStatus(tr("Connection to %1 lost; reconnecting (attempt %2)…").arg(target).arg(attempt));
                else
                    showStatus(tr("Connection to %1 is back.").arg(target));
            });
    connect(events, &RunEvents::runsListed, this, [this] {
        updateActions();
        syncSelectedRunState();
    });
    connect(events, &RunEvents::stepsArrived, m_charts, &RunChartsPanel::appendSteps);
    connect(events, &RunEvents::historyLoaded, m_charts, &RunChartsPanel::setHistory);
    connect(events, &RunEvents::gpuSamplesArrived, m_charts, &RunChartsPanel::setGpuSamples);
    connect(events, &RunEvents::runStatusChanged, m_charts, &RunChartsPanel::setRunState);
    connect(events, &RunEvents::launchFinished, this, [this](quint64 requestId, const QString& runId, const QString& error) {
        if (!runId.isEmpty()) {
            showStatus(tr("Run %1 started; streaming its metrics.").arg(runId));
            m_runList->selectRun(runId);
        } else if (requestId == m_sampleLaunch) {
            showError(tr("Cannot start the run"), error);  // the launch dialog shows its own errors
        }
    });
    connect(events, &RunEvents::runEnded, this, [this](const QString& runId, core::RunState state, int exitCode) {
        showStatus(tr("Run %1 ended: %2 (exit code %3).").arg(runId, statusLabel(state)).arg(exitCode),
                   state != core::RunState::Finished);
    });
    connect(events, &RunEvents::eventLogged, this,
            [this](const QString& runId, const QString& level, const QString& message) {
                if (level != u"info")
                    showStatus(tr("Run %1: %2: %3").arg(runId, level, message), level == u"error");
            });
    connect(events, &RunEvents::runImported, this, [this](const QString& runId, const QString& report) {
        showStatus(tr("Imported run %1.").arg(runId));
        m_runList->selectRun(runId);
        auto* box = new QMessageBox(QMessageBox::Information, tr("Run imported"), tr("Imported run %1.").arg(runId),
                                    QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setObjectName(QStringLiteral("importReport"));
        box->setInformativeText(tr("Its steps are in the charts; compare it with other runs under Run → Compare runs."));
        box->setDetailedText(report);
        box->open();
    });
    connect(events, &RunEvents::runManaged, this, [this](const QString&, const QString& message) { showStatus(message); });
    connect(m_runList, &RunListPanel::renameRequested, this, &MainWindow::askRename);
    connect(m_runList, &RunListPanel::deleteRequested, this, &MainWindow::confirmDelete);
    connect(m_runList, &RunListPanel::exportCsvRequested, this, &MainWindow::askExportCsv);
    connect(events, &RunEvents::importFailed, this,
            [this](const QString& message) { showError(tr("Cannot import the run"), message); });
    connect(events, &RunEvents::errorOccurred, this,
            [this](const QString& message) { showStatus(message, true); });

    connect(m_runList, &RunListPanel::runSelected, this, [this](const QString& runId, const QString& name) {
        updateActions();
        if (runId.isEmpty()) {
            m_charts->clearRun();
            return;
        }
        m_charts->showRun(runId, name);
        syncSelectedRunState();
        m_session->loadHistory(runId);
    });
    connect(m_runList, &RunListPanel::selectedRunPlannedSteps, m_charts, &RunChartsPanel::setPlannedSteps);

    connect(m_sampleLauncher, &SampleRunLauncher::progress, this, [this](const QString& message) {
        m_busy->setVisible(m_sampleLauncher->isBusy());
        showStatus(message);
    });
    connect(m_sampleLauncher, &SampleRunLauncher::readyToLaunch, this,
            [this](const QString& name, const QString& configJson) {
                m_busy->setVisible(false);
                showStatus(tr("Starting %1…").arg(name));
                LaunchRequest request;  // on the default target
                request.name = name;
                request.configJson = configJson;
                m_sampleLaunch = m_session->launch(std::move(request));
            });
    connect(m_sampleLauncher, &SampleRunLauncher::failed, this, [this](const QString& message) {
        m_busy->setVisible(false);
        showError(tr("Cannot start the sample run"), message);
    });
}

void MainWindow::syncSelectedRunState()
{
    // The store's view of the selected run (also for runs nobody is following, e.g. finished ones).
    const QString id = m_runList->selectedRunId();
    if (const RunRow* run = m_runList->model()->runById(id)) {
        m_charts->setRunState(id, run->summary.status, run->message);
        m_charts->setReconnecting(id, m_runList->model()->reconnectAttempt(*run),
                                  m_runList->model()->reconnectReason(*run));
    }
}

QDialog* MainWindow::askRename(const QString& runId)
{
    const RunRow* run = m_runList->model()->runById(runId);
    if (!run)
        return nullptr;
    auto* dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("renameRunDialog"));
    dialog->setWindowTitle(tr("Rename run"));
    dialog->setLabelText(tr("New name for run %1:").arg(runId));
    dialog->setTextValue(QString::fromStdString(run->summary.name));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QInputDialog::textValueSelected, this, [this, runId](const QString& name) {
        if (!name.trimmed().isEmpty())
            m_session->renameRun(runId, name.trimmed());
    });
    dialog->open();
    return dialog;
}

QMessageBox* MainWindow::confirmDelete(const QString& runId)
{
    const RunRow* run = m_runList->model()->runById(runId);
    if (!run)
        return nullptr;
    const auto& s = run->summary;
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Delete run"),
                                tr("Delete run \u201c%1\u201d (%2) from the run store?")
                                    .arg(QString::fromStdString(s.name), runId),
                                QMessageBox::Yes | QMessageBox::No, this);
    box->setObjectName(QStringLiteral("deleteRunBox"));
    box->setInformativeText(tr("Its steps, events, config and prediction are removed; this cannot be undone."));
    box->button(QMessageBox::Yes)->setText(tr("Delete"));
    box->setDefaultButton(QMessageBox::No);
    if (s.target == "local" && !s.runDir.empty()) {
        auto* files = new QCheckBox(tr("Also delete its run directory %1").arg(QString::fromStdString(s.runDir)), box);
        files->setObjectName(QStringLiteral("deleteRunFiles"));
        box->setCheckBox(files);
    }
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, runId] {
        if (box->clickedButton() == box->button(QMessageBox::Yes))
            m_session->deleteRun(runId, box->checkBox() && box->checkBox()->isChecked());
    });
    box->open();
    return box;
}

QDialog* MainWindow::askExportCsv(const QString& runId)
{
    auto* dialog = new QFileDialog(this, tr("Export the steps of run %1 as CSV").arg(runId),
                                   QDir::home().filePath(runId + QStringLiteral(".csv")), tr("CSV files (*.csv)"));
    dialog->setObjectName(QStringLiteral("exportCsvDialog"));
    dialog->setAcceptMode(QFileDialog::AcceptSave);
    dialog->setDefaultSuffix(QStringLiteral("csv"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QFileDialog::fileSelected, this,
            [this, runId](const QString& path) { m_session->exportRunCsv(runId, path); });
    dialog->open();
    return dialog;
}

QMessageBox* MainWindow::confirmCancel(const QString& runId)
{
    const RunRow* run = m_runList->model()->runById(runId);
    if (!run)
        return nullptr;
    // A cancel cannot be undone (the processes end; a resume starts from the last checkpoint):
    // ask, naming the run and where it runs. Non-modal, so the charts keep streaming meanwhile.
    const QString name = QString::fromStdString(run->summary.name);
    const QString target = QString::fromStdString(run->summary.target);
    auto* box = new QMessageBox(QMessageBox::Question, tr("Cancel run"),
                                tr("Cancel run \u201c%1\u201d (%2) on %3?").arg(name, runId, target),
                                QMessageBox::Yes | QMessageBox::No, this);
    box->setObjectName(QStringLiteral("cancelConfirmBox"));
    box->setInformativeText(tr("Every process of the run is stopped (SIGTERM, then SIGKILL after the grace period). "
                               "Its stored steps stay; it can be resumed from its last checkpoint."));
    box->setDefaultButton(QMessageBox::No);
    box->button(QMessageBox::Yes)->setText(tr("Cancel the run"));
    box->button(QMessageBox::No)->setText(tr("Keep it running"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, this, [this, box, runId] {
        if (box->clickedButton() != box->button(QMessageBox::Yes))
            return;
        showStatus(tr("Cancelling run %1…").arg(runId));
        m_session->cancelRun(runId);
    });
    box->open();
    return box;
}

void MainWindow::startSampleRun()
{
    m_sampleLauncher->start();
    m_busy->setVisible(m_sampleLauncher->isBusy());
}

void MainWindow::updateActions()
{
    const RunRow* run = m_runList->model()->runById(m_runList->selectedRunId());
    const bool live = run && core::isLive(run->summary.status);
    // A followed Megatron-Bridge job is not the workbench's to stop (the worker would refuse too).
    m_cancelRun->setEnabled(live && run->summary.kind == core::kRunKindMoeTrain);
}

void MainWindow::showStatus(const QString& message, bool isError)
{
    m_statusText->setStyleSheet(isError ? QStringLiteral("color: #d62728;") : QString());
    m_statusText->setText(message);
    m_statusText->setToolTip(message);
    if (isError)
        wb::log::get("ui")->warn("{}", message.toStdString());
}

void MainWindow::showError(const QString& title, const QString& message)
{
    wb::log::get("ui")->warn("{}: {}", title.toStdString(), message.toStdString());
    m_statusText->setStyleSheet(QStringLiteral("color: #d62728;"));
    m_statusText->setText(message.section(QLatin1Char('\n'), 0, 0));
    m_statusText->setToolTip(message);
    // Non-modal: a run failing to start must not block the event loop (or a test driving it).
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("errorMessageBox"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

}  // namespace wb::ui
