// The GUI end to end, offscreen, with the real pieces: a temporary SQLite store, LocalTarget
// running the real moe-train from this build, and the sample image set built by the real
// moe-sample-set (through the GUI's own "build it if missing" path). The test clicks the toolbar's
// "Start sample run" and watches the charts and the run list fill in, as a user would.
#include "remote/local_target.h"
#include "core/run_config.h"
#include "core/run_launch.h"
#include "core/run_store.h"
#include "core/run_prediction.h"
#include "ui/main_window.h"
#include "ui/planning_view.h"
#include "ui/metric_chart_view.h"
#include "ui/run_charts_panel.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui/sample_run_launcher.h"
#include "ui_test_main.h"

#include <QAction>
#include <QCheckBox>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QGuiApplication>
#include <QInputDialog>
#include <QMenu>
#include <QPushButton>
#include <QFileInfo>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>
#include <QToolButton>

#include <cmath>
#include <memory>

using wb::ui::MainWindow;
using wb::ui::RunChartsPanel;
using wb::ui::RunListModel;

namespace {

constexpr int kSteps = 12;

QString runtimeBinDir()
{
    if (qEnvironmentVariableIsSet("WB_RUNTIME_BIN_DIR"))
        return qEnvironmentVariable("WB_RUNTIME_BIN_DIR");
    return QStringLiteral(WB_RUNTIME_BIN_DIR);  // from CMake; empty when the runtime is not built
}

QString cell(const MainWindow& window, int row, int column)
{
    const auto* model = window.runListPanel()->model();
    return model->data(model->index(row, column), Qt::DisplayRole).toString();
}

/// A window on a fresh temporary store, the real LocalTarget, and a sample set the GUI must build.
wb::ui::MainWindowOptions liveOptions(const QTemporaryDir& dir, const QString& binDir, int64_t steps)
{
    wb::ui::MainWindowOptions options;
    options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    options.targetFactory = [train = (binDir + QStringLiteral("/moe-train")).toStdString(),
                             root = dir.filePath(QStringLiteral("runs")).toStdString()] {
        return std::make_unique<wb::remote::LocalTarget>(train, root);
    };
    options.sampleRun.samplesDir = dir.filePath(QStringLiteral("samples"));  // missing: the GUI builds it
    options.sampleRun.sampleSetTool = binDir + QStringLiteral("/moe-sample-set");
    options.sampleRun.sampleCount = 16;
    options.sampleRun.trainIters = steps;
    return options;
}

void clickAction(MainWindow& window, QAction* action)
{
    // Click the real toolbar button, the way a user starts the run.
    auto* toolbar = window.findChild<QToolBar*>(QStringLiteral("runsToolBar"));
    QVERIFY(toolbar);
    auto* button = qobject_cast<QToolButton*>(toolbar->widgetForAction(action));
    QVERIFY(button);
    QVERIFY(button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);
}

/// The cancel confirmation once it is showing; null when none is (waits up to 5 s for one).
QMessageBox* confirmBox(MainWindow& window)
{
    QMessageBox* box = nullptr;
    for (int i = 0; i < 50 && !box; ++i) {
        box = window.findChild<QMessageBox*>(QStringLiteral("cancelConfirmBox"));
        if (box && !box->isVisible())
            box = nullptr;
        if (!box)
            QTest::qWait(100);
    }
    return box;
}

}  // namespace

