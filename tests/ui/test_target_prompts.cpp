// The GUI's targets beyond one SSH host, offscreen, with real pieces:
//   - the launch dialog offers slurm:NAME for registered hosts that have slurm.json settings;
//   - password prompts: against a real sshd that accepts only a PAM-checked password
//     (ssh_test_server.sh with WB_SSHD_PASSWORD; root only, else skipped), the targets the app's
//     resolver makes (makeGuiTarget with makeGuiSecretPromptOverActiveWindow) ask in a dialog for
//     EVERY node of ssh:A,B and for the login node of slurm:A, the dialog hides the text and
//     names user@host:port, and the typed answer gets each session in; Cancel refuses.
#include "remote/multi_ssh_target.h"
#include "remote/slurm_target.h"
#include "remote/ssh_hosts.h"
#include "ssh_test_fixture.h"
#include "ui/host_key_dialog.h"
#include "ui/launch_dialog.h"
#include "ui/launch_targets.h"
#include "ui_test_main.h"

#include <QComboBox>
#include <QInputDialog>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <atomic>
#include <fstream>

using wb::remote::SshHostEntry;
using wb::remote::SshHostRegistry;

namespace {

const QString kSecret = QStringLiteral("gui 'secret' $(x)");

// Answers every password dialog that comes up (from a timer, because the dialog runs its own
// event loop): records its label and echo mode, then types `answer` and accepts, or cancels.
class DialogAnswerer : public QObject {
public:
    DialogAnswerer(QString answer, bool accept) : m_answer(std::move(answer)), m_accept(accept)
    {
        m_timer.setInterval(50);
        connect(&m_timer, &QTimer::timeout, this, [this] { answerOpenDialogs(); });
        m_timer.start();
    }
    QStringList labels;
    bool allHidden = true;

private:
    void answerOpenDialogs()
    {
        for (QWidget* widget : QApplication::topLevelWidgets()) {
            auto* dialog = qobject_cast<QInputDialog*>(widget);
            if (!dialog || !dialog->isVisible() || m_seen.contains(dialog))
                continue;
            m_seen << dialog;
            labels << dialog->labelText();
            allHidden = allHidden && dialog->textEchoMode() == QLineEdit::Password;
            if (m_accept) {
                dialog->setTextValue(m_answer);
                dialog->accept();
            } else {
                dialog->reject();
            }
        }
    }
    QString m_answer;
    bool m_accept;
    QTimer m_timer;
    QList<QInputDialog*> m_seen;
};

// Runs `work` on a worker thread (targets block on the network; the GUI thread must not) while
// the GUI thread keeps its event loop going for the dialogs.
bool runOnWorker(const std::function<void()>& work, int timeoutMs)
{
    std::atomic<bool> done{false};
    QThread* thread = QThread::create([&] {
        work();
        done = true;
    });
    thread->start();
    const bool finished = QTest::qWaitFor([&] { return done.load(); }, timeoutMs);
    thread->wait();
    delete thread;
    return finished;
}

}  // namespace

class TestTargetPrompts : public QObject {
    Q_OBJECT

private slots:
    void launchDialogOffersSlurmTargets()
    {
        QTemporaryDir dir;
        const std::string hosts = dir.filePath(QStringLiteral("hosts.json")).toStdString();
        for (const char* name : {"gpu1", "login1"}) {
            SshHostEntry entry;
            entry.name = name;
            QVERIFY(SshHostRegistry(hosts).put(entry).ok());
        }
        // Settings for login1 (a Slurm login node), and for a name that is not registered.
        std::ofstream(wb::remote::slurmSettingsPath(hosts))
            << R"({"version": 1, "hosts": {"login1": {"partition": "gpu"}, "ghost": {}}})";
        wb::ui::LaunchDialog dialog({QString::fromStdString(hosts), nullptr});
        dialog.show();
        QStringList items;
        for (int i = 0; i < dialog.targetBox()->count(); ++i)
            items << dialog.targetBox()->itemText(i);
        QCOMPARE(items, (QStringList{QStringLiteral("local"), QStringLiteral("ssh:gpu1"), QStringLiteral("ssh:login1"),
                                     QStringLiteral("slurm:login1"), QStringLiteral("ssh:gpu1,login1")}));

        // A broken slurm.json: the hosts are still offered and the dialog says what is wrong.
        std::ofstream(wb::remote::slurmSettingsPath(hosts)) << "[1, 2]";
        QString error;
        const QStringList choices = wb::ui::launchTargetChoices(hosts, &error);
        QCOMPARE(choices, (QStringList{QStringLiteral("local"), QStringLiteral("ssh:gpu1"), QStringLiteral("ssh:login1")}));
        QVERIFY2(error.contains(QStringLiteral("slurm.json")), qPrintable(error));
    }

