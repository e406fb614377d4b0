// SlurmTarget end to end against a real Slurm (slurmctld + slurmd + munge on this machine, started
// by test_slurm.sh, which exports SLURM_CONF) reached through a real OpenSSH sshd on 127.0.0.1
// (ssh_test_fixture.h) as the login node, running the real moe-train. The first run is submitted
// and streamed into a RunStore until finished (every step once). The second runs until cancelled:
// seen running and streamed live across a dropped SSH connection; a third, queued behind it (the generated script asks for
// --exclusive), is seen pending and cancelled while pending; then the second is cancelled mid-run:
// no process is left and the state is cancelled. Also the GPU form of the generated script on
// stand-in GPUs, sbatch's refusal, and slurm.json. The runs root has a space and a quote in its
// name, so the quoting of every command is exercised.
#include "core/planner/generators.h"
#include "core/run_config.h"
#include "core/run_follower.h"
#include "core/run_launch.h"
#include "core/run_store.h"
#include "remote/slurm_target.h"
#include "ssh_test_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <dirent.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

using namespace wb;

namespace {

const std::string kMoeTrain = WB_MOE_TRAIN;
constexpr int kSteps = 300;

std::string tinyConfig(int steps, const std::string& name, int microBatch = 2)
{
    nlohmann::json config = {
        {"name", name},
        {"model",
         {{"vision",
           {{"num_layers", 1}, {"hidden_size", 32}, {"ffn_hidden_size", 64}, {"num_attention_heads", 2},
            {"patch_size", 16}, {"spatial_merge_size", 2}}},
          {"decoder",
           {{"num_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_query_groups", 1},
            {"kv_channels", 16}, {"num_moe_experts", 4}, {"moe_router_topk", 2},
            {"moe_ffn_hidden_size", 32}, {"vocab_size", 320}}}}},
        {"train",
         {{"train_iters", steps}, {"micro_batch_size", microBatch}, {"global_batch_size", 2}, {"seq_length", 128},
          {"lr_warmup_iters", 1}}},
        {"data", {{"source", "mock"}, {"mock_image_size", 32}, {"caption_max_tokens", 32}}},
    };
    return config.dump(2);
}

core::RunConfig config(int steps, const std::string& name, int microBatch = 2)
{
    auto parsed = core::parseRunConfig(tinyConfig(steps, name, microBatch));
    if (!parsed.problems.empty())
        qFatal("bad test config: %s", parsed.problems.front().message.c_str());
    return parsed.config;
}

std::vector<int64_t> fileSteps(const std::string& runDir)
{
    std::vector<int64_t> steps;
    std::istringstream lines(wbtest::readAll(runDir + "/metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) {
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

// Slurm's node name here (slurm_test_cluster.sh uses `hostname -s`): pid.<node>.<local rank>.
std::string shortHostName()
{
    return QSysInfo::machineHostName().section(QLatin1Char('.'), 0, 0).toStdString();
}

// squeue's answer for a job on the test cluster ("" once it left the queue).
std::string squeueState(const std::string& job)
{
    QProcess p;
    p.start(QStringLiteral("squeue"), {QStringLiteral("-h"), QStringLiteral("-j"), QString::fromStdString(job),
                                       QStringLiteral("-o"), QStringLiteral("%T")});
    p.waitForFinished(30000);
    return QString::fromUtf8(p.readAllStandardOutput()).trimmed().toStdString();
}

}  // namespace

class TestSlurmTarget : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_server;
    QTemporaryDir m_scratch;
    std::unique_ptr<wbtest::FaultRules> m_faults;
    std::unique_ptr<wbtest::SshServer> m_faultServer;  // with fault_shell.sh as ForceCommand
    int m_faultRows = 0;
    std::unique_ptr<core::RunStore> m_store;

    std::string runsRoot() const { return m_scratch.filePath(QStringLiteral("shared runs/it's here")).toStdString(); }

    remote::SlurmTargetOptions options()
    {
        remote::SlurmTargetOptions options;
        options.name = "wbtest";
        options.ssh.host = m_server.spec();
        options.ssh.moeTrainPath = kMoeTrain;
        options.ssh.runsRoot = runsRoot();
        options.slurm.slurmConf = qEnvironmentVariable("SLURM_CONF").toStdString();
        return options;
    }

    // The login node behind the fault sshd (fault_shell.sh as ForceCommand), with `action` on the
    // submit command of run `id` and a 6 s command timeout; the server starts on first use.
    core::Result<remote::SlurmTargetOptions> faultOptions(const std::string& id, const std::string& action)
    {
        if (!m_faultServer) {
            m_faults = std::make_unique<wbtest::FaultRules>(m_scratch.filePath(QStringLiteral("faults")).toStdString());
            m_faultServer = std::make_unique<wbtest::SshServer>();
            if (const std::string why = m_faultServer->start("host_key", m_faults->sshdConfig()); !why.empty())
                return core::makeError(core::ErrorCode::Failed, why);
            if (auto connected = remote::SshSession::connect(m_faultServer->spec(/*acceptNew=*/true)); !connected)
                return connected.error();
        }
        m_faults->add(id, action, "sbatch --parsable --comment");
        auto opts = options();
        opts.ssh.host = m_faultServer->spec();
        opts.ssh.commandTimeout = std::chrono::seconds(6);
        return opts;
    }

    // Polls status until Slurm no longer has the job (120 s at most); nullopt when it never left.
    static std::optional<core::RunStatus> waitForJobEnd(remote::SlurmTarget& target, const std::string& runDir)
    {
        core::RunStatus status;
        const bool ended = waitFor([&] {
            auto s = target.status(runDir);
            status = s ? *s : core::RunStatus{};
            return s && !s->processAlive;
        }, 120000);
        return ended ? std::optional(status) : std::nullopt;
    }

    // How many jobs Slurm knows with this launch token's comment (ended ones stay for MinJobAge).
    static int jobsWithToken(const std::string& token)
    {
        QProcess jobs;
        jobs.start(QStringLiteral("scontrol"), {QStringLiteral("-o"), QStringLiteral("show"), QStringLiteral("job")});
        jobs.waitForFinished(30000);
        const std::string all = jobs.readAllStandardOutput().toStdString();
        int withToken = 0;
        for (size_t at = all.find("Comment=wb-launch:" + token); at != std::string::npos;
             at = all.find("Comment=wb-launch:" + token, at + 1))
            ++withToken;
        return withToken;
    }

    // Submits `script` by hand the way launch does (the run directory made, the script written
    // there, `sbatch` run in it after `beforeSbatch`) and waits up to 90 s for the job to end;
    // returns "" or what went wrong, and the job's last status in `status`.
    std::string submitByHandAndWait(remote::SlurmTarget& target, const std::string& runDir, const std::string& script,
                                    const std::string& beforeSbatch, core::RunStatus& status)
    {
        const auto q = [](const std::string& s) { return remote::shellQuote(s); };
        auto submitted = target.login().runCommand(
            "sh -c " + q("SLURM_CONF=" + q(qEnvironmentVariable("SLURM_CONF").toStdString()) + "; export SLURM_CONF\n" +
                         "mkdir -p " + q(runDir + "/.submitted") + " && cd " + q(runDir) + " && printf '%s' " + q(script) +
                         " > run.sbatch && " + beforeSbatch + " sbatch --parsable run.sbatch > slurm_job_id"),
            std::chrono::seconds(60));
        if (!submitted)
            return submitted.error().toString();
        if (submitted->exitStatus != 0)
            return submitted->err;
        const bool ended = waitFor([&] {
            auto s = target.status(runDir);
            status = s ? *s : core::RunStatus{};
            return s && !s->processAlive;
        }, 90000);
        return ended ? std::string() : "the job did not end in 90 s";
    }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");
        if (qEnvironmentVariableIsEmpty("SLURM_CONF"))
            QSKIP("no test Slurm: run through tests/remote/test_slurm.sh, which starts one and sets SLURM_CONF");
        QVERIFY2(::access(kMoeTrain.c_str(), X_OK) == 0, ("moe-train not built: " + kMoeTrain).c_str());
        const std::string why = m_server.start();
        QVERIFY2(why.empty(), why.c_str());
        QVERIFY(remote::SshSession::connect(m_server.spec(/*acceptNew=*/true)));
        auto store = core::RunStore::open(m_scratch.filePath(QStringLiteral("store.sqlite")).toStdString());
        QVERIFY(store);
        m_store = std::move(*store);
    }

    // After each test function, also a failed one: nothing it submitted stays queued (the next
    // one would wait behind it: the node is exclusive).
    void cleanup()
    {
        if (qEnvironmentVariableIsEmpty("SLURM_CONF"))
            return;
        QProcess::execute(QStringLiteral("scancel"), {QStringLiteral("--user=") + QString::fromLocal8Bit(::getpwuid(::getuid())->pw_name)});
        waitFor([] {
            QProcess p;
            p.start(QStringLiteral("squeue"), {QStringLiteral("-h"), QStringLiteral("-o"), QStringLiteral("%i")});
            p.waitForFinished(30000);
            return p.readAllStandardOutput().trimmed().isEmpty();
        }, 60000);
    }

    void cleanupTestCase()
    {
        m_store.reset();
        m_server.stop();
        if (m_faultServer)
            m_faultServer->stop();
    }

    void submitFollowAndCancel()
    {
        remote::SlurmTarget target(options());
        std::vector<std::string> phases;
        target.setProgressCallback([&](const core::LaunchProgress& p) { phases.push_back(p.phase + ":" + p.detail); });
        auto first = core::startRun(*m_store, target, config(kSteps, "slurm-first"), "slurm-first");
        QVERIFY2(first, first ? "" : first.error().toString().c_str());

        // What launch left on the "shared filesystem".
        const auto& a = first->launched;
        QCOMPARE(a.pid, int64_t(0));
        QCOMPARE(a.runDir, runsRoot() + "/" + first->id);
        auto jobA = target.jobId(a.runDir);
        QVERIFY2(jobA, jobA ? "" : jobA.error().toString().c_str());
        QCOMPARE(a.target, "slurm:wbtest job " + *jobA);
        QCOMPARE(m_store->run(first->id)->target, std::string("slurm:wbtest"));
        QCOMPARE(wbtest::readAll(a.runDir + "/run.json"), *m_store->configJson(first->id) + "\n");
        const std::string sbatch = wbtest::readAll(a.runDir + "/run.sbatch");
        QVERIFY(sbatch.find("#SBATCH --exclusive") != std::string::npos);
        QVERIFY2(sbatch.find("--gpus-per-node") == std::string::npos, "a CPU job must not ask for GPUs");
        QVERIFY(std::find(phases.begin(), phases.end(), "start:submitted as Slurm job " + *jobA) != phases.end());

        // Follow it into the store until finished. How many polls land while it is pending or
        // running depends on the machine's load, so those are only counted; the deterministic
        // pending/running checks come with the second and third jobs.
        core::RunFollower follower(*m_store, target, first->id);
        std::vector<int64_t> reported;
        int runningPolls = 0, pendingPolls = 0;
        bool finished = false;
        QElapsedTimer timer;
        timer.start();
        while (!finished && timer.elapsed() < 90000) {
            auto update = follower.poll();
            QVERIFY2(update, update ? "" : update.error().toString().c_str());
            runningPolls += update->status.processAlive && update->status.state == core::RunState::Running;
            pendingPolls += update->status.processAlive && update->status.state == core::RunState::Pending;
            for (const auto& step : update->newSteps)
                reported.push_back(step.step);
            finished = update->finished;
            QTest::qWait(50);
        }
        QVERIFY2(finished, "the first job did not finish in 90 s");
        qInfo("first job: %d poll(s) saw it pending, %d running", pendingPolls, runningPolls);
        const std::vector<int64_t> inFile = fileSteps(a.runDir);
        QCOMPARE(inFile.size(), size_t(kSteps));
        auto stored = m_store->steps(first->id);
        QVERIFY(stored);
        std::vector<int64_t> inStore;
        for (const auto& step : *stored)
            inStore.push_back(step.step);
        QCOMPARE(inStore, inFile);
        QCOMPARE(reported, inFile);
        auto summaryA = m_store->run(first->id);
        QCOMPARE(summaryA->status, core::RunState::Finished);
        QCOMPARE(summaryA->exitCode, 0);
        QCOMPARE(squeueState(*jobA), std::string());
        QVERIFY(std::filesystem::exists(a.runDir + "/slurm-" + *jobA + ".out"));

        // A second, endless run: running (deterministic: it runs until cancelled), streamed live.
        auto second = core::startRun(*m_store, target, config(1000000, "slurm-second"), "slurm-second");
        QVERIFY2(second, second ? "" : second.error().toString().c_str());
        const auto& b = second->launched;
        auto jobB = target.jobId(b.runDir);
        QVERIFY(jobB);
        QVERIFY(*jobA != *jobB);
        core::RunFollower followB(*m_store, target, second->id);
        size_t streamedWhileRunning = 0;
        QVERIFY2(waitFor([&] {
                     auto u = followB.poll();
                     if (u && u->status.processAlive && u->status.state == core::RunState::Running)
                         streamedWhileRunning += u->newSteps.size();
                     return streamedWhileRunning >= 3;
                 }, 60000),
                 "the second job did not start streaming in 60 s");
        // The login node's connection drops (sshd's session processes killed): the next calls
        // reconnect, and the stream goes on from the stored offset.
        QVERIFY2(m_server.killSessions() > 0, "no sshd session process found to kill");
        const size_t beforeCut = streamedWhileRunning;
        QVERIFY2(waitFor([&] {
                     auto u = followB.poll();
                     if (u)
                         streamedWhileRunning += u->newSteps.size();
                     return streamedWhileRunning >= beforeCut + 3;
                 }, 60000),
                 "the stream did not resume after the connection was cut");
        QVERIFY(target.login().reconnectCount() >= 1);
        auto runningB = target.status(b.runDir);  // runs until cancelled: deterministic
        QVERIFY(runningB);
        QCOMPARE(runningB->state, core::RunState::Running);
        QVERIFY(runningB->processAlive);

        // A third queues behind it (the node is exclusive) and is cancelled while pending: Slurm's
        // CANCELLED (no status.json was ever written) makes it a cancelled run.
        auto third = target.launch({"slurm-third", "third", tinyConfig(5, "slurm-third")});
        QVERIFY2(third, third ? "" : third.error().toString().c_str());
        auto pending = target.status(third->runDir);
        QVERIFY(pending);
        QCOMPARE(pending->state, core::RunState::Pending);
        QVERIFY(pending->processAlive);  // so a follower keeps waiting
        QVERIFY2(pending->message.find("PENDING") != std::string::npos, pending->message.c_str());
        auto cancelledPending = target.cancel(third->runDir, std::chrono::seconds(5));
        QVERIFY2(cancelledPending, cancelledPending ? "" : cancelledPending.error().toString().c_str());
        auto afterPending = target.status(third->runDir);
        QVERIFY(afterPending);
        QCOMPARE(afterPending->state, core::RunState::Cancelled);
        QVERIFY(!afterPending->processAlive);
        QVERIFY2(afterPending->message.find("cancelled") != std::string::npos, afterPending->message.c_str());
        QVERIFY(!std::filesystem::exists(third->runDir + "/metrics.jsonl"));

        // Cancel the running second job: moe-train gets SIGTERM, checkpoints and exits "stopped".
        QVERIFY(!wbtest::processesOfRun(b.runDir).empty());
        const std::string pidFile = b.runDir + "/pid." + shortHostName() + ".0";
        QVERIFY2(std::filesystem::exists(pidFile), pidFile.c_str());
        QVERIFY(m_store->setStatus(second->id, core::RunState::Cancelled, -1));  // as `cancel` does, before the signal
        auto cancelled = target.cancel(b.runDir, std::chrono::seconds(20));
        QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
        QCOMPARE(squeueState(*jobB), std::string());
        const auto left = wbtest::processesOfRun(b.runDir);
        QVERIFY2(left.empty(), left.empty() ? "" : left.front().c_str());
        auto afterB = target.status(b.runDir);
        QVERIFY(afterB);
        QVERIFY(!afterB->processAlive);
        QCOMPARE(afterB->state, core::RunState::Cancelled);
        QCOMPARE(afterB->status, std::string("stopped"));  // moe-train's own answer to SIGTERM
        QVERIFY(waitFor([&] { auto u = followB.poll(); return u && u->finished; }, 30000));
        QCOMPARE(m_store->run(second->id)->status, core::RunState::Cancelled);
        auto storedB = m_store->steps(second->id);
        std::vector<int64_t> inStoreB;
        for (const auto& step : *storedB)
            inStoreB.push_back(step.step);
        QCOMPARE(inStoreB, fileSteps(b.runDir));  // streamed live, then the rest: each step once
        QVERIFY(target.cancel(b.runDir, std::chrono::seconds(1)));  // again: nothing to do
        qInfo("first job %s: %d steps; second job %s: %zu steps (%zu while running), then cancelled", jobA->c_str(),
              kSteps, jobB->c_str(), inStoreB.size(), streamedWhileRunning);
    }

    // The GPU form of the generated script (--gpus-per-node=2, moe-train --nproc-per-node 2) on
    // one node: the test cluster has two stand-in GPUs, and a cpu config trains with 2 Gloo ranks.
    // SlurmTarget asks for GPUs only for cuda configs, so this job is submitted by hand the way
    // launch does; status and metrics then come through the target.
    void generatedGpuFormRunsOnOneNode()
    {
        remote::SlurmTarget target(options());
        core::planner::GeneratorTarget generator;
        generator.nodes = 1;
        generator.gpusPerNode = 2;
        generator.moeTrain = kMoeTrain;
        const std::string script = core::planner::slurmScript(config(20, "slurm-gpu-form", 1), generator);
        QVERIFY(script.find("#SBATCH --gpus-per-node=2") != std::string::npos);
        const std::string runDir = runsRoot() + "/slurm-gpu-form";
        core::RunStatus status;
        const std::string failed = submitByHandAndWait(
            target, runDir, script, "RUN_ID=slurm-gpu-form RUNS_ROOT=" + remote::shellQuote(runsRoot()), status);
        QVERIFY2(failed.empty(), ("the GPU-form job: " + failed).c_str());
        QVERIFY2(status.state == core::RunState::Finished,
                 (status.message + "\n" + wbtest::readAll(runDir + "/stdout.log")).c_str());
        auto chunk = target.readMetrics(runDir, 0, 1 << 20);
        QVERIFY(chunk);
        QVERIFY(chunk->bytes.find("\"world_size\":2") != std::string::npos);
        QCOMPARE(fileSteps(runDir).size(), size_t(20));
        // Both ranks were srun tasks: their lines in stdout.log carry the rank, and each left its pid.
        const std::string log = wbtest::readAll(runDir + "/stdout.log");
        QVERIFY2(log.find("\n1: ") != std::string::npos || log.rfind("1: ", 0) == 0, log.c_str());
        QVERIFY(std::filesystem::exists(runDir + "/pid." + shortHostName() + ".1"));
    }

    // Two CPU ranks (Gloo) per node through SlurmTarget::launch: the code path of N nodes x G GPUs
    // (one srun task per rank, RANK/WORLD_SIZE from SLURM_PROCID/SLURM_NTASKS, MASTER_ADDR the
    // first node's name) on the one node here. It streams into the store from global rank 0, every
    // step once, and a cancel mid-run leaves no rank.
    void twoRanksStreamAndCancel()
    {
        auto opts = options();
        opts.slurm.cpuRanksPerNode = 2;
        opts.slurm.masterPort = wbtest::freePort();
        remote::SlurmTarget target(opts);
        QVERIFY(target.validateConfig(tinyConfig(10, "slurm-two-ranks", 1)));
        // micro batch 2 on each of 2 ranks is more than the global batch of 2: refused for the world size.
        auto tooMany = target.validateConfig(tinyConfig(10, "slurm-two-ranks", 2));
        QVERIFY2(!tooMany, "micro batch 2 x 2 ranks does not divide global batch 2");
        auto run = core::startRun(*m_store, target, config(1000000, "slurm-two-ranks", 1), "slurm-two-ranks");
        QVERIFY2(run, run ? "" : run.error().toString().c_str());
        const std::string runDir = run->launched.runDir;
        const std::string sbatch = wbtest::readAll(runDir + "/run.sbatch");
        QVERIFY(sbatch.find("#SBATCH --ntasks-per-node=2\n") != std::string::npos);
        QVERIFY(sbatch.find("--gpus-per-node") == std::string::npos);
        core::RunFollower follower(*m_store, target, run->id);
        std::vector<int64_t> reported;
        QVERIFY2(waitFor([&] {
                     auto u = follower.poll();
                     if (u)
                         for (const auto& step : u->newSteps)
                             reported.push_back(step.step);
                     return reported.size() >= 5;
                 }, 90000),
                 ("the two-rank job did not stream 5 steps in 90 s: " + wbtest::readAll(runDir + "/stdout.log")).c_str());
        auto meta = m_store->meta(run->id);
        QVERIFY(meta);
        QCOMPARE(meta->worldSize, 2);
        for (const char* local : {".0", ".1"})
            QVERIFY2(std::filesystem::exists(runDir + "/pid." + shortHostName() + local), local);
        QCOMPARE(wbtest::processesOfRun(runDir).size(), size_t(2));  // the two ranks, nothing else
        QVERIFY(m_store->setStatus(run->id, core::RunState::Cancelled, -1));
        auto cancelled = target.cancel(runDir, std::chrono::seconds(20));
        QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
        const auto left = wbtest::processesOfRun(runDir);
        QVERIFY2(left.empty(), left.empty() ? "" : left.front().c_str());
        QVERIFY(waitFor([&] {
            auto u = follower.poll();
            if (u)
                for (const auto& step : u->newSteps)
                    reported.push_back(step.step);
            return u && u->finished;
        }, 30000));
        auto status = target.status(runDir);
        QVERIFY(status);
        QCOMPARE(status->state, core::RunState::Cancelled);
        auto stored = m_store->steps(run->id);
        QVERIFY(stored);
        std::vector<int64_t> inStore;
        for (const auto& step : *stored)
            inStore.push_back(step.step);
        QCOMPARE(inStore, fileSteps(runDir));
        QCOMPARE(reported, inStore);
        qInfo("two ranks: %zu steps streamed, each once; cancel left nothing", inStore.size());
    }

    // A cluster whose sbatch exports nothing (SBATCH_EXPORT=NONE, so neither RUN_ID/RUNS_ROOT nor
    // PATH reach the job from the submitting shell): the script as SlurmTarget generates it (run
    // directory defaults written in, srun --export=ALL) still runs both ranks into its directory.
    void exportNoneStillFindsTheRunDirectory()
    {
        remote::SlurmTarget target(options());
        core::planner::GeneratorTarget generator;
        generator.nodes = 1;
        generator.gpusPerNode = 0;
        generator.cpuRanksPerNode = 2;
        generator.moeTrain = kMoeTrain;
        generator.masterPort = wbtest::freePort();
        generator.runsRoot = runsRoot();
        generator.runId = "slurm-export-none";
        const std::string script = core::planner::slurmScript(config(5, "slurm-export-none", 1), generator);
        const std::string runDir = runsRoot() + "/slurm-export-none";
        core::RunStatus status;
        const std::string failed =
            submitByHandAndWait(target, runDir, script, "unset RUN_ID RUNS_ROOT && SBATCH_EXPORT=NONE", status);
        QVERIFY2(failed.empty(), failed.c_str());
        QVERIFY2(status.state == core::RunState::Finished,
                 (status.message + "\n" + wbtest::readAll(runDir + "/stdout.log")).c_str());
        QCOMPARE(fileSteps(runDir).size(), size_t(5));
        QVERIFY(wbtest::readAll(runDir + "/metrics.jsonl").find("\"world_size\":2") != std::string::npos);
    }

    // A job that fails before moe-train writes status.json: Slurm's state and exit code explain it.
    void failedJobIsExplainedBySlurm()
    {
        const std::string broken = m_scratch.filePath(QStringLiteral("broken-train")).toStdString();
        std::ofstream(broken) << "#!/bin/sh\necho 'cannot load libtorch' >&2\nexit 3\n";
        ::chmod(broken.c_str(), 0755);
        auto opts = options();
        opts.ssh.moeTrainPath = broken;
        remote::SlurmTarget target(opts);
        auto launched = target.launch({"slurm-broken", "x", tinyConfig(3, "broken")});
        QVERIFY2(launched, launched ? "" : launched.error().toString().c_str());
        core::RunStatus status;
        QVERIFY(waitFor([&] {
            auto s = target.status(launched->runDir);
            status = s ? *s : core::RunStatus{};
            return s && !s->processAlive;
        }, 60000));
        QCOMPARE(status.state, core::RunState::Failed);
        QCOMPARE(status.status, std::string("failed"));
        QCOMPARE(status.exitCode, 3);
        auto job = target.jobId(launched->runDir);
        QVERIFY(job);
        QVERIFY2(status.message.find("ended FAILED") != std::string::npos &&
                     status.message.find("slurm-" + *job + ".out") != std::string::npos,
                 status.message.c_str());
        QVERIFY(wbtest::readAll(launched->runDir + "/stdout.log").find("cannot load libtorch") != std::string::npos);
    }

    // sbatch's own refusal comes back with its words and where the script is; nothing is left queued.
    void sbatchRefusalIsReported()
    {
        auto opts = options();
        opts.slurm.partition = "nosuchpartition";
        remote::SlurmTarget target(opts);
        auto launched = target.launch({"slurm-refused", "x", tinyConfig(3, "refused")});
        QVERIFY(!launched);
        QCOMPARE(launched.error().code, core::ErrorCode::Failed);
        QVERIFY2(launched.error().message.find("sbatch refused") != std::string::npos &&
                     launched.error().message.find("artition") != std::string::npos,
                 launched.error().message.c_str());
        QVERIFY(std::filesystem::exists(runsRoot() + "/slurm-refused/run.sbatch"));
        auto status = target.status(runsRoot() + "/slurm-refused");
        QVERIFY(status);
        QCOMPARE(status->state, core::RunState::Failed);
    }

    // The submit's answer is lost after sbatch ran (the channel held open past the command
    // timeout, or the connection killed), or sbatch itself is slower than the command timeout
    // (a slow slurmctld): the retry finds its own submission by the launch token and waits for
    // it. Exactly one job, one run directory, and the run finishes (fault_shell.sh on a second
    // sshd as ForceCommand).
    void lostSubmitAnswerSubmitsOneJob_data()
    {
        QTest::addColumn<QString>("action");
        // Each delay is the 6 s command timeout plus a margin a loaded machine still keeps.
        QTest::newRow("answer delayed after sbatch") << "delay 12";
        QTest::newRow("connection killed after sbatch") << "drop";
        QTest::newRow("sbatch slower than the command timeout") << "slow 10";
    }

    void lostSubmitAnswerSubmitsOneJob()
    {
        QFETCH(QString, action);
        const std::string id = "slurm-retry-" + std::to_string(++m_faultRows);
        auto opts = faultOptions(id, action.toStdString());
        QVERIFY2(opts, opts ? "" : opts.error().toString().c_str());
        remote::SlurmTarget target(*opts);
        const std::string token = core::newLaunchToken();
        auto launched = target.launch({id, "x", tinyConfig(20, "retry"), token});
        QVERIFY2(launched, launched ? "" : launched.error().toString().c_str());
        // The first attempt really ran. A slowed sbatch finishes after its answer was given up on:
        // that attempt records the job id, then dies of SIGPIPE (rc 141) printing it to the closed
        // channel, which is why the id goes to slurm_job_id before anything is printed.
        QVERIFY2(waitFor([&] {
            const std::string fired = m_faults->fired();
            return fired.find(id + " rc=0") != std::string::npos || fired.find(id + " rc=141") != std::string::npos;
        }, 30000),
                 m_faults->fired().c_str());

        // One job carries this launch's token (Slurm keeps ended jobs for MinJobAge).
        QCOMPARE(jobsWithToken(token), 1);
        auto job = target.jobId(launched->runDir);
        QVERIFY(job);
        QCOMPARE(launched->target, "slurm:wbtest job " + *job);
        QCOMPARE(wbtest::readAll(launched->runDir + "/.launch"), token + "\n");

        const auto status = waitForJobEnd(target, launched->runDir);
        QVERIFY2(status, "the job did not end in 120 s");
        QCOMPARE(core::runStateName(status->state), "finished");
        QCOMPARE(fileSteps(launched->runDir).size(), size_t(20));
    }

    // A Bridge job's submit whose answer is lost (the connection killed after sbatch ran), then
    // the whole launchBridge call repeated with the same token, as a retrying caller would:
    // one job, and it ends finished from Slurm's own state (a Bridge job writes no status.json).
    void bridgeSubmitIsIdempotent()
    {
        const std::string id = "bridge-retry";
        auto opts = faultOptions(id, "drop");
        QVERIFY2(opts, opts ? "" : opts.error().toString().c_str());
        remote::SlurmTarget target(*opts);
        core::BridgeJobRequest job;
        job.runId = id;
        job.name = "x";
        job.files = {{"bridge.sbatch", "#!/bin/bash\n#SBATCH --ntasks=1\necho \"python=$BRIDGE_PYTHON\"\n"},
                     {"overrides.dotlist", "train.train_iters=1\n"}};
        job.launchToken = core::newLaunchToken();
        auto first = target.launchBridge(job);
        QVERIFY2(first, first ? "" : first.error().toString().c_str());
        auto again = target.launchBridge(job);
        QVERIFY2(again, again ? "" : again.error().toString().c_str());
        QCOMPARE(again->target, first->target);
        QCOMPARE(jobsWithToken(job.launchToken), 1);
        QCOMPARE(wbtest::readAll(first->runDir + "/overrides.dotlist"), std::string("train.train_iters=1\n"));

        const auto status = waitForJobEnd(target, first->runDir);
        QVERIFY2(status, "the job did not end in 120 s");
        QCOMPARE(core::runStateName(status->state), "finished");
        QVERIFY2(wbtest::readAll(first->runDir + "/" + core::kBridgeJobLog).find("python=python") != std::string::npos,
                 "the job's output goes to stdout.log, with BRIDGE_PYTHON from slurm.json");
    }

    // The node check runs the configured python on the login node: one without megatron.bridge
    // stops the launch naming the import and the setting that fixes it.
    void bridgeNodeCheck()
    {
        auto opts = options();
        opts.slurm.bridgePython = "python3";
        remote::SlurmTarget missing(opts);
        auto refused = missing.prepareBridgeLaunch("bridge-check");
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, core::ErrorCode::NotFound);
        QVERIFY2(refused.error().message.find("import megatron.bridge") != std::string::npos &&
                     refused.error().message.find("--bridge-python") != std::string::npos,
                 refused.error().message.c_str());
        opts.slurm.bridgePython = "no-such-python-here";
        remote::SlurmTarget absent(opts);
        auto notThere = absent.prepareBridgeLaunch("bridge-check");
        QVERIFY(!notThere);
        QVERIFY2(notThere.error().message.find("not on the login node's PATH") != std::string::npos,
                 notThere.error().message.c_str());
        QVERIFY(!std::filesystem::exists(runsRoot() + "/bridge-check"));
    }

