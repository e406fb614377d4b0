// Following a Megatron-Bridge log while it grows: a writer thread appends a fixture log in pieces
// of random size at a steady pace (a torn line now and then, as a job's buffered writes leave
// them), and the product's RunFollower reads it through a real target — this machine's, and an
// SshTarget against the test sshd whose connections are killed mid-way. Each ends with every
// iteration stored exactly once, the store's offset at the end of the file, and the run finished
// at train_iters.
#include "core/bridge/bridge_follow.h"
#include "core/planner/catalog.h"
#include "core/run_follower.h"
#include "core/run_store.h"
#include "remote/local_target.h"
#include "remote/ssh_target.h"
#include "ssh_test_fixture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>

using namespace wb;

namespace {

std::string fixture(const char* name)
{
    return std::string(WB_SOURCE_DIR) + "/tests/core/fixtures/bridge/" + name;
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

core::planner::Catalog catalog()
{
    core::planner::Catalog c;
    if (auto r = c.addDirectory(std::string(WB_SOURCE_DIR) + "/resources/catalog"); !r)
        qFatal("catalog: %s", r.error().toString().c_str());
    return c;
}

// Appends `bytes` to `path` in random pieces, `pauseMs` apart; `done` is set at the end.
std::thread startWriter(std::string path, std::string bytes, int pauseMs, std::atomic<bool>& done)
{
    return std::thread([path = std::move(path), bytes = std::move(bytes), pauseMs, &done] {
        std::mt19937 rng(11);
        size_t at = 0;
        while (at < bytes.size()) {
            const size_t n = std::min(bytes.size() - at, std::uniform_int_distribution<size_t>(1, 400)(rng));
            {
                std::ofstream out(path, std::ios::binary | std::ios::app);
                out.write(bytes.data() + at, static_cast<std::streamsize>(n));
            }
            at += n;
            std::this_thread::sleep_for(std::chrono::milliseconds(pauseMs));
        }
        done = true;
    });
}

}  // namespace

class TestBridgeFollow : public QObject {
    Q_OBJECT

    wbtest::SshServer m_server;
    bool m_sshd = false;

    // Polls until the follower says finished (or the deadline), calling `midway` once after the
    // first steps arrived. Returns every step the polls reported.
    std::vector<core::StepRecord> followToEnd(core::RunStore& store, core::RunTarget& target, const std::string& id,
                                              const std::function<void()>& midway, int* retries)
    {
        core::RunFollower follower(store, target, id);
        std::vector<core::StepRecord> seen;
        bool cut = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (std::chrono::steady_clock::now() < deadline) {
            auto update = follower.poll();
            if (!update) {
                // The connection was cut: the next poll reconnects (the target's budget), as watch does.
                if (update.error().code != core::ErrorCode::IoError)
                    qFatal("poll: %s", update.error().toString().c_str());
                ++*retries;
                continue;
            }
            seen.insert(seen.end(), update->newSteps.begin(), update->newSteps.end());
            if (!cut && !seen.empty() && midway) {
                midway();
                cut = true;
            }
            if (update->finished)
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return seen;
    }

    void checkRun(core::RunStore& store, const std::string& id, const std::vector<core::StepRecord>& seen,
                  const std::string& log)
    {
        auto run = store.run(id);
        QVERIFY(run);
        QCOMPARE(run->status, core::RunState::Finished);
        QCOMPARE(run->streamOffset, static_cast<int64_t>(slurp(log).size()));
        QCOMPARE(run->steps, int64_t(6));
        std::set<int64_t> once;
        for (const auto& s : seen)
            QVERIFY2(once.insert(s.step).second, ("step reported twice: " + std::to_string(s.step)).c_str());
        QCOMPARE(once.size(), size_t(6));
        auto steps = store.steps(id);
        QCOMPARE(steps->front().step, int64_t(10));
        QCOMPARE(steps->back().step, int64_t(60));
        // What the log said while it grew: the world from the rank prefixes, seq from the summary.
        auto meta = store.meta(id);
        QVERIFY(meta);
        QCOMPARE(meta->worldSize, 16);
        QCOMPARE(meta->seqLength, 4096);
        QCOMPARE(steps->back().effectiveTokens, int64_t(128 * 4096));
        QVERIFY(steps->back().tokensPerSPerGpu > 0);
    }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");
        if (std::filesystem::exists("/usr/sbin/sshd"))
            m_sshd = m_server.start().empty();
    }
    void cleanupTestCase()
    {
        if (m_sshd)
            m_server.stop();
    }

    void followsAGrowingLogHere()
    {
        QTemporaryDir dir;
        const std::string log = dir.filePath("slurm-4242.out").toStdString();
        std::ofstream(log).flush();  // the job started; nothing written yet
        auto store = core::RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        core::bridge::BridgeImportRequest request;
        request.logPath = log;
        request.hardware = "h200";
        auto id = core::bridge::startBridgeFollow(**store, catalog(), request, "local", nullptr);
        QVERIFY2(id, id ? "" : id.error().toString().c_str());
        QCOMPARE((*store)->run(*id)->status, core::RunState::Running);

        std::atomic<bool> done{false};
        std::thread writer = startWriter(log, slurp(fixture("bridge_two_nodes.log")), 3, done);
        remote::LocalTarget target("moe-train", dir.filePath("runs").toStdString());
        int retries = 0;
        const auto seen = followToEnd(**store, target, *id, {}, &retries);
        writer.join();
        QVERIFY(done);
        QCOMPARE(retries, 0);
        checkRun(**store, *id, seen, log);
        // A second watch of the finished run reads nothing more and says finished.
        core::RunFollower again(**store, target, *id);
        auto update = again.poll();
        QVERIFY(update && update->finished && update->newSteps.empty());
    }

    void followsOverSshThroughADrop()
    {
        if (!m_sshd)
            QSKIP("no sshd here (apt-get install openssh-server)");
        QTemporaryDir dir;
        const std::string log = dir.filePath("slurm-4243.out").toStdString();
        std::ofstream(log).flush();
        auto store = core::RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        core::bridge::BridgeImportRequest request;
        request.logPath = log;  // the sshd is this machine: the same path is the host's
        auto id = core::bridge::startBridgeFollow(**store, catalog(), request, "ssh:wbtest", nullptr);
        QVERIFY(id);

        remote::SshTargetOptions options;
        options.host = m_server.spec(/*acceptNew=*/true);  // this test's own fresh server
        options.moeTrainPath = "/bin/true";
        options.runsRoot = dir.filePath("remote-runs").toStdString();
        options.reconnectBudget = std::chrono::seconds(30);
        remote::SshTarget target(options);
        std::atomic<bool> done{false};
        std::thread writer = startWriter(log, slurp(fixture("bridge_two_nodes.log")), 10, done);
        int retries = 0;
        const auto seen = followToEnd(**store, target, *id, [&] { QVERIFY(m_server.killSessions() > 0); }, &retries);
        writer.join();
        checkRun(**store, *id, seen, log);
    }
};

QTEST_MAIN(TestBridgeFollow)
#include "test_bridge_follow.moc"
