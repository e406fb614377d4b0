// A run on an SSH host, seen from the main window, offscreen, with real pieces: a private OpenSSH
// sshd on 127.0.0.1 (tests/remote/ssh_test_server.sh), the host registered in hosts.json, the
// real moe-train started over SSH through the launch dialog, and the run list while sshd is
// stopped and every session killed: the run reads "reconnecting (attempt N)" in its own style —
// not failed — and so does the charts header of the selected SSH run (through the worker's real
// reconnect signal), while a local run beside it keeps streaming; both say "running" again once
// sshd is back; then both runs are cancelled from the window.
#include "remote/ssh_hosts.h"
#include "ssh_test_fixture.h"
#include "ui/launch_dialog.h"
#include "ui/main_window.h"
#include "ui/run_charts_panel.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui/run_status_style.h"
#include "ui_test_main.h"

#include <QAction>
#include <QComboBox>
#include <QFileInfo>
#include <QFont>
#include <QTemporaryDir>
#include <QMessageBox>
#include <QPushButton>
#include <QTest>

#include <nlohmann/json.hpp>

using wb::ui::MainWindow;
using wb::ui::RunListModel;

namespace {

QString moeTrain()
{
    return QStringLiteral(WB_RUNTIME_BIN_DIR "/moe-train");
}

QString longMockConfig()
{
    const nlohmann::json config = {
        {"name", "ssh-gui"},
        {"model",
         {{"vision",
           {{"num_layers", 1}, {"hidden_size", 32}, {"ffn_hidden_size", 64}, {"num_attention_heads", 2},
            {"patch_size", 16}, {"spatial_merge_size", 2}}},
          {"decoder",
           {{"num_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_query_groups", 1},
            {"kv_channels", 16}, {"num_moe_experts", 4}, {"moe_router_topk", 2},
            {"moe_ffn_hidden_size", 32}, {"vocab_size", 320}}}}},
        {"train",
         {{"train_iters", 1000000}, {"micro_batch_size", 2}, {"global_batch_size", 2}, {"seq_length", 128},
          {"lr_warmup_iters", 1}}},
        {"data", {{"source", "mock"}, {"mock_image_size", 32}, {"caption_max_tokens", 32}}},
    };
    return QString::fromStdString(config.dump(2));
}

/// The row of the (one) run on `target`; -1 when not listed.
int rowOf(const MainWindow& window, const QString& target)
{
    const auto* model = window.runListPanel()->model();
    for (int row = 0; row < model->rowCount(); ++row)
        if (QString::fromStdString(model->runAt(row)->summary.target) == target)
            return row;
    return -1;
}

QVariant cellData(const MainWindow& window, int column, int role, const QString& target = QStringLiteral("ssh:wbtest"))
{
    const auto* model = window.runListPanel()->model();
    return model->data(model->index(rowOf(window, target), column), role);
}

QString status(const MainWindow& window, const QString& target = QStringLiteral("ssh:wbtest"))
{
    return cellData(window, RunListModel::Status, Qt::DisplayRole, target).toString();
}

int64_t steps(const MainWindow& window, const QString& target)
{
    const int row = rowOf(window, target);
    return row < 0 ? -1 : window.runListPanel()->model()->runAt(row)->summary.steps;
}

void cancelRun(MainWindow& window, const QString& target)
{
    window.runListPanel()->selectRun(
        QString::fromStdString(window.runListPanel()->model()->runAt(rowOf(window, target))->summary.id));
    auto* cancel = window.findChild<QAction*>(QStringLiteral("cancelRunAction"));
    QTRY_VERIFY_WITH_TIMEOUT(cancel->isEnabled(), 10000);
    cancel->trigger();
    // Cancel asks first, naming the run's target.
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = window.findChild<QMessageBox*>(QStringLiteral("cancelConfirmBox"))) && box->isVisible(),
                             5000);
    QVERIFY2(box->text().contains(target), qPrintable(box->text()));
    box->button(QMessageBox::Yes)->click();
    QTRY_VERIFY_WITH_TIMEOUT(status(window, target).startsWith(QStringLiteral("cancelled")), 90000);
}

}  // namespace