    void settingsFile()
    {
        const std::string path = m_scratch.filePath(QStringLiteral("slurm.json")).toStdString();
        QVERIFY(remote::loadSlurmSettings(path, "x"));  // missing file: defaults
        std::ofstream(path) << R"({"version": 1, "hosts": {"a": {"partition": "gpu", "account": "proj",
            "time": "04:00:00", "nodes": 2, "gpus_per_node": 4, "slurm_conf": "/etc/slurm/x.conf"},
            "typo": {"partiton": "gpu"}, "bad": {"partition": "gpu\n#SBATCH --uid=0"}, "zero": {"nodes": 0}}})";
        auto a = remote::loadSlurmSettings(path, "a");
        QVERIFY(a);
        QCOMPARE(a->partition, std::string("gpu"));
        QCOMPARE(a->nodes, 2);
        QCOMPARE(a->gpusPerNode, 4);
        QCOMPARE(a->timeLimit, std::string("04:00:00"));
        QCOMPARE(a->slurmConf, std::string("/etc/slurm/x.conf"));
        QVERIFY(remote::loadSlurmSettings(path, "other"));
        for (const char* name : {"typo", "bad", "zero"}) {
            auto r = remote::loadSlurmSettings(path, name);
            QVERIFY2(!r, name);
            QCOMPARE(r.error().code, core::ErrorCode::InvalidArgument);
        }
        std::ofstream(path) << "[1, 2]";
        QCOMPARE(remote::loadSlurmSettings(path, "a").error().code, core::ErrorCode::Corrupt);
    }
};

QTEST_GUILESS_MAIN(TestSlurmTarget)
#include "test_slurm_target.moc"
