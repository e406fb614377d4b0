// The launch dialog, offscreen, with real pieces: the real RunStore, makeGuiTarget's "local"
// target running this build's moe-train on the bundled sample config (mock data, a few steps),
// then the main window following the launched run to its end.
#include "core/run_store.h"
#include "ui/launch_dialog.h"
#include "ui/main_window.h"
#include "ui/run_events.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui/run_session.h"
#include "ui_test_main.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using wb::ui::LaunchDialog;
using wb::ui::MainWindow;
using wb::ui::RunListModel;
using wb::ui::RunSession;

namespace {

QString moeTrain()
{
    return QStringLiteral(WB_RUNTIME_BIN_DIR "/moe-train");
}

/// The bundled sample config (mock data, so no image set is needed), cut to `steps` steps.
QString sampleConfigFile(const QTemporaryDir& dir, int steps)
{
    QFile in(QStringLiteral(WB_SOURCE_DIR "/resources/configs/sample-mock.json"));
    if (!in.open(QIODevice::ReadOnly))
        return {};
    auto json = nlohmann::json::parse(in.readAll().toStdString());
    json["train"]["train_iters"] = steps;
    json["train"]["lr_warmup_iters"] = 1;
    json["name"] = "launch-dialog-test";
    const QString path = dir.filePath(QStringLiteral("sample.json"));
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly))
        return {};
    out.write(QByteArray::fromStdString(json.dump(2)));
    return path;
}

wb::ui::MainWindowOptions options(const QTemporaryDir& dir)
{
    const wb::ui::GuiTargetPaths paths{moeTrain().toStdString(), dir.filePath(QStringLiteral("runs")).toStdString(),
                                       dir.filePath(QStringLiteral("hosts.json")).toStdString()};
    wb::ui::MainWindowOptions o;
    o.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    o.hostsPath = QString::fromStdString(paths.hostsPath);
    o.targetFactory = [paths] { return std::move(wb::ui::makeGuiTarget("local", paths, {})).value(); };
    o.targetResolver = [paths](const std::string& spec, wb::ui::ReconnectFn onReconnecting) {
        return wb::ui::makeGuiTarget(spec, paths, onReconnecting);
    };
    return o;
}

QString cell(const MainWindow& window, int row, int column)
{
    const auto* model = window.runListPanel()->model();
    return model->data(model->index(row, column), Qt::DisplayRole).toString();
}

}  // namespace

