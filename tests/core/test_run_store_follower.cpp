// RunFollower against an in-memory RunTarget: the file grows and the process dies under it.
// Checks the end-of-run rule (dead AND read to the end) and the final-state mapping.
#include "core/run_follower.h"

#include <QTemporaryDir>
#include <cmath>
#include <ctime>
#include <QtTest>

using namespace wb::core;

namespace {

// A target whose metrics file and process state the test sets directly.
class ScriptedTarget : public RunTarget {
public:
    std::string file;
    RunStatus next;
    int statusCalls = 0;

    std::string name() const override { return "scripted"; }
    Result<LaunchedRun> launch(const LaunchRequest&) override
    {
        return makeError(ErrorCode::Failed, "not used");
    }
    Result<MetricsChunk> readMetrics(const std::string&, int64_t offset, int64_t maxBytes) override
    {
        MetricsChunk chunk;
        chunk.offset = offset;
        chunk.fileSize = static_cast<int64_t>(file.size());
        chunk.bytes = file.substr(static_cast<size_t>(offset), static_cast<size_t>(maxBytes));
        return chunk;
    }
    Result<RunStatus> status(const std::string&) override
    {
        ++statusCalls;
        return next;
    }
    Result<void> cancel(const std::string&, std::chrono::milliseconds) override { return {}; }
};

std::string stepLine(int step)
{
    StepRecord r;
    r.step = step;
    r.loss = 1.0 / step;
    return toJsonLine(r) + "\n";
}

}  // namespace

class TestRunStoreFollower : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_count = 0;

private slots:
    void followsGrowingFile();
    void stepsStoredByAnotherFollowerAreReported();
    void finalState_data();
    void finalState();
    void overlongLineIsSkippedOnce();
    void catchUpStoresWhatIsWrittenAndTheEnd();
    void renameAndDeleteRun();
    void gpuSamplesAreStoredAndReported();
    void reportsExactlyWhatIngestStored();
};

// Issue 19 item 4: the follower reports the records ingest returns instead of parsing the bytes a
// second time. Whatever it reports is what the store now holds: every kind of record, nothing of a
// malformed line or a torn tail, and the torn line once it completes.
void TestRunStoreFollower::reportsExactlyWhatIngestStored()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("same.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "same", "scripted", "/run", "{}", ""});
    ScriptedTarget target;
    target.next = RunStatus{RunState::Running, -1, "running", "", true};
    MetaRecord meta;
    meta.runId = "same";
    meta.dataSource = "mock";
    meta.worldSize = 2;
    const GpuRecord sample{1.7e9, 2, {{0, 97, 85.0, 140.0, NAN, 61, 1980}}};
    const std::string torn = stepLine(4);
    target.file = toJsonLine(meta) + "\n" + stepLine(1) + "{\"v\":1,\"type\":\"step\",\"step\": no\n" + stepLine(2) +
                  toJsonLine(EventRecord{1.7e9, "warning", "slow loader", 2}) + "\n" + toJsonLine(sample) + "\n" +
                  stepLine(3) + torn.substr(0, 12);
    RunFollower follower(**store, target, *id);
    const auto jsonLines = [](const auto& records) {
        std::vector<std::string> lines;
        for (const auto& r : records)
            lines.push_back(toJsonLine(r));
        return lines;
    };

    auto u = follower.poll();
    QVERIFY2(u, u ? "" : u.error().toString().c_str());
    QCOMPARE(u->newSteps.size(), size_t(3));
    QCOMPARE(jsonLines(u->newSteps), jsonLines(*(*store)->steps(*id)));
    QCOMPARE(jsonLines(u->newEvents), jsonLines(*(*store)->events(*id)));
    QCOMPARE(u->newEvents.size(), size_t(1));
    QCOMPARE(jsonLines(u->newGpu), jsonLines(*(*store)->gpuRecords(*id)));
    QCOMPARE(u->newGpu.size(), size_t(1));
    QVERIFY(u->meta);
    QCOMPARE(toJsonLine(*u->meta), toJsonLine(*(*store)->meta(*id)));
    QCOMPARE((*store)->run(*id)->malformedLines, int64_t(1));
    QCOMPARE((*store)->run(*id)->streamOffset, int64_t(target.file.size() - 12));

    // The torn line completes: reported once, as stored; nothing earlier again.
    target.file += torn.substr(12);
    u = follower.poll();
    QVERIFY(u);
    QVERIFY(!u->meta);
    QVERIFY(u->newEvents.empty() && u->newGpu.empty());
    QCOMPARE(u->newSteps.size(), size_t(1));
    QCOMPARE(jsonLines(u->newSteps), jsonLines(*(*store)->steps(*id, 3)));
    QCOMPARE((*store)->run(*id)->streamOffset, int64_t(target.file.size()));
}

