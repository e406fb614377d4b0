// A launch over SSH whose state-changing steps lose their answer: the command really runs on the
// host, then the answer never arrives (the channel stays open past the command timeout) or the
// connection is killed before the exit status is sent (tests/remote/fault_shell.sh as the private
// sshd's ForceCommand). The retry must recognise its own earlier effect by the launch token:
// exactly one run directory, one trainer process, one metrics stream, and the run finishes.
// A directory of another launch (another token, or an older workbench's run without one) is
// still refused. Real sshd, real moe-train; labels e2e.
#include "core/run_config.h"
#include "core/run_target.h"
#include "remote/ssh_target.h"
#include "ssh_test_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include <nlohmann/json.hpp>

using namespace wb;
namespace fs = std::filesystem;

namespace {

const std::string kMoeTrain = WB_MOE_TRAIN;

// Long enough (a few seconds) that a second trainer started by a retry would be seen alive
// beside the first.
std::string tinyConfig(int steps)
{
    nlohmann::json config = {
        {"name", "retry-tiny"},
        {"model",
         {{"vision",
           {{"num_layers", 1}, {"hidden_size", 32}, {"ffn_hidden_size", 64}, {"num_attention_heads", 2},
            {"patch_size", 16}, {"spatial_merge_size", 2}}},
          {"decoder",
           {{"num_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_query_groups", 1},
            {"kv_channels", 16}, {"num_moe_experts", 4}, {"moe_router_topk", 2},
            {"moe_ffn_hidden_size", 32}, {"vocab_size", 320}}}}},
        {"train",
         {{"train_iters", steps}, {"micro_batch_size", 2}, {"global_batch_size", 2}, {"seq_length", 128},
          {"lr_warmup_iters", 1}}},
        {"data", {{"source", "mock"}, {"mock_image_size", 32}, {"caption_max_tokens", 32}}},
    };
    return core::runConfigToJson(core::parseRunConfig(config.dump()).config);
}

int countLines(const std::string& text, const std::string& needle)
{
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        ++n;
    return n;
}

}  // namespace

