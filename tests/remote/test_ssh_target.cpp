// SshTarget end to end against a real OpenSSH sshd on 127.0.0.1 (ssh_test_fixture.h) and the
// real moe-train: launch detached over SSH, follow it into a RunStore with RunFollower while the
// connection is cut twice (sshd session processes killed; then also the listener, restarted 1.5 s later, so reconnects
// are refused for a while and the backoff carries the follower over), and
// check that the store ends with exactly the steps of metrics.jsonl, each once. Cancel leaves no
// process (also for a trainer that ignores SIGTERM and has a grandchild). The "remote" runs root
// has a space and a quote in its name, so every remote command's quoting is exercised.
#include "core/run_config.h"
#include "core/run_follower.h"
#include "core/run_launch.h"
#include "core/run_store.h"
#include "remote/process_group.h"
#include "remote/ssh_target.h"
#include "ssh_test_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

using namespace wb;

namespace {

const std::string kMoeTrain = WB_MOE_TRAIN;
// Long enough (several seconds on a fast machine) for both cuts to land while the run is alive.
constexpr int kSteps = 1500;
const std::string kFakeTrainer = std::string(WB_SOURCE_DIR) + "/tests/remote/fake_moe_train.sh";

std::string tinyConfig(int steps, int vocab = 320)
{
    nlohmann::json config = {
        {"name", "ssh-tiny"},
        {"model",
         {{"vision",
           {{"num_layers", 1}, {"hidden_size", 32}, {"ffn_hidden_size", 64}, {"num_attention_heads", 2},
            {"patch_size", 16}, {"spatial_merge_size", 2}}},
          {"decoder",
           {{"num_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_query_groups", 1},
            {"kv_channels", 16}, {"num_moe_experts", 4}, {"moe_router_topk", 2},
            {"moe_ffn_hidden_size", 32}, {"vocab_size", vocab}}}}},
        {"train",
         {{"train_iters", steps}, {"micro_batch_size", 2}, {"global_batch_size", 2}, {"seq_length", 128},
          {"lr_warmup_iters", 1}}},
        {"data", {{"source", "mock"}, {"mock_image_size", 32}, {"caption_max_tokens", 32}}},
    };
    return config.dump(2);
}

std::vector<int64_t> fileSteps(const std::string& runDir)
{
    std::vector<int64_t> steps;
    std::istringstream lines(wbtest::readAll(runDir + "/metrics.jsonl"));
    std::string line;
    while (std::getline(lines, line)) {
        const auto json = nlohmann::json::parse(line, nullptr, false);
        if (json.is_object() && json.value("type", "") == "step")
            steps.push_back(json.at("step").get<int64_t>());
    }
    return steps;
}

bool waitFor(const std::function<bool()>& condition, int timeoutMs)
{
    QElapsedTimer timer;
    timer.start();
    while (!condition()) {
        if (timer.elapsed() > timeoutMs)
            return false;
        QTest::qWait(50);
    }
    return true;
}

}  // namespace