class TestRemoteRunList : public QObject {
    Q_OBJECT

private slots:
    void reconnectingIsShownWhileSshdIsDown()
    {
        if (!QFileInfo(moeTrain()).isExecutable())
            QSKIP("moe-train is not built here (WB_BUILD_RUNTIME=OFF)");
        wbtest::SshServer server;
        if (const std::string why = server.start(); !why.empty()) {
            if (why.find("exit 77") != std::string::npos)
                QSKIP("sshd is not installed (apt-get install openssh-server)");
            QFAIL(why.c_str());
        }
        QTemporaryDir dir;
        const std::string hostsPath = dir.filePath(QStringLiteral("hosts.json")).toStdString();
        wb::remote::SshHostEntry entry;
        entry.name = "wbtest";
        entry.sshConfig = server.dir() + "/ssh_config";
        entry.knownHosts = server.dir() + "/known_hosts";
        entry.moeTrain = moeTrain().toStdString();
        entry.runsRoot = dir.filePath(QStringLiteral("remote runs")).toStdString();
        QVERIFY(wb::remote::SshHostRegistry(hostsPath).put(entry).ok());
        // The host key, accepted through the remote API (the hosts test covers the dialog).
        QVERIFY(wb::remote::SshSession::connect(server.spec(true)).ok());

        const wb::ui::GuiTargetPaths paths{moeTrain().toStdString(), dir.filePath(QStringLiteral("runs")).toStdString(),
                                           hostsPath};
        wb::ui::MainWindowOptions options;
        options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        options.hostsPath = QString::fromStdString(hostsPath);
        options.targetFactory = [paths] { return std::move(wb::ui::makeGuiTarget("local", paths, {})).value(); };
        options.targetResolver = [paths](const std::string& spec, wb::ui::ReconnectFn onReconnecting) {
            return wb::ui::makeGuiTarget(spec, paths, onReconnecting);
        };
        MainWindow window(std::move(options));
        window.show();

        auto* launch = window.openLaunchDialog(longMockConfig());
        QVERIFY(launch->targetBox()->findText(QStringLiteral("ssh:wbtest")) >= 0);
        launch->setTarget(QStringLiteral("ssh:wbtest"));
        QVERIFY(launch->launch());
        QTRY_VERIFY_WITH_TIMEOUT(!launch->isLaunching(), 60000);
        QVERIFY2(launch->errorText().isEmpty(), qPrintable(launch->errorText()));
        QTRY_COMPARE_WITH_TIMEOUT(window.runListPanel()->model()->rowCount(), 1, 10000);
        QCOMPARE(cellData(window, RunListModel::Target, Qt::DisplayRole).toString(), QStringLiteral("ssh:wbtest"));
        QTRY_COMPARE_WITH_TIMEOUT(status(window), QStringLiteral("running"), 30000);
        QTRY_VERIFY_WITH_TIMEOUT(steps(window, QStringLiteral("ssh:wbtest")) >= 2, 120000);
        // Issue 19 item 2: the worker that launched the run follows it over the same connection.
        // sshd has accepted two logins: the host-key check above and that worker's one session
        // (the launch used to open its own, and the follow path a second).
        {
            const std::string log = wbtest::readAll(server.dir() + "/sshd.log");
            int accepted = 0;
            for (size_t at = log.find("Accepted "); at != std::string::npos; at = log.find("Accepted ", at + 1))
                ++accepted;
            QVERIFY2(accepted == 2, log.c_str());
        }

        // A local run beside it: it must keep streaming while the SSH host is unreachable (each
        // remote session has its own worker thread).
        launch->setTarget(QStringLiteral("local"));
        QVERIFY(launch->launch());
        QTRY_VERIFY_WITH_TIMEOUT(!launch->isLaunching(), 60000);
        QVERIFY2(launch->errorText().isEmpty(), qPrintable(launch->errorText()));
        QTRY_VERIFY_WITH_TIMEOUT(steps(window, QStringLiteral("local")) >= 1, 120000);

        // The SSH run is the one shown in the charts.
        const QString sshRun =
            QString::fromStdString(window.runListPanel()->model()->runAt(rowOf(window, QStringLiteral("ssh:wbtest")))->summary.id);
        window.runListPanel()->selectRun(sshRun);
        auto* charts = window.chartsPanel();
        QTRY_COMPARE_WITH_TIMEOUT(charts->runId(), sshRun, 10000);
        QTRY_VERIFY2_WITH_TIMEOUT(charts->headerText().contains(QStringLiteral("● running")), qPrintable(charts->headerText()), 10000);

        // The connection goes away: no listener, and the live session killed.
        // The worker reconnects within milliseconds, so freeze the listener first (no new session
        // can start), kill the live sessions, then the listener itself.
        const pid_t listener = server.pid();
        QVERIFY(listener > 0);
        QCOMPARE(::kill(listener, SIGSTOP), 0);
        QVERIFY(server.killSessions() > 0);
        QCOMPARE(::kill(listener, SIGKILL), 0);
        QTRY_VERIFY(!QFileInfo::exists(QStringLiteral("/proc/%1").arg(listener)));
        QTRY_VERIFY2_WITH_TIMEOUT(status(window).startsWith(QStringLiteral("reconnecting (attempt ")),
                                  qPrintable(status(window)), 30000);
        const QColor reconnecting = cellData(window, RunListModel::Status, Qt::ForegroundRole).value<QColor>();
        QVERIFY(reconnecting != wb::ui::statusColor(QStringLiteral("failed")));
        QVERIFY(cellData(window, RunListModel::Status, Qt::FontRole).value<QFont>().italic());
        QVERIFY(cellData(window, RunListModel::Status, Qt::ToolTipRole).toString().contains(QStringLiteral("reconnecting")));
        QTRY_VERIFY2_WITH_TIMEOUT(charts->headerText().contains(QStringLiteral("● reconnecting (attempt ")),
                                  qPrintable(charts->headerText()), 10000);
        QVERIFY2(charts->headerText().contains(QStringLiteral("the run keeps going on the host")) &&
                     !charts->headerText().contains(QStringLiteral("● running")),
                 qPrintable(charts->headerText()));
        QTRY_VERIFY_WITH_TIMEOUT(status(window) != QStringLiteral("reconnecting (attempt 1)"), 15000);  // counts up
        QTRY_VERIFY2_WITH_TIMEOUT(!charts->headerText().contains(QStringLiteral("(attempt 1)")),
                                  qPrintable(charts->headerText()), 15000);  // the header counts with it
        const int64_t localBefore = steps(window, QStringLiteral("local"));
        QTRY_VERIFY_WITH_TIMEOUT(steps(window, QStringLiteral("local")) > localBefore + 2, 30000);
        QVERIFY2(status(window).startsWith(QStringLiteral("reconnecting")), qPrintable(status(window)));
        QCOMPARE(status(window, QStringLiteral("local")), QStringLiteral("running"));

        // sshd is back: the run is running again and keeps streaming.
        QVERIFY(server.start().empty());
        QTRY_COMPARE_WITH_TIMEOUT(status(window), QStringLiteral("running"), 60000);
        QTRY_VERIFY2_WITH_TIMEOUT(charts->headerText().contains(QStringLiteral("● running")) &&
                                      !charts->headerText().contains(QStringLiteral("reconnecting")),
                                  qPrintable(charts->headerText()), 10000);
        const int64_t before = steps(window, QStringLiteral("ssh:wbtest"));
        QTRY_VERIFY_WITH_TIMEOUT(steps(window, QStringLiteral("ssh:wbtest")) > before, 60000);

        // Cancel both from the main window: over SSH, and here.
        cancelRun(window, QStringLiteral("ssh:wbtest"));
        cancelRun(window, QStringLiteral("local"));
        server.stop();
    }
};

WB_UI_TEST_MAIN(TestRemoteRunList)
#include "test_remote_run_list.moc"