class TestMainWindowLive : public QObject {
    Q_OBJECT

private slots:
    void planningViewLaunchOpensTheLaunchDialog()
    {
        // "Launch…" in the planning view hands the layout's config and prediction to the launch
        // dialog of the main window (the connection under test; the view's own emit is tested in
        // test_plan_view).
        QTemporaryDir dir;
        wb::ui::MainWindowOptions options;
        options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        options.targetFactory = [root = dir.filePath(QStringLiteral("runs")).toStdString()] {
            return std::make_unique<wb::remote::LocalTarget>("/nonexistent/moe-train", root);
        };
        MainWindow window(std::move(options));
        window.show();
        wb::ui::PlanningView* view = window.openPlanningView();
        QVERIFY(view);
        wb::core::RunConfig config;
        config.name = "from-the-plan";
        wb::core::RunPrediction prediction;
        prediction.source = "test";
        prediction.hardware = "h200";
        prediction.gpus = 8;
        prediction.stepMs = 1234.5;
        prediction.memoryGib = 77.0;
        emit view->launchRequested(QString::fromStdString(wb::core::runConfigToJson(config)),
                                   QString::fromStdString(wb::core::predictionToJson(prediction)));
        auto* dialog = window.findChild<QDialog*>(QStringLiteral("launchDialog"));
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        auto* label = dialog->findChild<QLabel*>(QStringLiteral("predictionLabel"));
        QVERIFY(label);
        QVERIFY2(label->text().contains(QStringLiteral("ms per step")), qPrintable(label->text()));
        auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("runName"));
        QVERIFY(name);
        QCOMPARE(name->text(), QStringLiteral("from-the-plan"));
        view->close();
    }

    void startSampleRunWithoutToolShowsError()
    {
        QTemporaryDir dir;
        wb::ui::MainWindowOptions options;
        options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        options.targetFactory = [root = dir.filePath(QStringLiteral("runs")).toStdString()] {
            return std::make_unique<wb::remote::LocalTarget>("/nonexistent/moe-train", root);
        };
        options.sampleRun.samplesDir = dir.filePath(QStringLiteral("samples"));
        options.sampleRun.sampleSetTool = dir.filePath(QStringLiteral("no-such-moe-sample-set"));
        MainWindow window(std::move(options));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        clickAction(window, window.startSampleRunAction());
        QMessageBox* box = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((box = window.findChild<QMessageBox*>(QStringLiteral("errorMessageBox"))), 5000);
        QVERIFY2(box->text().contains(QStringLiteral("moe-sample-set")), qPrintable(box->text()));
        auto* status = window.findChild<QLabel*>(QStringLiteral("statusText"));
        QVERIFY(status && !status->text().isEmpty());
        box->close();
        QCOMPARE(window.runListPanel()->model()->rowCount(), 0);  // nothing half-created
    }

    void mockSampleConfigNeedsNoImageSet()
    {
        // Issue 18 item 13: a mock-data sample config (--sample-config) built or asked for the
        // image set and said so in the status bar. It needs none: straight to launch, no manifest.
        QTemporaryDir dir;
        wb::ui::SampleRunOptions options;
        options.configResource = QStringLiteral(WB_SOURCE_DIR "/resources/configs/sample-mock.json");
        options.samplesDir = dir.filePath(QStringLiteral("samples"));  // missing
        options.sampleSetTool = dir.filePath(QStringLiteral("no-such-moe-sample-set"));
        wb::ui::SampleRunLauncher launcher(options);
        QVERIFY(launcher.configIsMock());
        QSignalSpy ready(&launcher, &wb::ui::SampleRunLauncher::readyToLaunch);
        QSignalSpy failed(&launcher, &wb::ui::SampleRunLauncher::failed);
        QSignalSpy progress(&launcher, &wb::ui::SampleRunLauncher::progress);
        launcher.start();
        QCOMPARE(failed.count(), 0);
        QCOMPARE(progress.count(), 0);  // nothing about an image set
        QCOMPARE(ready.count(), 1);
        auto parsed = wb::core::parseRunConfig(ready.first().at(1).toString().toStdString());
        QCOMPARE(parsed.config.data.source, std::string("mock"));
        QVERIFY(parsed.config.data.manifest != launcher.manifestPath().toStdString());  // the config's own, untouched
        QVERIFY(!QFileInfo::exists(options.samplesDir));
    }

    void sampleRunStreamsIntoChartsAndRunList()
    {
        const QString binDir = runtimeBinDir();
        if (binDir.isEmpty())
            QSKIP("WB_BUILD_RUNTIME is OFF: no moe-train to run. Configure with -DWB_BUILD_RUNTIME=ON "
                  "(or -DWB_UI_TEST_RUNTIME_DIR=<dir with moe-train and moe-sample-set>).");
        QVERIFY2(QFileInfo(binDir + QStringLiteral("/moe-train")).isExecutable(),
                 qPrintable(binDir + QStringLiteral("/moe-train is not built")));

        QTemporaryDir dir;
        auto options = liveOptions(dir, binDir, kSteps);
        MainWindow window(std::move(options));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        clickAction(window, window.startSampleRunAction());

        // The run appears in the list and gets selected; its steps stream into the charts.
        QTRY_VERIFY_WITH_TIMEOUT(window.runListPanel()->model()->rowCount() == 1, 120000);
        QCOMPARE(cell(window, 0, RunListModel::Name), QStringLiteral("sample-tiny"));
        QCOMPARE(cell(window, 0, RunListModel::Target), QStringLiteral("local"));
        QTRY_VERIFY_WITH_TIMEOUT(!window.runListPanel()->selectedRunId().isEmpty(), 10000);
        QCOMPARE(window.chartsPanel()->runId(), window.runListPanel()->selectedRunId());

        auto* charts = window.chartsPanel();
        QTRY_VERIFY_WITH_TIMEOUT(charts->drawnPoints(RunChartsPanel::Chart::Loss) >= 3, 180000);
        QVERIFY(charts->drawnPoints(RunChartsPanel::Chart::StepTime) >= 3);
        const QString statusWhileRunning = cell(window, 0, RunListModel::Status);
        QVERIFY2(statusWhileRunning == QStringLiteral("running") || statusWhileRunning == QStringLiteral("finished"),
                 qPrintable(statusWhileRunning));

        // It finishes; every step is drawn once, and the list says so.
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Status), QStringLiteral("finished"), 240000);
        QTRY_COMPARE_WITH_TIMEOUT(charts->drawnPoints(RunChartsPanel::Chart::Loss), kSteps, 5000);
        // (Charts are redrawn one per event-loop turn: another may still be a redraw behind.)
        QTRY_COMPARE(charts->drawnPoints(RunChartsPanel::Chart::Throughput), kSteps);
        QTRY_COMPARE(charts->drawnPoints(RunChartsPanel::Chart::Memory), kSteps);
        QTRY_VERIFY(charts->drawnPoints(RunChartsPanel::Chart::StepSplit) > 0);  // the CPU run has a split
        QVERIFY(charts->hasSplit());
        QVERIFY(!charts->hasMfu());  // no peak rate on a CPU: "MFU n/a", no flat 0 line
        QCOMPARE(cell(window, 0, RunListModel::Steps), QStringLiteral("%1 / %1").arg(kSteps));
        QVERIFY(cell(window, 0, RunListModel::LastLoss) != QStringLiteral("—"));
        const auto* loss = charts->chartView(RunChartsPanel::Chart::Loss)->series(0);
        for (const auto& p : loss->points())
            QVERIFY2(std::isfinite(p.y()) && p.y() > 0.0, qPrintable(QString::number(p.y())));

        // Re-selecting the run reloads its history from the store: same points, no duplicates.
        window.runListPanel()->view()->clearSelection();
        window.runListPanel()->view()->setCurrentIndex({});
        QTRY_VERIFY(charts->runId().isEmpty());
        QTest::mouseClick(window.runListPanel()->view()->viewport(), Qt::LeftButton, {},
                          window.runListPanel()->view()->visualRect(
                              window.runListPanel()->model()->index(0, RunListModel::Name)).center());
        QTRY_COMPARE_WITH_TIMEOUT(charts->drawnPoints(RunChartsPanel::Chart::Loss), kSteps, 5000);
    }

    void runListMenuRenamesDeletesAndExports()
    {
        // Issue 18 item 8: the run list's context menu, each action through its dialog to the store.
        QTemporaryDir dir;
        const std::string storePath = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        const QString runDir = dir.filePath(QStringLiteral("runs/"));
        std::string keepId, dropId;
        {
            auto store = wb::core::RunStore::open(storePath);
            QVERIFY(store.ok());
            keepId = *(*store)->createRun({"", "keep-me", "local", "", "{}", ""});
            dropId = *(*store)->createRun({"", "drop-me", "local", "", "{}", ""});
            QVERIFY(QDir().mkpath(runDir + QString::fromStdString(dropId)));
            QFile runJson(runDir + QString::fromStdString(dropId) + QStringLiteral("/run.json"));
            QVERIFY(runJson.open(QIODevice::WriteOnly));
            runJson.write("{}");
            runJson.close();
            QVERIFY((*store)->setRunDir(dropId, (runDir + QString::fromStdString(dropId)).toStdString()));
            QVERIFY((*store)->ingest(keepId, 0, "{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":2.5}\n"));
            QVERIFY((*store)->setStatus(keepId, wb::core::RunState::Finished, 0));
            QVERIFY((*store)->setStatus(dropId, wb::core::RunState::Failed, 1));
        }
        wb::ui::MainWindowOptions options;
        options.storePath = QString::fromStdString(storePath);
        options.targetFactory = [root = dir.filePath(QStringLiteral("runs")).toStdString()] {
            return std::make_unique<wb::remote::LocalTarget>("/nonexistent/moe-train", root);
        };
        MainWindow window(std::move(options));
        window.show();
        auto* model = window.runListPanel()->model();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 2, 10000);
        const QString keep = QString::fromStdString(keepId), drop = QString::fromStdString(dropId);

        // Rename.
        std::unique_ptr<QMenu> menu(window.runListPanel()->contextMenuFor(keep));
        QVERIFY(menu);
        menu->findChild<QAction*>(QStringLiteral("renameRunAction"))->trigger();
        auto* rename = window.findChild<QInputDialog*>(QStringLiteral("renameRunDialog"));
        QVERIFY(rename && rename->isVisible());
        QCOMPARE(rename->textValue(), QStringLiteral("keep-me"));
        rename->setTextValue(QStringLiteral("renamed"));
        rename->accept();
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, model->rowOf(keep), RunListModel::Name), QStringLiteral("renamed"), 10000);

        // Export its steps as CSV.
        menu.reset(window.runListPanel()->contextMenuFor(keep));
        menu->findChild<QAction*>(QStringLiteral("exportRunCsvAction"))->trigger();
        auto* exportDialog = window.findChild<QFileDialog*>(QStringLiteral("exportCsvDialog"));
        QVERIFY(exportDialog);
        const QString csv = dir.filePath(QStringLiteral("keep.csv"));
        exportDialog->selectFile(csv);
        QMetaObject::invokeMethod(exportDialog, "accept");  // the Save button (protected slot)
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(csv), 10000);
        QFile csvFile(csv);
        QVERIFY(csvFile.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = csvFile.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 2);  // header + the one step
        QVERIFY2(lines[1].startsWith("1,"), lines[1].constData());

        // Copy the id; a run without a directory cannot be opened.
        menu.reset(window.runListPanel()->contextMenuFor(keep));
        QVERIFY(!menu->findChild<QAction*>(QStringLiteral("openRunDirAction"))->isEnabled());
        menu->findChild<QAction*>(QStringLiteral("copyRunIdAction"))->trigger();
        QCOMPARE(QGuiApplication::clipboard()->text(), keep);

        // Delete with its run directory; "No" first leaves everything.
        menu.reset(window.runListPanel()->contextMenuFor(drop));
        QVERIFY(menu->findChild<QAction*>(QStringLiteral("openRunDirAction"))->isEnabled());
        menu->findChild<QAction*>(QStringLiteral("deleteRunAction"))->trigger();
        auto* box = window.findChild<QMessageBox*>(QStringLiteral("deleteRunBox"));
        QVERIFY(box && box->checkBox());
        box->button(QMessageBox::No)->click();
        QTest::qWait(300);
        QCOMPARE(model->rowCount(), 2);
        menu.reset(window.runListPanel()->contextMenuFor(drop));
        menu->findChild<QAction*>(QStringLiteral("deleteRunAction"))->trigger();
        QTRY_VERIFY_WITH_TIMEOUT((box = window.findChild<QMessageBox*>(QStringLiteral("deleteRunBox"))) && box->isVisible(), 5000);
        box->checkBox()->setChecked(true);
        box->button(QMessageBox::Yes)->click();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 1, 10000);
        QVERIFY(!QFileInfo::exists(runDir + drop));
        QCOMPARE(model->rowOf(keep), 0);
    }

    void runLaunchedOutsideTheWindowIsFollowed()
    {
        // Issue 18 item 1: a run the CLI launches while the window is open (its own store
        // connection and target, as `moe-workbench-cli launch` does) streams into the list and
        // ends there without a click; before, it stayed "running 0/N" until a restart.
        const QString binDir = runtimeBinDir();
        if (binDir.isEmpty())
            QSKIP("WB_BUILD_RUNTIME is OFF: no moe-train to run.");
        QTemporaryDir dir;
        MainWindow window(liveOptions(dir, binDir, kSteps));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QTest::qWait(500);  // the worker has listed the (empty) store: the run arrives later
        {
            auto store = wb::core::RunStore::open(dir.filePath(QStringLiteral("runs.sqlite")).toStdString());
            QVERIFY(store.ok());
            wb::remote::LocalTarget target((binDir + QStringLiteral("/moe-train")).toStdString(),
                                           dir.filePath(QStringLiteral("runs")).toStdString());
            const auto parsed = wb::core::parseRunConfig(R"({
              "name": "from-the-cli",
              "model": {"vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64, "num_attention_heads": 2,
                                   "patch_size": 16, "spatial_merge_size": 2},
                        "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_query_groups": 1,
                                    "kv_channels": 16, "num_moe_experts": 4, "moe_router_topk": 2,
                                    "moe_ffn_hidden_size": 32, "vocab_size": 320}},
              "train": {"train_iters": 12, "micro_batch_size": 2, "global_batch_size": 2, "seq_length": 128,
                        "lr_warmup_iters": 1},
              "data": {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}})");
            QVERIFY2(parsed.ok(), wb::core::formatProblems(parsed.problems).c_str());
            auto started = wb::core::startRun(**store, target, parsed.config, "from-the-cli");
            QVERIFY2(started.ok(), started.ok() ? "" : started.error().toString().c_str());
        }
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Name), QStringLiteral("from-the-cli"), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Status), QStringLiteral("finished"), 180000);
        QTRY_VERIFY_WITH_TIMEOUT(cell(window, 0, RunListModel::Steps).startsWith(QString::number(kSteps)), 10000);
        // Selected now, its charts hold every step the follower stored.
        window.runListPanel()->selectRun(cell(window, 0, RunListModel::Id));
        QTRY_COMPARE_WITH_TIMEOUT(window.chartsPanel()->drawnPoints(RunChartsPanel::Chart::Loss), kSteps, 10000);
    }

    void cancelStopsTheSelectedRun()
    {
        const QString binDir = runtimeBinDir();
        if (binDir.isEmpty())
            QSKIP("WB_BUILD_RUNTIME is OFF: no moe-train to run.");
        QTemporaryDir dir;
        MainWindow window(liveOptions(dir, binDir, 100000));  // far more steps than the test waits for
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QAction* cancel = window.findChild<QAction*>(QStringLiteral("cancelRunAction"));
        QVERIFY(cancel);
        QVERIFY(!cancel->isEnabled());  // nothing selected, nothing to cancel

        clickAction(window, window.startSampleRunAction());
        QTRY_VERIFY_WITH_TIMEOUT(window.chartsPanel()->drawnPoints(RunChartsPanel::Chart::Loss) >= 2, 180000);
        QTRY_VERIFY_WITH_TIMEOUT(cancel->isEnabled(), 5000);

        // Cancel asks first, naming the run and its target; "Keep it running" keeps it running.
        clickAction(window, cancel);
        QMessageBox* box = confirmBox(window);
        QVERIFY(box);
        QVERIFY2(box->text().contains(cell(window, 0, RunListModel::Id)) && box->text().contains(QStringLiteral("local")),
                 qPrintable(box->text()));
        QTest::mouseClick(box->button(QMessageBox::No), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!confirmBox(window), 5000);
        const int pointsBefore = window.chartsPanel()->drawnPoints(RunChartsPanel::Chart::Loss);
        QTRY_VERIFY_WITH_TIMEOUT(window.chartsPanel()->drawnPoints(RunChartsPanel::Chart::Loss) > pointsBefore, 120000);
        QCOMPARE(cell(window, 0, RunListModel::Status), QStringLiteral("running"));

        clickAction(window, cancel);
        box = confirmBox(window);
        QVERIFY(box);
        QTest::mouseClick(box->button(QMessageBox::Yes), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Status).section(QLatin1Char(' '), 0, 0),
                                  QStringLiteral("cancelled"), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(!cancel->isEnabled(), 5000);
        // Its steps stay: the charts keep what was trained before the cancel.
        QVERIFY(window.chartsPanel()->drawnPoints(RunChartsPanel::Chart::Loss) >= 2);
    }
};

WB_UI_TEST_MAIN(TestMainWindowLive)
#include "test_main_window_live.moc"