class TestSshTarget : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_server;
    QTemporaryDir m_scratch;
    std::unique_ptr<core::RunStore> m_store;

    std::string runsRoot() const { return m_scratch.filePath(QStringLiteral("remote runs/it's here")).toStdString(); }

    remote::SshTargetOptions options(const std::string& moeTrain = kMoeTrain)
    {
        remote::SshTargetOptions options;
        options.host = m_server.spec();
        options.moeTrainPath = moeTrain;
        options.runsRoot = runsRoot();
        options.reconnectBudget = std::chrono::seconds(30);
        return options;
    }

    core::RunConfig config(int steps, int vocab = 320)
    {
        auto parsed = core::parseRunConfig(tinyConfig(steps, vocab));
        if (!parsed.problems.empty())
            qFatal("bad test config: %s", parsed.problems.front().message.c_str());
        return parsed.config;
    }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");
        if (!std::filesystem::exists("/usr/sbin/sshd"))
            QSKIP("OpenSSH sshd is not installed (/usr/sbin/sshd missing): apt-get install openssh-server");
        QVERIFY2(::access(kMoeTrain.c_str(), X_OK) == 0, ("moe-train not built: " + kMoeTrain).c_str());
        const std::string why = m_server.start();
        QVERIFY2(why.empty(), why.c_str());
        // The user accepted the fingerprint once (what `hosts add --accept-new-host-key` does).
        QVERIFY(remote::SshSession::connect(m_server.spec(/*acceptNew=*/true)));
        auto store = core::RunStore::open(m_scratch.filePath(QStringLiteral("store.sqlite")).toStdString());
        QVERIFY(store);
        m_store = std::move(*store);
    }

    void cleanupTestCase()
    {
        m_store.reset();
        m_server.stop();
    }

    void launchStreamsEveryStepOnceAcrossDisconnects()
    {
        int reconnectNotices = 0;
        auto opts = options();
        int refusedAttempts = 0;  // connects that failed while sshd was down
        opts.onReconnecting = [&](int attempt, const std::string&) {
            ++reconnectNotices;
            if (attempt >= 1)
                ++refusedAttempts;
        };
        remote::SshTarget target(opts);
        auto started = core::startRun(*m_store, target, config(kSteps), "ssh-e2e");
        QVERIFY2(started, started ? "" : started.error().toString().c_str());
        const auto& launched = started->launched;
        QCOMPARE(launched.target, std::string("ssh:wbtest"));
        QCOMPARE(launched.runDir, runsRoot() + "/" + started->id);
        QCOMPARE(wbtest::readAll(launched.runDir + "/run.json"), *m_store->configJson(started->id));
        // Detached: its own session and process group, named by DIR/pid.
        QCOMPARE(std::stoll(wbtest::readAll(launched.runDir + "/pid")), launched.pid);
        QCOMPARE(static_cast<int64_t>(::getsid(static_cast<pid_t>(launched.pid))), launched.pid);
        QCOMPARE(static_cast<int64_t>(::getpgid(static_cast<pid_t>(launched.pid))), launched.pid);

        core::RunFollower follower(*m_store, target, started->id);
        int cuts = 0;
        int failedPolls = 0;
        int64_t stepsAtCut = 0;
        int64_t received = 0;
        std::vector<int64_t> reported;
        QElapsedTimer timer;
        timer.start();
        bool finished = false;
        std::thread restarter;
        std::string restartProblem;
        while (!finished && timer.elapsed() < 240000) {
            auto update = follower.poll();
            if (!update) {
                ++failedPolls;  // the follower's caller (watch, the GUI worker) just polls again
                QTest::qWait(200);
                continue;
            }
            for (const auto& step : update->newSteps)
                reported.push_back(step.step);
            received += static_cast<int64_t>(update->newSteps.size());
            finished = update->finished;
            if (cuts == 0 && received >= 1) {
                QVERIFY(update->status.processAlive);
                QVERIFY2(m_server.killSessions() > 0, "no sshd session process found to kill");
                cuts = 1;
                stepsAtCut = received;
            } else if (cuts == 1 && received > stepsAtCut && !finished) {
                // Harder: the listener goes away too for a second, so reconnects are refused
                // for a while and the backoff has to carry us over.
                QVERIFY2(m_server.killSessions() > 0, "no sshd session process found to kill");
                m_server.stop();
                restarter = std::thread([&] {
                    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
                    restartProblem = m_server.start();
                });
                cuts = 2;
            }
            QTest::qWait(100);
        }
        if (restarter.joinable())
            restarter.join();
        QVERIFY2(restartProblem.empty(), restartProblem.c_str());
        QVERIFY2(finished, "the run did not finish in time");
        QVERIFY2(cuts == 2, "the run ended before both connection cuts happened; make it longer");
        QVERIFY2(target.reconnectCount() >= 2, std::to_string(target.reconnectCount()).c_str());
        QVERIFY(reconnectNotices >= 2);
        QVERIFY2(refusedAttempts >= 1, "sshd was down, yet no reconnect attempt was refused");
        qInfo("reconnects %d, refused attempts %d, failed polls %d", target.reconnectCount(),
              refusedAttempts, failedPolls);

        const std::vector<int64_t> inFile = fileSteps(launched.runDir);
        QCOMPARE(inFile.size(), size_t(kSteps));
        auto stored = m_store->steps(started->id);
        QVERIFY(stored);
        std::vector<int64_t> inStore;
        for (const auto& step : *stored)
            inStore.push_back(step.step);
        QCOMPARE(inStore, inFile);
        QCOMPARE(reported, inFile);  // the follower handed every step over exactly once too
        auto summary = m_store->run(started->id);
        QVERIFY(summary);
        QCOMPARE(summary->status, core::RunState::Finished);
        QCOMPARE(summary->streamOffset, static_cast<int64_t>(std::filesystem::file_size(launched.runDir + "/metrics.jsonl")));
    }

    void hostRejectsConfigBeforeAnythingIsCreated()
    {
        remote::SshTarget target(options());
        std::filesystem::create_directories(runsRoot());  // when this test runs alone
        const auto before = std::distance(std::filesystem::directory_iterator(runsRoot()), {});
        // core accepts vocab 100; the runtime on the host does not (below its byte tokenizer).
        auto started = core::startRun(*m_store, target, config(5, 100), "rejected");
        QVERIFY(!started);
        QCOMPARE(started.error().code, core::ErrorCode::InvalidArgument);
        QVERIFY2(started.error().message.find("vocab") != std::string::npos, started.error().message.c_str());
        QCOMPARE(std::distance(std::filesystem::directory_iterator(runsRoot()), {}), before);
    }

    // One rank per GPU for a cuda config; this node has none, so the check says 1. A cpu config
    // needs no check; a cuda one reports the check as launch progress.
    void ranksFollowTheNodesGpus()
    {
        remote::SshTarget target(options());
        std::vector<std::string> progress;
        target.setProgressCallback([&](const core::LaunchProgress& p) { progress.push_back(p.phase + ": " + p.detail); });
        auto cpu = target.ranksFor(tinyConfig(3));
        QVERIFY(cpu && *cpu == 1);
        QVERIFY(progress.empty());
        auto cuda = target.ranksFor(R"({"name": "g", "runtime": {"device": "cuda"}})");
        QVERIFY2(cuda, cuda ? "" : cuda.error().toString().c_str());
        QCOMPARE(*cuda, 1);
        QCOMPARE(progress.size(), size_t{1});
        QVERIFY2(progress.front().find("check: no GPU found: 1 rank") == 0, progress.front().c_str());
        QVERIFY(target.ranksFor("not json") && *target.ranksFor("not json") == 1);  // --validate reports it
    }

    void missingRemoteTrainerAndBusyRunDir()
    {
        remote::SshTarget missing(options("/nonexistent/moe-train"));
        auto notFound = missing.launch({"run-missing", "x", tinyConfig(3)});
        QVERIFY(!notFound);
        QCOMPARE(notFound.error().code, core::ErrorCode::NotFound);
        QVERIFY(notFound.error().message.find("--remote-moe-train auto") != std::string::npos);  // the fix

        remote::SshTarget target(options());
        auto first = target.launch({"run-twice", "x", tinyConfig(3)});
        QVERIFY2(first, first ? "" : first.error().toString().c_str());
        auto second = target.launch({"run-twice", "x", tinyConfig(3)});
        QVERIFY(!second);
        QCOMPARE(second.error().code, core::ErrorCode::Busy);
        auto bad = target.launch({"../escape", "x", tinyConfig(3)});
        QVERIFY(!bad);
        QCOMPARE(bad.error().code, core::ErrorCode::InvalidArgument);
        QVERIFY(waitFor([&] { return !target.status(first->runDir)->processAlive; }, 30000));
        QCOMPARE(target.status(first->runDir)->state, core::RunState::Finished);
    }

    void cancelStopsTheRealTrainer()
    {
        remote::SshTarget target(options());
        auto run = target.launch({"run-cancel", "x", tinyConfig(1000000)});
        QVERIFY2(run, run ? "" : run.error().toString().c_str());
        QVERIFY(waitFor([&] { return std::filesystem::exists(run->runDir + "/metrics.jsonl"); }, 30000));
        auto alive = target.status(run->runDir);
        QVERIFY(alive && alive->processAlive);
        QCOMPARE(alive->state, core::RunState::Running);

        auto cancelled = target.cancel(run->runDir, std::chrono::seconds(20));
        QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
        QVERIFY(remote::liveGroupMembers(static_cast<pid_t>(run->pid)).empty());
        auto after = target.status(run->runDir);
        QVERIFY(after);
        QVERIFY(!after->processAlive);
        QCOMPARE(after->status, std::string("stopped"));  // moe-train's own answer to SIGTERM
        QCOMPARE(after->state, core::RunState::Cancelled);
        QVERIFY(target.cancel(run->runDir, std::chrono::seconds(1)));  // again: nothing to do
    }

    // A trainer that ignores SIGTERM and leaves a grandchild: cancel has to SIGKILL the group, and
    // verifies nothing of it is left.
    void cancelKillsAStubbornGroup()
    {
        const std::string wrapper = m_scratch.filePath(QStringLiteral("stubborn-train")).toStdString();
        std::ofstream(wrapper) << "#!/bin/sh\nFAKE_TRAIN_MODE=stubborn exec " << remote::shellQuote(kFakeTrainer)
                               << " \"$@\"\n";
        ::chmod(wrapper.c_str(), 0755);
        remote::SshTarget target(options(wrapper));
        auto run = target.launch({"run-stubborn", "x", "{\"name\": \"t\"}"});
        QVERIFY2(run, run ? "" : run.error().toString().c_str());
        QVERIFY(waitFor([&] { return remote::liveGroupMembers(static_cast<pid_t>(run->pid)).size() >= 2; }, 10000));

        QElapsedTimer timer;
        timer.start();
        auto cancelled = target.cancel(run->runDir, std::chrono::milliseconds(500));
        QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
        QVERIFY(timer.elapsed() >= 500);
        QVERIFY(remote::liveGroupMembers(static_cast<pid_t>(run->pid)).empty());
        QVERIFY(!target.status(run->runDir)->processAlive);
    }
};

QTEST_GUILESS_MAIN(TestSshTarget)
#include "test_ssh_target.moc"