class TestRemoteRetries : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_server;
    QTemporaryDir m_scratch;
    std::unique_ptr<wbtest::FaultRules> m_faults;
    int m_rows = 0;

    std::string runsRoot(const std::string& name) const { return m_scratch.filePath(QString::fromStdString("runs/" + name)).toStdString(); }

    remote::SshTargetOptions options(const std::string& root)
    {
        remote::SshTargetOptions options;
        options.host = m_server.spec();
        options.moeTrainPath = kMoeTrain;
        options.runsRoot = root;
        options.reconnectBudget = std::chrono::seconds(30);
        // Short, so a delayed answer is a timeout in seconds; generous enough for a loaded machine
        // to answer every command that is not delayed on purpose.
        options.commandTimeout = std::chrono::seconds(8);
        return options;
    }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");
        if (!fs::exists("/usr/sbin/sshd"))
            QSKIP("OpenSSH sshd is not installed (/usr/sbin/sshd missing): apt-get install openssh-server");
        if (!fs::exists("/usr/lib/openssh/sftp-server"))
            QSKIP("OpenSSH's sftp-server is missing (apt-get install openssh-sftp-server)");
        QVERIFY2(::access(kMoeTrain.c_str(), X_OK) == 0, ("moe-train not built: " + kMoeTrain).c_str());
        m_faults = std::make_unique<wbtest::FaultRules>(m_scratch.filePath(QStringLiteral("faults")).toStdString());
        const std::string why = m_server.start("host_key", m_faults->sshdConfig());
        QVERIFY2(why.empty(), why.c_str());
        QVERIFY(remote::SshSession::connect(m_server.spec(/*acceptNew=*/true)));
    }

    void cleanupTestCase() { m_server.stop(); }

    void lostAnswerIsRetriedOnce_data()
    {
        QTest::addColumn<QString>("action");
        QTest::addColumn<QString>("pattern");
        // The claim of the run directory (only its script writes .launch.tmp) and the detached
        // start (only its script makes .started).
        QTest::newRow("claim, answer delayed") << "delay 20" << "/.launch.tmp";
        QTest::newRow("claim, connection killed") << "drop" << "/.launch.tmp";
        QTest::newRow("start, answer delayed") << "delay 20" << "mkdir .started";
        QTest::newRow("start, connection killed") << "drop" << "mkdir .started";
    }

    void lostAnswerIsRetriedOnce()
    {
        QFETCH(QString, action);
        QFETCH(QString, pattern);
        const std::string name = "retry-" + std::to_string(++m_rows);
        const std::string root = runsRoot(name);
        m_faults->add(name, action.toStdString(), pattern.toStdString());

        remote::SshTarget target(options(root));
        const std::string token = core::newLaunchToken();
        auto launched = target.launch({name, "retry", tinyConfig(300), token});
        QVERIFY2(launched, launched ? "" : launched.error().toString().c_str());
        // The fault really happened: the command ran on the host and its answer was lost.
        QVERIFY2(m_faults->fired().find(name + " rc=0") != std::string::npos, m_faults->fired().c_str());
        QVERIFY2(target.reconnectCount() >= 1, "the target never reconnected: the answer was not lost");

        // Exactly one directory, owned by this launch, and one trainer in it.
        std::vector<std::string> dirs;
        for (const auto& entry : fs::directory_iterator(root))
            dirs.push_back(entry.path().filename().string());
        QCOMPARE(dirs, std::vector<std::string>{name});
        QCOMPARE(wbtest::readAll(launched->runDir + "/.launch"), token + "\n");
        const auto alive = wbtest::processesOfRun(launched->runDir);
        QVERIFY2(alive.size() <= 1, ("more than one trainer runs in the directory:\n" + [&] {
                                         std::string s;
                                         for (const auto& p : alive)
                                             s += p + "\n";
                                         return s;
                                     }()).c_str());

        // The run reaches finished, with one metrics stream (one meta line, every step once).
        core::RunStatus status;
        QElapsedTimer timer;
        timer.start();
        while (timer.elapsed() < 240000) {
            auto s = target.status(launched->runDir);
            QVERIFY2(s, s ? "" : s.error().toString().c_str());
            status = *s;
            if (!status.processAlive && status.state != core::RunState::Pending)
                break;
            QTest::qWait(200);
        }
        QCOMPARE(core::runStateName(status.state), "finished");
        const std::string metrics = wbtest::readAll(launched->runDir + "/metrics.jsonl");
        QCOMPARE(countLines(metrics, "\"type\":\"meta\""), 1);
        QCOMPARE(countLines(metrics, "\"type\":\"step\""), 300);
    }

    // Another launch's directory, with the same run id, is refused and left as it was.
    void foreignDirectoryIsStillRefused_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("content");
        QTest::newRow("another launch's token") << ".launch" << "0123456789abcdef0123456789abcdef\n";
        QTest::newRow("an older workbench's run (no token)") << "run.json" << "{}\n";
    }

    void foreignDirectoryIsStillRefused()
    {
        QFETCH(QString, file);
        QFETCH(QString, content);
        const std::string root = runsRoot("foreign-" + std::to_string(++m_rows));
        const std::string dir = root + "/taken";
        fs::create_directories(dir);
        std::ofstream(dir + "/" + file.toStdString()) << content.toStdString();

        remote::SshTarget target(options(root));
        auto launched = target.launch({"taken", "retry", tinyConfig(5), core::newLaunchToken()});
        QVERIFY(!launched);
        QCOMPARE(launched.error().code, core::ErrorCode::Busy);
        QVERIFY2(launched.error().message.find("another run uses this id") != std::string::npos,
                 launched.error().message.c_str());
        QCOMPARE(wbtest::readAll(dir + "/" + file.toStdString()), content.toStdString());
        QVERIFY(!fs::exists(dir + "/pid"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteRetries)
#include "test_remote_retries.moc"
