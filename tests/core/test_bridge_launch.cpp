// launch --bridge without a cluster: the launch folder's contract (bridge_job.json; every bad
// folder refused naming the file and the fix) and the launch sequence against a scripted
// RunTarget (the node check's refusal stores nothing; a submitted job's log is followed
// byte-exact, each iteration stored once, and the run ends in the job's state only once the job
// is gone and the log read to its end, a torn last line counted). The real Slurm side is
// tests/remote/test_slurm.sh.
#include "core/bridge/bridge_follow.h"
#include "core/bridge/bridge_launch.h"
#include "core/planner/catalog.h"
#include "core/run_follower.h"
#include "core/run_store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace wb::core;
using namespace wb::core::bridge;

namespace {

planner::Catalog catalog()
{
    planner::Catalog c;
    auto r = c.addDirectory(std::string(WB_SOURCE_DIR) + "/resources/catalog");
    Q_ASSERT(r);
    return c;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string iterationLine(int i, int of)
{
    char line[512];
    std::snprintf(line, sizeof line,
                  " [2026-11-20 10:01:10] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): "
                  "150.5 | throughput per GPU (TFLOP/s/GPU): 301.0 | learning rate: 1.0E-06 | global batch size:     2 | "
                  "lm loss: 2.500000E+00 | loss scale: 1.0 | grad norm: 1.210 | number of skipped iterations:   0 | "
                  "number of nan iterations:   0 |\n",
                  i, of, 2 * i);
    return line;
}

// A cluster in a few fields: the job's log grows as the test appends, the job is queued until
// `jobGone`, the node check fails when `bridgeMissing`.
class ScriptedTarget : public RunTarget {
public:
    std::string log;
    bool jobGone = false;
    RunState endState = RunState::Finished;
    bool bridgeMissing = false;
    int submissions = 0;
    BridgeJobRequest submitted;

    std::string name() const override { return "slurm:scripted"; }
    Result<std::string> prepareBridgeLaunch(const std::string& runId) override
    {
        if (bridgeMissing)
            return makeError(ErrorCode::NotFound, "`python -c \"import megatron.bridge\"` fails", "slurm:scripted:bridge_python");
        return "/cluster/runs/" + runId;
    }
    Result<LaunchedRun> launchBridge(const BridgeJobRequest& request) override
    {
        ++submissions;
        submitted = request;
        return LaunchedRun{request.runId, "slurm:scripted job 7", "/cluster/runs/" + request.runId, 0};
    }
    Result<LaunchedRun> launch(const LaunchRequest&) override { return makeError(ErrorCode::Failed, "not here"); }
    Result<MetricsChunk> readMetrics(const std::string&, int64_t, int64_t) override { return MetricsChunk{}; }
    Result<MetricsChunk> readFile(const std::string&, int64_t offset, int64_t maxBytes) override
    {
        MetricsChunk chunk;
        chunk.offset = offset;
        chunk.fileSize = static_cast<int64_t>(log.size());
        chunk.bytes = log.substr(static_cast<size_t>(offset), static_cast<size_t>(maxBytes));
        return chunk;
    }
    Result<RunStatus> status(const std::string&) override
    {
        RunStatus s;
        s.processAlive = !jobGone;
        s.state = jobGone ? endState : RunState::Running;
        s.exitCode = jobGone ? (endState == RunState::Finished ? 0 : 1) : -1;
        return s;
    }
    Result<void> cancel(const std::string&, std::chrono::milliseconds) override { return {}; }
};

}  // namespace

class TestBridgeLaunch : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // A folder as generate --format megatron-bridge writes it, trimmed to what launch reads.
    std::string goodFolder(const QString& name)
    {
        const std::string dir = m_dir.filePath(name).toStdString();
        std::filesystem::create_directories(dir);
        write(dir + "/bridge_job.json", R"({"version": 1, "script": "bridge.sbatch", "config": "overrides.yaml", "hardware": "h200", "gpus": 1})");
        write(dir + "/bridge.sbatch", "#!/bin/bash\necho job\n");
        write(dir + "/overrides.yaml", "model:\n  tensor_model_parallel_size: 1\ntrain:\n  global_batch_size: 2\n  micro_batch_size: 1\n  seq_length: 128\n");
        write(dir + "/.bridge.sbatch.swp", "editor junk");
        return dir;
    }

private slots:
    void badFolders_data()
    {
        QTest::addColumn<QString>("breakIt");
        QTest::addColumn<QString>("expected");
        QTest::newRow("not there") << "rmdir" << "no such folder";
        QTest::newRow("no manifest") << "rm bridge_job.json" << "not a Megatron-Bridge folder: no bridge_job.json";
        QTest::newRow("a moe-train folder") << "slurm" << "a moe-train job (generate --format slurm)";
        QTest::newRow("script missing") << "rm bridge.sbatch" << "names (\"script\") is missing";
        QTest::newRow("manifest not JSON") << "manifest {" << "not JSON";
        QTest::newRow("no script key") << "manifest {\"version\": 1}" << "\"script\" is missing";
        QTest::newRow("script outside") << "manifest {\"script\": \"../x\"}" << "must name a file of this folder";
        QTest::newRow("config missing") << "rm overrides.yaml" << "names (\"config\") is missing";
        QTest::newRow("bad prediction") << "prediction" << "remove it to launch without a prediction";
    }