// Issue 18 item 10: "gpu" records (NVML samples) are stored per GPU, reported by the poll that
// stored them, read back per sample, and go with the run when it is deleted.
void TestRunStoreFollower::gpuSamplesAreStoredAndReported()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("gpu.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "gpu", "scripted", "/run", "{}", ""});
    ScriptedTarget target;
    target.next = RunStatus{RunState::Running, -1, "running", "", true};
    GpuRecord sample{1.7e9, 1, {{0, 97, 85.0, 140.0, 612.5, 61, 1980}, {1, 95, 84.0, 140.0, NAN, 63, 1755}}};
    target.file = stepLine(1) + toJsonLine(sample) + "\n";
    RunFollower follower(**store, target, *id);
    auto u = follower.poll();
    QVERIFY(u);
    QCOMPARE(u->newGpu.size(), size_t(1));
    QCOMPARE(u->newGpu[0].gpus.size(), size_t(2));
    auto stored = (*store)->gpuRecords(*id);
    QVERIFY(stored);
    QCOMPARE(stored->size(), size_t(1));
    const GpuRecord& r = stored->front();
    QCOMPARE(r.time, 1.7e9);
    QCOMPARE(r.step, std::optional<int64_t>(1));
    QCOMPARE(r.gpus[0].smClockMhz, 1980.0);
    QCOMPARE(r.gpus[1].tempC, 63.0);
    QVERIFY(std::isnan(r.gpus[1].powerW));  // no sensor: NULL in the store, NaN back
    QCOMPARE((*store)->run(*id)->malformedLines, int64_t(0));
    QVERIFY((*store)->deleteRun(*id));
    QCOMPARE((*store)->gpuRecords(*id)->size(), size_t(0));
}