    void everyNodeAndTheLoginNodeAskInADialog()
    {
        qputenv("WB_SSHD_PASSWORD", kSecret.toUtf8());
        wbtest::SshServer server;
        const std::string why = server.start();
        qunsetenv("WB_SSHD_PASSWORD");
        if (why.find("exit 77") != std::string::npos)
            QSKIP("no password sshd here (needs root and PAM's pam_exec; see ssh_test_server.sh)");
        QVERIFY2(why.empty(), why.c_str());
        QVERIFY(wb::remote::SshSession::connect(server.spec(/*acceptNew=*/true)).error().code !=
                wb::core::ErrorCode::IoError);  // records the host key (auth is refused: no prompt)

        QTemporaryDir dir;
        const std::string hosts = dir.filePath(QStringLiteral("hosts.json")).toStdString();
        for (const char* name : {"node-a", "node-b"}) {
            SshHostEntry entry;
            entry.name = name;
            entry.host = "wbtest";
            entry.sshConfig = server.dir() + "/ssh_config";
            entry.knownHosts = server.dir() + "/known_hosts";
            entry.moeTrain = "/bin/true";
            QVERIFY(SshHostRegistry(hosts).put(entry).ok());
        }
        wb::ui::GuiTargetPaths paths{"moe-train", dir.filePath(QStringLiteral("runs")).toStdString(), hosts,
                                     wb::ui::makeGuiSecretPromptOverActiveWindow()};
        QWidget window;  // the "main window" the dialogs come up over
        window.show();
        window.activateWindow();
        const QString where = QStringLiteral("(root@127.0.0.1:%1) Password:").arg(server.port());

        // ssh:A,B: one dialog per node, each session gets in with the typed answer.
        {
            DialogAnswerer answerer(kSecret, true);
            std::string outA, outB, problem;
            QVERIFY(runOnWorker([&] {
                auto made = wb::ui::makeGuiTarget("ssh:node-a,node-b", paths, {});
                auto* multi = made ? dynamic_cast<wb::remote::MultiSshTarget*>(made->get()) : nullptr;
                if (!multi) {
                    problem = made ? "not a MultiSshTarget" : made.error().toString();
                    return;
                }
                auto a = multi->node(0).runCommand("echo node-a-in", std::chrono::seconds(30));
                auto b = multi->node(1).runCommand("echo node-b-in", std::chrono::seconds(30));
                outA = a ? a->out : a.error().toString();
                outB = b ? b->out : b.error().toString();
            }, 60000));
            QVERIFY2(problem.empty(), problem.c_str());
            QVERIFY2(outA == "node-a-in\n", (outA + "\n" + wbtest::readAll(server.dir() + "/sshd.log")).c_str());
            QVERIFY2(outB == "node-b-in\n", outB.c_str());
            QCOMPARE(answerer.labels.size(), 2);
            for (const QString& label : answerer.labels)
                QVERIFY2(label.contains(where), qPrintable(label));
            QVERIFY(answerer.allHidden);
        }

        // slurm:A: the login node's session asks the same way.
        {
            DialogAnswerer answerer(kSecret, true);
            std::string out;
            QVERIFY(runOnWorker([&] {
                auto made = wb::ui::makeGuiTarget("slurm:node-a", paths, {});
                auto* slurm = made ? dynamic_cast<wb::remote::SlurmTarget*>(made->get()) : nullptr;
                if (!slurm) {
                    out = made ? "not a SlurmTarget" : made.error().toString();
                    return;
                }
                auto r = slurm->login().runCommand("echo login-in", std::chrono::seconds(30));
                out = r ? r->out : r.error().toString();
            }, 60000));
            QVERIFY2(out == "login-in\n", out.c_str());
            QCOMPARE(answerer.labels.size(), 1);
            QVERIFY2(answerer.labels.front().contains(where), qPrintable(answerer.labels.front()));
        }

        // Cancel in the dialog: nothing is sent, and the connection is refused with the reason.
        {
            DialogAnswerer answerer(QString(), false);
            std::string error;
            QVERIFY(runOnWorker([&] {
                auto made = wb::ui::makeGuiTarget("slurm:node-b", paths, {});
                auto* slurm = made ? dynamic_cast<wb::remote::SlurmTarget*>(made->get()) : nullptr;
                auto r = slurm ? slurm->login().runCommand("echo in", std::chrono::seconds(30))
                               : wb::core::Result<wb::remote::CommandResult>(wb::core::makeError(
                                     wb::core::ErrorCode::Failed, "not a SlurmTarget"));
                error = r ? "connected without an answer" : r.error().toString();
            }, 60000));
            QVERIFY2(error.find("authentication refused") != std::string::npos, error.c_str());
            QVERIFY(!answerer.labels.isEmpty());
        }
        server.stop();
    }
};

WB_UI_TEST_MAIN(TestTargetPrompts)
#include "test_target_prompts.moc"