    void badFolders()
    {
        QFETCH(QString, breakIt);
        QFETCH(QString, expected);
        const std::string dir = goodFolder(QStringLiteral("bad-") + QString::fromLatin1(QTest::currentDataTag()));
        const std::string how = breakIt.toStdString();
        if (how == "rmdir")
            std::filesystem::remove_all(dir);
        else if (how.rfind("rm ", 0) == 0)
            std::filesystem::remove(dir + "/" + how.substr(3));
        else if (how == "slurm") {
            std::filesystem::remove(dir + "/bridge_job.json");
            write(dir + "/run.sbatch", "#!/bin/bash\n");
        } else if (how.rfind("manifest ", 0) == 0)
            write(dir + "/bridge_job.json", how.substr(9));
        else if (how == "prediction")
            write(dir + "/prediction.json", "{\"prediction_version\": 1}");
        auto folder = readBridgeLaunchFolder(dir);
        QVERIFY(!folder);
        QVERIFY(folder.error().code == ErrorCode::InvalidArgument || folder.error().code == ErrorCode::NotFound);
        QVERIFY2(folder.error().message.find(expected.toStdString()) != std::string::npos, folder.error().toString().c_str());
        QVERIFY2(!folder.error().context.empty(), "the error names the file");
    }

    void nodeCheckRefusalStoresNothing()
    {
        auto folder = readBridgeLaunchFolder(goodFolder(QStringLiteral("refused")));
        QVERIFY2(folder, folder ? "" : folder.error().toString().c_str());
        auto store = RunStore::open(m_dir.filePath(QStringLiteral("refused.sqlite")).toStdString());
        QVERIFY(store);
        ScriptedTarget target;
        target.bridgeMissing = true;
        auto started = startBridgeLaunch(**store, catalog(), target, *folder, "x", nullptr);
        QVERIFY(!started);
        QVERIFY(started.error().message.find("import megatron.bridge") != std::string::npos);
        QCOMPARE(target.submissions, 0);
        QVERIFY((*store)->listRuns()->empty());
    }

    // The job writes 12 iterations in pieces cut mid-line; the follower stores each once, stays
    // running while the job is queued even after the last iteration, and ends once it is gone.
    void followsTheJobToItsEnd_data()
    {
        QTest::addColumn<int>("endState");
        QTest::newRow("completed") << int(RunState::Finished);
        QTest::newRow("failed") << int(RunState::Failed);
    }

    void followsTheJobToItsEnd()
    {
        QFETCH(int, endState);
        auto folder = readBridgeLaunchFolder(goodFolder(QStringLiteral("good-%1").arg(endState)));
        QVERIFY2(folder, folder ? "" : folder.error().toString().c_str());
        QCOMPARE(folder->files.size(), size_t(3));  // not the editor's swap file
        auto store = RunStore::open(m_dir.filePath(QStringLiteral("good-%1.sqlite").arg(endState)).toStdString());
        QVERIFY(store);
        ScriptedTarget target;
        target.endState = static_cast<RunState>(endState);
        std::vector<std::string> notes;
        auto started = startBridgeLaunch(**store, catalog(), target, *folder, "good", &notes);
        QVERIFY2(started, started ? "" : started.error().toString().c_str());
        QCOMPARE(target.submissions, 1);
        QCOMPARE(target.submitted.script, std::string("bridge.sbatch"));
        auto run = (*store)->run(started->id);
        QCOMPARE(run->kind, std::string(kRunKindBridge));
        QCOMPARE(run->sourcePath, "/cluster/runs/" + started->id + "/" + kBridgeJobLog);
        QCOMPARE(*launchedByWorkbench(**store, *run), true);

        std::string whole;
        for (int i = 1; i <= 12; ++i)
            whole += iterationLine(i, 12);
        whole += " [2026-11-20 10:01:10] iteration       13/      12 | consumed";  // torn: the job was killed
        RunFollower follower(**store, target, started->id);
        std::vector<int64_t> seen;
        for (size_t cut = 0; cut < whole.size(); cut += 97) {
            target.log = whole.substr(0, std::min(whole.size(), cut + 97));
            auto update = follower.poll();
            QVERIFY2(update, update ? "" : update.error().toString().c_str());
            QVERIFY2(!update->finished, "not over while the job is queued");
            for (const auto& s : update->newSteps)
                seen.push_back(s.step);
        }
        target.jobGone = true;
        auto last = follower.poll();
        QVERIFY(last);
        for (const auto& s : last->newSteps)
            seen.push_back(s.step);
        QVERIFY(last->finished);
        QCOMPARE(int(last->status.state), endState);
        QCOMPARE(seen.size(), size_t(12));
        for (int i = 0; i < 12; ++i)
            QCOMPARE(seen[size_t(i)], int64_t(i + 1));
        run = (*store)->run(started->id);
        QCOMPARE(run->steps, int64_t(12));
        QCOMPARE(run->status, static_cast<RunState>(endState));
        QCOMPARE(run->streamOffset, int64_t(whole.size()));  // the torn tail read, counted, not stored
    }
};

QTEST_GUILESS_MAIN(TestBridgeLaunch)
#include "test_bridge_launch.moc"