// Issue 18 item 1: `runs`/`show` catch a run up before answering. Several reads' worth of steps
// (past one poll's 4 MiB) while the process lives: all stored, not finished, synced_at set; once
// the process is gone: the end recorded. A failing target leaves the store as it was.
void TestRunStoreFollower::catchUpStoresWhatIsWrittenAndTheEnd()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("catchup.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "cli-run", "scripted", "/run", "{}", ""});
    QVERIFY(id);
    QCOMPARE((*store)->run(*id)->syncedAt, 0.0);
    ScriptedTarget target;
    target.next = RunStatus{RunState::Running, -1, "running", "", true};
    MetaRecord meta;
    meta.dataSource = "mock";
    target.file = toJsonLine(meta) + "\n";
    const std::string padding(20000, 'p');  // each step line ≈ 20 kB: 600 steps ≈ 12 MB, three reads
    for (int step = 1; step <= 600; ++step) {
        StepRecord r;
        r.step = step;
        r.loss = 1.0 / step;
        std::string line = toJsonLine(r);
        line.insert(line.size() - 1, ",\"note\":\"" + padding + "\"");
        target.file += line + "\n";
    }
    const double before = static_cast<double>(std::time(nullptr)) - 1.0;
    auto caught = catchUpRun(**store, target, *id);
    QVERIFY2(caught, caught ? "" : caught.error().toString().c_str());
    QCOMPARE(caught->stepsAdded, int64_t(600));
    QVERIFY(!caught->finished);
    auto run = (*store)->run(*id);
    QCOMPARE(run->steps, int64_t(600));
    QCOMPARE(run->status, RunState::Running);
    QCOMPARE(run->streamOffset, int64_t(target.file.size()));
    QVERIFY2(run->syncedAt >= before, std::to_string(run->syncedAt).c_str());

    // Nothing new: a catch-up is one poll and stores nothing.
    const int calls = target.statusCalls;
    caught = catchUpRun(**store, target, *id);
    QVERIFY(caught);
    QCOMPARE(caught->stepsAdded, int64_t(0));
    QCOMPARE(target.statusCalls, calls + 1);

    // The process ended after two more steps: both stored and the end recorded.
    target.file += stepLine(601) + stepLine(602);
    target.next = RunStatus{RunState::Finished, 0, "finished", "", false};
    caught = catchUpRun(**store, target, *id);
    QVERIFY(caught);
    QCOMPARE(caught->stepsAdded, int64_t(2));
    QVERIFY(caught->finished);
    QCOMPARE((*store)->run(*id)->status, RunState::Finished);
    QCOMPARE((*store)->run(*id)->exitCode, 0);
    QVERIFY(!isLive(*(*store)->run(*id)));

    // A target that cannot be read: an error, the stored run unchanged.
    auto other = (*store)->createRun({"", "other", "scripted", "/run2", "{}", ""});
    class Unreachable : public ScriptedTarget {
        Result<RunStatus> status(const std::string&) override { return makeError(ErrorCode::IoError, "host down"); }
    } down;
    (void)(*store)->setStatus(*other, RunState::Running, -1);
    QVERIFY(!catchUpRun(**store, down, *other));
    QCOMPARE((*store)->run(*other)->status, RunState::Running);
    QCOMPARE((*store)->run(*other)->syncedAt, 0.0);
    QVERIFY(isFollowable(*(*store)->run(*other)));
}

void TestRunStoreFollower::renameAndDeleteRun()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("manage.sqlite")).toStdString());
    QVERIFY(store);
    auto keep = (*store)->createRun({"", "keep", "scripted", "/a", "{}", ""});
    auto gone = (*store)->createRun({"", "gone", "scripted", "/b", "{}", ""});
    QVERIFY(keep && gone);
    QVERIFY((*store)->ingest(*gone, 0, stepLine(1) + stepLine(2)));
    QVERIFY((*store)->ingest(*keep, 0, stepLine(1)));
    QVERIFY((*store)->renameRun(*keep, "a new\nname"));
    QCOMPARE((*store)->run(*keep)->name, std::string("a new\nname"));
    QCOMPARE((*store)->renameRun("no-such-run", "x").error().code, ErrorCode::NotFound);

    QVERIFY((*store)->deleteRun(*gone));
    QCOMPARE((*store)->run(*gone).error().code, ErrorCode::NotFound);
    QCOMPARE((*store)->steps(*gone)->size(), size_t(0));  // its steps went with it
    QCOMPARE((*store)->steps(*keep)->size(), size_t(1));  // the other run's stay
    QCOMPARE((*store)->listRuns()->size(), size_t(1));
    QCOMPARE((*store)->deleteRun(*gone).error().code, ErrorCode::NotFound);
}

