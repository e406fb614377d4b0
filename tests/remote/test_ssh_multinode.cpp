// Multi-node over plain SSH: two "nodes" that are the same loopback sshd under two host entries
// (different runs roots), built through makeTarget("ssh:node-a,node-b") as the CLI and the GUI do.
// World size 2 on the CPU over Gloo (one rank per CPU-only node): the losses stream into the store
// from node 0, status is the worst of the nodes, and cancel leaves no process on either node.
#include "ssh_test_fixture.h"

#include "core/run_follower.h"
#include "core/run_launch.h"
#include "core/run_store.h"
#include "remote/multi_ssh_target.h"
#include "remote/ssh_hosts.h"
#include "remote/target_factory.h"

#include <filesystem>

#include <nlohmann/json.hpp>

using namespace wb;
namespace fs = std::filesystem;

namespace {

const std::string kMoeTrain = WB_MOE_TRAIN;

core::RunConfig tinyConfig(int steps, int globalBatch = 4)
{
    // Global batch 4 = micro batch 2 x 2 ranks.
    nlohmann::json config = {
        {"name", "two-nodes"},
        {"model",
         {{"vision",
           {{"num_layers", 1}, {"hidden_size", 32}, {"ffn_hidden_size", 64}, {"num_attention_heads", 2},
            {"patch_size", 16}, {"spatial_merge_size", 2}}},
          {"decoder",
           {{"num_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_query_groups", 1},
            {"kv_channels", 16}, {"num_moe_experts", 4}, {"moe_router_topk", 2},
            {"moe_ffn_hidden_size", 32}, {"vocab_size", 320}}}}},
        {"train",
         {{"train_iters", steps}, {"micro_batch_size", 2}, {"global_batch_size", globalBatch}, {"seq_length", 128},
          {"lr_warmup_iters", 1}}},
        {"data", {{"source", "mock"}, {"mock_image_size", 32}, {"caption_max_tokens", 32}}},
    };
    auto parsed = core::parseRunConfig(config.dump());
    if (!parsed.problems.empty())
        qFatal("bad test config: %s", parsed.problems.front().message.c_str());
    return parsed.config;
}

// Live (non-zombie) processes whose process group is `pgid`.
std::vector<pid_t> groupMembers(pid_t pgid)
{
    std::vector<pid_t> members;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const pid_t pid = static_cast<pid_t>(std::atol(entry.path().filename().c_str()));
        if (pid <= 0)
            continue;
        const std::string stat = wbtest::readAll("/proc/" + std::to_string(pid) + "/stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos)
            continue;
        std::istringstream rest(stat.substr(close + 1));
        char state = 0;
        long ppid = 0, group = 0;
        if (rest >> state >> ppid >> group && group == pgid && state != 'Z')
            members.push_back(pid);
    }
    return members;
}

}  // namespace