class TestLaunchDialog : public QObject {
    Q_OBJECT

private slots:
    void localLaunchCompletesTheStartRowAndTheRunIsFollowed()
    {
        if (!QFileInfo(moeTrain()).isExecutable())
            QSKIP("moe-train is not built here (WB_BUILD_RUNTIME=OFF)");
        QTemporaryDir dir;
        const QString config = sampleConfigFile(dir, 4);
        QVERIFY(!config.isEmpty());
        MainWindow window(options(dir));
        window.show();
        LaunchDialog* dialog = window.openLaunchDialog();
        QVERIFY(dialog->isVisible());
        QCOMPARE(dialog->targetBox()->currentText(), QStringLiteral("local"));
        for (int phase = 0; phase < LaunchDialog::kPhaseCount; ++phase)
            QCOMPARE(dialog->phaseText(phase), QStringLiteral("—"));

        QVERIFY(dialog->loadConfigFile(config));
        QCOMPARE(dialog->findChild<QLineEdit*>(QStringLiteral("runName"))->text(), QStringLiteral("launch-dialog-test"));
        QTest::mouseClick(dialog->launchButton(), Qt::LeftButton);
        QVERIFY(dialog->isLaunching());  // the click returned at once: the launch runs elsewhere
        QVERIFY(!dialog->launchButton()->isEnabled());

        QTRY_VERIFY_WITH_TIMEOUT(!dialog->isLaunching(), 120000);
        QVERIFY2(dialog->errorText().isEmpty(), qPrintable(dialog->errorText()));
        QProgressBar* start = dialog->phaseBar(3);
        QCOMPARE(start->value(), start->maximum());
        QVERIFY(start->maximum() > 0);
        QVERIFY2(dialog->phaseText(3).startsWith(QStringLiteral("started: run ")), qPrintable(dialog->phaseText(3)));
        // The local target has no check/upload/build phases: those rows stay "—".
        for (int phase = 0; phase < 3; ++phase)
            QCOMPARE(dialog->phaseText(phase), QStringLiteral("—"));

        // The main window follows it to the end like any run.
        QTRY_COMPARE_WITH_TIMEOUT(window.runListPanel()->model()->rowCount(), 1, 10000);
        QCOMPARE(cell(window, 0, RunListModel::Name), QStringLiteral("launch-dialog-test"));
        QCOMPARE(cell(window, 0, RunListModel::Target), QStringLiteral("local"));
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Status), QStringLiteral("finished"), 240000);
        QTRY_COMPARE_WITH_TIMEOUT(cell(window, 0, RunListModel::Steps), QStringLiteral("4 / 4"), 10000);
    }

    void errorsAreShownInFullAndNothingIsCreated_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("errorSays");
        QTest::newRow("unregistered host") << "ssh:nosuchhost" << "sample" << "nosuchhost";
        QTest::newRow("unknown form") << "moon:base" << "sample" << "unknown target";
        QTest::newRow("bad config") << "local" << "{\"train\": {\"train_iters\": -3}}" << "train_iters";
        QTest::newRow("not json") << "local" << "{ nope" << "invalid";
    }

    void errorsAreShownInFullAndNothingIsCreated()
    {
        QFETCH(QString, target);
        QFETCH(QString, config);
        QFETCH(QString, errorSays);
        QTemporaryDir dir;
        const auto o = options(dir);
        RunSession session(o.storePath, o.targetFactory, o.targetResolver);
        session.start();
        LaunchDialog dialog({o.hostsPath, &session});
        dialog.show();
        if (config == u"sample")
            QVERIFY(dialog.loadConfigFile(sampleConfigFile(dir, 2)));
        else
            dialog.setConfigJson(config);
        dialog.setTarget(target);
        QTest::mouseClick(dialog.launchButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!dialog.isLaunching(), 60000);
        QVERIFY2(dialog.errorText().contains(errorSays, Qt::CaseInsensitive), qPrintable(dialog.errorText()));
        QCOMPARE(dialog.phaseText(3), QStringLiteral("—"));
        auto store = wb::core::RunStore::open(o.storePath.toStdString());
        QVERIFY(store.ok());
        QVERIFY((*store)->listRuns()->empty());  // startRun validates before it records anything
    }

    // A Megatron-Bridge job folder (generate --format megatron-bridge) is taken as it is and goes
    // to a Slurm target only: the dialog says so before anything happens, and so does the worker
    // for a request that reaches it anyway. A folder that is not one names the fix.
    void bridgeFolderGoesToSlurmOnly()
    {
        QTemporaryDir dir;
        const auto o = options(dir);
        const QString folder = dir.filePath(QStringLiteral("bridge job"));
        QVERIFY(QDir().mkpath(folder));
        const auto write = [&](const char* name, const QByteArray& text) {
            QFile f(QDir(folder).filePath(QLatin1String(name)));
            return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
        };
        QVERIFY(write("bridge_job.json", R"({"version": 1, "script": "bridge.sbatch", "config": "overrides.yaml",
                                              "model": "qwen3-vl-30b-a3b", "hardware": "h200", "gpus": 8})"));
        QVERIFY(write("bridge.sbatch", "#!/bin/bash\n#SBATCH --nodes=1\necho hi\n"));
        QVERIFY(write("overrides.yaml", "model:\n  expert_model_parallel_size: 8\n"));
        QVERIFY(write("prediction.json", R"({"prediction_version":1,"source":"test","hardware":"h200","gpus":8,)"
                                         R"("step_ms":900.0,"tokens_per_s_per_gpu":4000,"tflops_per_gpu":300,)"
                                         R"("mfu":0.30,"memory_gib":70.0})"));
        RunSession session(o.storePath, o.targetFactory, o.targetResolver);
        session.start();
        LaunchDialog dialog({o.hostsPath, &session, QStringLiteral(WB_SOURCE_DIR "/resources/catalog"), {}});
        dialog.show();

        QVERIFY2(dialog.loadBridgeFolder(folder), qPrintable(dialog.errorText()));
        QCOMPARE(dialog.bridgeFolder(), folder);
        auto* config = dialog.findChild<QPlainTextEdit*>(QStringLiteral("configJson"));
        QVERIFY(config->isReadOnly());
        QCOMPARE(dialog.findChild<QLabel*>(QStringLiteral("configLabel"))->text(), QStringLiteral("Bridge job:"));
        QVERIFY2(config->toPlainText().contains(QStringLiteral("expert_model_parallel_size: 8")),
                 qPrintable(config->toPlainText()));
        auto* label = dialog.findChild<QLabel*>(QStringLiteral("predictionLabel"));
        QVERIFY(label->isVisibleTo(&dialog) && label->text().contains(QStringLiteral("900.0")));

        dialog.setTarget(QStringLiteral("local"));
        QVERIFY(!dialog.launch());
        QVERIFY2(dialog.errorText().contains(QStringLiteral("slurm:HOST")), qPrintable(dialog.errorText()));

        // The worker refuses it too (a request from anywhere else): nothing is stored.
        QSignalSpy finished(session.events(), &wb::ui::RunEvents::launchFinished);
        wb::ui::LaunchRequest request;
        request.target = QStringLiteral("local");
        request.bridgeDir = folder;
        const quint64 id = session.launch(request);
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 30000);
        QCOMPARE(finished.first().at(0).value<quint64>(), id);
        QVERIFY(finished.first().at(1).toString().isEmpty());
        QVERIFY2(finished.first().at(2).toString().contains(QStringLiteral("slurm:HOST")),
                 qPrintable(finished.first().at(2).toString()));

        // A config loaded afterwards is a moe-train launch again, editable.
        QVERIFY(dialog.loadConfigFile(sampleConfigFile(dir, 2)));
        QVERIFY(dialog.bridgeFolder().isEmpty());
        QVERIFY(!config->isReadOnly());
        QCOMPARE(dialog.findChild<QLabel*>(QStringLiteral("configLabel"))->text(), QStringLiteral("Config:"));

        // A folder generate --format slurm (or anything else) wrote: the error names the fix.
        const QString plain = dir.filePath(QStringLiteral("plain"));
        QVERIFY(QDir().mkpath(plain));
        QVERIFY(!dialog.loadBridgeFolder(plain));
        QVERIFY2(dialog.errorText().contains(QStringLiteral("generate --format megatron-bridge")),
                 qPrintable(dialog.errorText()));
        QVERIFY(dialog.bridgeFolder().isEmpty());

        auto store = wb::core::RunStore::open(o.storePath.toStdString());
        QVERIFY(store.ok());
        QVERIFY((*store)->listRuns()->empty());
    }

    void planningViewHandOverStoresThePrediction()
    {
        if (!QFileInfo(moeTrain()).isExecutable())
            QSKIP("moe-train is not built here (WB_BUILD_RUNTIME=OFF)");
        QTemporaryDir dir;
        const auto o = options(dir);
        RunSession session(o.storePath, o.targetFactory, o.targetResolver);
        session.start();
        LaunchDialog dialog({o.hostsPath, &session});
        QFile sample(sampleConfigFile(dir, 2));
        QVERIFY(sample.open(QIODevice::ReadOnly));
        dialog.setConfigJson(QString::fromUtf8(sample.readAll()),
                             QStringLiteral(R"({"prediction_version":1,"source":"test","hardware":"h200","gpus":8,)"
                                            R"("step_ms":812.5,"tokens_per_s_per_gpu":4100,"tflops_per_gpu":310,)"
                                            R"("mfu":0.31,"memory_gib":61.2})"));
        auto* label = dialog.findChild<QLabel*>(QStringLiteral("predictionLabel"));
        QVERIFY(label && label->isVisibleTo(&dialog));
        QVERIFY2(label->text().contains(QStringLiteral("812.5")), qPrintable(label->text()));
        QVERIFY(label->text().contains(QStringLiteral("31.0%")));
        QCOMPARE(dialog.findChild<QLineEdit*>(QStringLiteral("runName"))->text(), QStringLiteral("launch-dialog-test"));
        // Issue 18 item 6: a plan for 8 H200 launched on `local` says it does not fit this machine
        // (a machine with 8 or more NVIDIA GPUs is the one place where it would).
        if (!QFileInfo::exists(QStringLiteral("/dev/nvidia7"))) {
            QVERIFY(dialog.fitWarning()->isVisibleTo(&dialog));
            QVERIFY2(dialog.fitWarning()->text().contains(QStringLiteral("8 × h200")), qPrintable(dialog.fitWarning()->text()));
        }

        // Launched from the plan: the prediction is stored with the run (predicted vs measured).
        QVERIFY(dialog.launch());
        QTRY_VERIFY_WITH_TIMEOUT(!dialog.isLaunching(), 120000);
        QVERIFY2(dialog.errorText().isEmpty(), qPrintable(dialog.errorText()));
        auto store = wb::core::RunStore::open(o.storePath.toStdString());
        QVERIFY(store.ok());
        auto runs = (*store)->listRuns();
        QVERIFY(runs.ok() && runs->size() == 1);
        auto prediction = (*store)->prediction(runs->front().id);
        QVERIFY(prediction.ok() && prediction->has_value());
        QCOMPARE((*prediction)->stepMs, 812.5);
        QCOMPARE((*prediction)->gpus, 8);
    }
};

WB_UI_TEST_MAIN(TestLaunchDialog)
#include "test_launch_dialog.moc"