// A metrics line longer than one read (5 MiB; issue 20 item 4): the follower read the same 4 MiB
// forever. It is skipped as one malformed line and the steps after it are stored.
void TestRunStoreFollower::overlongLineIsSkippedOnce()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("long.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "long", "scripted", "/run", "{}", ""});
    ScriptedTarget target;
    target.next = RunStatus{RunState::Finished, 0, "finished", "", false};
    MetaRecord meta;
    meta.dataSource = "mock";
    target.file = toJsonLine(meta) + "\n" + stepLine(1) + "{\"v\":1,\"type\":\"event\",\"msg\":\"" +
                  std::string(5 << 20, 'x') + "\"}\n" + stepLine(2) + stepLine(3);
    RunFollower follower(**store, target, *id);
    bool finished = false;
    for (int i = 0; i < 10 && !finished; ++i) {
        auto u = follower.poll();
        QVERIFY2(u, u ? "" : u.error().toString().c_str());
        finished = u->finished;
    }
    QVERIFY(finished);
    auto run = (*store)->run(*id);
    QVERIFY(run);
    QCOMPARE(run->steps, int64_t(3));
    QCOMPARE(run->malformedLines, int64_t(1));
    QCOMPARE(run->streamOffset, int64_t(target.file.size()));
    QCOMPARE(run->status, RunState::Finished);
}

void TestRunStoreFollower::followsGrowingFile()
{
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("f.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "f", "scripted", "/run", "{}", ""});
    ScriptedTarget target;
    target.next.processAlive = true;
    target.next.state = RunState::Running;
    RunFollower follower(**store, target, *id);

    MetaRecord meta;
    meta.dataSource = "mock";
    target.file = toJsonLine(meta) + "\n" + stepLine(1) + stepLine(2).substr(0, 10);
    auto u = follower.poll();
    QVERIFY(u);
    QVERIFY(u->meta);
    QCOMPARE(u->newSteps.size(), size_t(1));
    QVERIFY(!u->finished);

    // The torn line completes; an event arrives; the process is still alive.
    target.file = toJsonLine(meta) + "\n" + stepLine(1) + stepLine(2) +
                  toJsonLine(EventRecord{0.0, "warning", "slow loader", 2}) + "\n" + stepLine(3);
    u = follower.poll();
    QVERIFY(u);
    QVERIFY(!u->meta);
    QCOMPARE(u->newSteps.size(), size_t(2));
    QCOMPARE(u->newSteps[0].step, int64_t(2));
    QCOMPARE(u->newEvents.size(), size_t(1));
    QVERIFY(!u->finished);

    // Dead, but a final line arrived since the last read: it is ingested and the run ends.
    target.file += stepLine(4);
    target.next = RunStatus{RunState::Finished, 0, "finished", "", false};
    u = follower.poll();
    QVERIFY(u);
    QCOMPARE(u->newSteps.size(), size_t(1));
    QVERIFY(u->finished);
    QCOMPARE((*store)->run(*id)->status, RunState::Finished);
    QCOMPARE((*store)->run(*id)->steps, int64_t(4));
}

void TestRunStoreFollower::stepsStoredByAnotherFollowerAreReported()
{
    // Two followers of one run (a watch, and cancel's catch-up or a second watch): the store keeps
    // each step once, and each follower still reports every step after its start exactly once.
    auto store = RunStore::open(m_dir.filePath(QStringLiteral("two.sqlite")).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "two", "scripted", "/run", "{}", ""});
    ScriptedTarget target;
    target.next.processAlive = true;
    target.next.state = RunState::Running;
    RunFollower watch(**store, target, *id), other(**store, target, *id);
    target.file = stepLine(1);
    auto u = watch.poll();
    QVERIFY(u);
    QCOMPARE(u->newSteps.size(), size_t(1));
    QVERIFY(other.poll());  // starts here: step 1 was stored before it
    target.file += stepLine(2) + toJsonLine(EventRecord{0.0, "warning", "loader slow", 2}) + "\n" + stepLine(3);
    auto o = other.poll();  // the other one stores 2, the event and 3
    QVERIFY(o);
    QCOMPARE(o->newSteps.size(), size_t(2));
    QCOMPARE(o->newEvents.size(), size_t(1));
    target.file += stepLine(4) + toJsonLine(EventRecord{0.0, "info", "checkpoint saved", 4}) + "\n";
    u = watch.poll();  // reports 2, 3 and the event from the store, then 4 and its event it stores itself
    QVERIFY2(u, u ? "" : u.error().toString().c_str());
    QCOMPARE(u->newSteps.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i)
        QCOMPARE(u->newSteps[i].step, int64_t(i) + 2);
    QCOMPARE(u->newEvents.size(), size_t(2));
    QCOMPARE(u->newEvents[0].msg, std::string("loader slow"));
    QCOMPARE(u->newEvents[1].msg, std::string("checkpoint saved"));
    o = other.poll();  // and the other one gets the watch's event, once
    QVERIFY(o);
    QCOMPARE(o->newEvents.size(), size_t(1));
    QCOMPARE(o->newEvents[0].msg, std::string("checkpoint saved"));
    QVERIFY(other.poll() && other.poll()->newEvents.empty());
    // The process ends; the other follower stores the last step; the watch reports it and ends.
    target.file += stepLine(5);
    target.next.processAlive = false;
    target.next.state = RunState::Finished;
    target.next.exitCode = 0;
    QVERIFY(other.poll());
    u = watch.poll();
    QVERIFY2(u, u ? "" : u.error().toString().c_str());
    QCOMPARE(u->newSteps.size(), size_t(1));
    QCOMPARE(u->newSteps[0].step, int64_t(5));
    QVERIFY(u->finished);
    auto stored = (*store)->steps(*id);
    QVERIFY(stored);
    QCOMPARE(stored->size(), size_t(5));  // each step once
}