class TestSshMultiNode : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_server;
    QTemporaryDir m_scratch;
    std::unique_ptr<core::RunStore> m_store;

    std::string scratch(const char* name) const { return m_scratch.filePath(QString::fromUtf8(name)).toStdString(); }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");
        if (!fs::exists("/usr/sbin/sshd"))
            QSKIP("OpenSSH sshd is not installed (/usr/sbin/sshd missing): apt-get install openssh-server");
        QVERIFY2(::access(kMoeTrain.c_str(), X_OK) == 0, ("moe-train not built: " + kMoeTrain).c_str());
        const std::string why = m_server.start();
        QVERIFY2(why.empty(), why.c_str());
        QVERIFY(remote::SshSession::connect(m_server.spec(/*acceptNew=*/true)));
        auto store = core::RunStore::open(scratch("store.sqlite"));
        QVERIFY(store);
        m_store = std::move(*store);

        remote::SshHostRegistry registry(scratch("hosts.json"));
        for (const char* name : {"node-a", "node-b"}) {
            remote::SshHostEntry entry;
            entry.name = name;
            entry.host = "wbtest";
            entry.sshConfig = m_server.dir() + "/ssh_config";
            entry.knownHosts = m_server.dir() + "/known_hosts";
            entry.moeTrain = kMoeTrain;
            entry.runsRoot = scratch(name) + "/runs";
            if (std::string(name) == "node-a")
                entry.masterPort = wbtest::freePort();
            QVERIFY(registry.put(entry));
        }
    }

    void targetStrings()
    {
        const remote::TargetContext context{kMoeTrain, scratch("local"), scratch("hosts.json")};
        auto two = remote::makeTarget("ssh:node-a,node-b", context);
        QVERIFY2(two, two ? "" : two.error().toString().c_str());
        QCOMPARE((*two)->name(), std::string("ssh:node-a,node-b"));
        QVERIFY(dynamic_cast<remote::MultiSshTarget*>(two->get()) != nullptr);
        QCOMPARE(remote::makeTarget("ssh:node-a,node-a", context).error().code, core::ErrorCode::InvalidArgument);
        QCOMPARE(remote::makeTarget("ssh:node-a,", context).error().code, core::ErrorCode::InvalidArgument);
        QCOMPARE(remote::makeTarget("ssh:node-a,nope", context).error().code, core::ErrorCode::NotFound);
    }

    // Validation is for the whole world: global batch 2 = micro batch 2 cannot be split over two
    // ranks, and that is refused before a run or a directory exists on either node.
    void configIsValidatedForTheWholeWorld()
    {
        const remote::TargetContext context{kMoeTrain, scratch("local"), scratch("hosts.json")};
        auto made = remote::makeTarget("ssh:node-a,node-b", context);
        QVERIFY(made);
        auto started = core::startRun(*m_store, **made, tinyConfig(10, /*globalBatch=*/2), "unsplittable");
        QVERIFY(!started);
        QCOMPARE(started.error().code, core::ErrorCode::InvalidArgument);
        QVERIFY2(started.error().message.find("global_batch_size") != std::string::npos,
                 started.error().message.c_str());
        QVERIFY(!fs::exists(scratch("node-a") + "/runs") || fs::is_empty(scratch("node-a") + "/runs"));
        QVERIFY(!fs::exists(scratch("node-b") + "/runs") || fs::is_empty(scratch("node-b") + "/runs"));
        auto runs = m_store->listRuns();
        QVERIFY(runs && runs->empty());
    }

    void twoNodesStreamThenCancel()
    {
        const remote::TargetContext context{kMoeTrain, scratch("local"), scratch("hosts.json")};
        auto made = remote::makeTarget("ssh:node-a,node-b", context);
        QVERIFY(made);
        auto& target = dynamic_cast<remote::MultiSshTarget&>(**made);
        std::vector<core::LaunchProgress> phases;
        target.setProgressCallback([&](const core::LaunchProgress& p) { phases.push_back(p); });

        auto started = core::startRun(*m_store, target, tinyConfig(100000), "two-nodes");
        QVERIFY2(started, started ? "" : started.error().toString().c_str());
        const std::string dirA = started->launched.runDir;
        QCOMPARE(dirA, scratch("node-a") + "/runs/" + started->id);
        auto dirB = target.nodeRunDir(1, dirA);
        QVERIFY(dirB);
        QCOMPARE(*dirB, scratch("node-b") + "/runs/" + started->id);
        for (const char* node : {"node-a", "node-b"})  // checked each node (CPU-only: 1 rank each)
            QVERIFY(std::any_of(phases.begin(), phases.end(), [&](const auto& p) {
                return p.phase == "check" && p.node == node && p.detail.find("1 rank") != std::string::npos;
            }));
        QCOMPARE(std::count_if(phases.begin(), phases.end(),
                               [](const auto& p) { return p.phase == "start" && p.fraction == 1.0; }),
                 std::ptrdiff_t(2));

        // The losses stream in from node 0 (global rank 0 writes the stream).
        core::RunFollower follower(*m_store, target, started->id);
        std::optional<core::MetaRecord> meta;
        size_t steps = 0;
        QElapsedTimer timer;
        timer.start();
        while (steps < 5 && timer.elapsed() < 120000) {
            auto update = follower.poll();
            QVERIFY2(update, update ? "" : update.error().toString().c_str());
            if (update->meta)
                meta = update->meta;
            steps += update->newSteps.size();
            QVERIFY2(!update->finished, update->status.message.c_str());
            QTest::qWait(200);
        }
        QVERIFY2(steps >= 5, ("only " + std::to_string(steps) + " steps arrived; node logs:\n" +
                              wbtest::readAll(dirA + "/stdout.log") + wbtest::readAll(*dirB + "/stdout.log") +
                              wbtest::readAll(*dirB + "/rank1.log"))
                                 .c_str());
        QVERIFY(meta);
        QCOMPARE(meta->worldSize, 2);
        auto stored = m_store->steps(started->id);
        QVERIFY(stored && stored->size() >= 5);
        for (const auto& step : *stored)
            QVERIFY(std::isfinite(step.loss));
        // Each node ran its own rank in its own directory; the second node's is rank 1.
        QVERIFY(fs::exists(dirA + "/rank0.log"));
        QVERIFY(fs::exists(*dirB + "/rank1.log"));
        QVERIFY(!fs::exists(*dirB + "/metrics.jsonl"));
        const pid_t groupA = static_cast<pid_t>(std::stol(wbtest::readAll(dirA + "/pid")));
        const pid_t groupB = static_cast<pid_t>(std::stol(wbtest::readAll(*dirB + "/pid")));
        QVERIFY(groupA != groupB);
        QVERIFY(groupMembers(groupA).size() >= 2);  // the launcher and its rank
        QVERIFY(groupMembers(groupB).size() >= 2);
        auto running = target.status(dirA);
        QVERIFY(running);
        QCOMPARE(running->state, core::RunState::Running);

        // Cancel: every node's group ends, verified by the target and here.
        auto cancelled = target.cancel(dirA, std::chrono::seconds(20));
        QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
        QVERIFY(groupMembers(groupA).empty());
        QVERIFY(groupMembers(groupB).empty());
        // A fresh target (as `watch` or a restarted GUI builds from the stored target string and
        // node 0's directory) finds every node's directory again.
        auto fresh = remote::makeTarget(started->launched.target, context);
        QVERIFY(fresh);
        auto after = (*fresh)->status(dirA);
        QVERIFY2(after, after ? "" : after.error().toString().c_str());
        QVERIFY(!after->processAlive);
        QVERIFY2(after->state == core::RunState::Cancelled, (std::string(core::runStateName(after->state)) + ": " +
                                                             after->message).c_str());
    }

    void cleanupTestCase() { m_server.stop(); }
};

QTEST_GUILESS_MAIN(TestSshMultiNode)
#include "test_ssh_multinode.moc"