void TestRunStoreFollower::finalState_data()
{
    QTest::addColumn<QString>("statusWord");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<bool>("tornTail");
    QTest::addColumn<QString>("storedBefore");
    QTest::addColumn<QString>("expectedState");
    QTest::newRow("finished") << "finished" << 0 << false << "running" << "finished";
    QTest::newRow("stopped by signal") << "stopped" << 5 << false << "running" << "cancelled";
    QTest::newRow("oom") << "oom" << 3 << false << "running" << "failed";
    QTest::newRow("no status.json") << "" << -1 << false << "running" << "failed";
    QTest::newRow("killed while running") << "running" << -1 << true << "running" << "failed";
    QTest::newRow("SIGKILLed by cancel") << "running" << -1 << false << "cancelled" << "cancelled";
}

void TestRunStoreFollower::finalState()
{
    QFETCH(QString, statusWord);
    QFETCH(int, exitCode);
    QFETCH(bool, tornTail);
    QFETCH(QString, storedBefore);
    QFETCH(QString, expectedState);
    auto store = RunStore::open(
        m_dir.filePath(QStringLiteral("s%1.sqlite").arg(++m_count)).toStdString());
    QVERIFY(store);
    auto id = (*store)->createRun({"", "f", "scripted", "/run", "{}", ""});
    QVERIFY((*store)->setStatus(*id, runStateFromName(storedBefore.toStdString()), -1));
    ScriptedTarget target;
    target.file = stepLine(1) + stepLine(2) + (tornTail ? std::string("{\"v\":1,\"ty") : "");
    target.next = RunStatus{RunState::Unknown, exitCode, statusWord.toStdString(), "", false};
    RunFollower follower(**store, target, *id);
    auto u = follower.poll();
    QVERIFY(u);
    QVERIFY(u->finished);  // a torn tail from a dead writer does not keep the watch alive
    QCOMPARE(QString::fromUtf8(runStateName(u->status.state)), expectedState);
    QCOMPARE(QString::fromUtf8(runStateName((*store)->run(*id)->status)), expectedState);
    QCOMPARE((*store)->run(*id)->exitCode, exitCode);
    if (statusWord.isEmpty())
        QVERIFY(u->status.message.find("status.json") != std::string::npos);
}

QTEST_GUILESS_MAIN(TestRunStoreFollower)
#include "test_run_store_follower.moc"
