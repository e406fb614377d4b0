// LocalTarget with a real child process (tests/remote/fake_moe_train.sh, same command line and
// run-directory files as moe-train): detached launch, metrics by offset, status.json parsing,
// and cancel that leaves nothing of the process group alive.
#include "core/metrics_schema.h"
#include "remote/local_target.h"
#include "remote/process_group.h"

#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

using namespace wb;

namespace {

const std::string kFakeTrainer = std::string(WB_SOURCE_DIR) + "/tests/remote/fake_moe_train.sh";

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

void writeAll(const std::string& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Fields 5 and 6 of /proc/PID/stat: process group and session.
std::pair<long, long> groupAndSession(pid_t pid)
{
    const std::string stat = readAll("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream rest(stat.substr(stat.rfind(')') + 1));
    char state;
    long ppid, pgrp, session;
    rest >> state >> ppid >> pgrp >> session;
    return {pgrp, session};
}

bool waitFor(const std::function<bool()>& condition, int timeoutMs = 10000)
{
    QElapsedTimer timer;
    timer.start();
    while (!condition()) {
        if (timer.elapsed() > timeoutMs)
            return false;
        QTest::qWait(20);
    }
    return true;
}

}  // namespace

class TestLocalTarget : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_runs = 0;
    std::string runsRoot() const { return m_dir.filePath(QStringLiteral("runs")).toStdString(); }

    core::LaunchedRun launch(const char* mode)
    {
        qputenv("FAKE_TRAIN_MODE", mode);
        remote::LocalTarget target(kFakeTrainer, runsRoot());
        auto run = target.launch({"run-" + std::to_string(++m_runs), "t", "{\"name\": \"t\"}"});
        if (!run)
            qFatal("launch failed: %s", run.error().toString().c_str());
        return *run;
    }

private slots:
    void launchDetachesIntoOwnSession();
    void launchRefusals();
    void relativeTrainerPath();
    void finishedRunStatusAndMetrics();
    void readMetricsByOffset_data();
    void readMetricsByOffset();
    void statusToleratesTornFile_data();
    void statusToleratesTornFile();
    void cancelEndsWholeGroup_data();
    void cancelEndsWholeGroup();
    void groupOutlivingItsTrainer_data();
    void groupOutlivingItsTrainer();
};

void TestLocalTarget::launchDetachesIntoOwnSession()
{
    const auto run = launch("graceful");
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    QCOMPARE(readAll(run.runDir + "/run.json"), std::string("{\"name\": \"t\"}"));
    QCOMPARE(readAll(run.runDir + "/pid"), std::to_string(run.pid) + "\n");
    // Own session and process group: the trainer's pid is both ids, so a closing terminal or the
    // workbench's own group being signalled does not reach it.
    const auto [pgrp, session] = groupAndSession(static_cast<pid_t>(run.pid));
    QCOMPARE(pgrp, static_cast<long>(run.pid));
    QCOMPARE(session, static_cast<long>(run.pid));
    // Not our child (double fork): nothing to reap, no zombie while the workbench lives.
    QCOMPARE(waitpid(static_cast<pid_t>(run.pid), nullptr, WNOHANG), -1);
    QCOMPARE(errno, ECHILD);
    QVERIFY(waitFor([&] { return readAll(run.runDir + "/stdout.log").find("pid") != std::string::npos; }));
    QVERIFY(readAll(run.runDir + "/stdout.log").find("stdin is /dev/null") != std::string::npos);
    QVERIFY(target.status(run.runDir)->processAlive);
    QVERIFY(target.cancel(run.runDir, std::chrono::seconds(5)));
}

void TestLocalTarget::launchRefusals()
{
    remote::LocalTarget missing(m_dir.filePath(QStringLiteral("no-such-moe-train")).toStdString(),
                                runsRoot());
    auto r = missing.launch({"never", "t", "{}"});
    QVERIFY(!r);
    QCOMPARE(r.error().code, core::ErrorCode::NotFound);
    QVERIFY(r.error().message.find("--moe-train") != std::string::npos);
    QVERIFY(!QFileInfo::exists(QString::fromStdString(runsRoot() + "/never")));

    remote::LocalTarget target(kFakeTrainer, runsRoot());
    QCOMPARE(target.launch({"../escape", "t", "{}"}).error().code, core::ErrorCode::InvalidArgument);
    QVERIFY(QDir().mkpath(QString::fromStdString(runsRoot() + "/taken")));
    QCOMPARE(target.launch({"taken", "t", "{}"}).error().code, core::ErrorCode::Busy);
}

// Regression: the trainer starts inside its run directory, so a relative --moe-train path must be
// resolved before that (it failed with ENOENT).
void TestLocalTarget::relativeTrainerPath()
{
    const std::string relative =
        QDir::current().relativeFilePath(QString::fromStdString(kFakeTrainer)).toStdString();
    QVERIFY(relative.front() != '/');
    qputenv("FAKE_TRAIN_MODE", "finish");
    remote::LocalTarget target(relative, runsRoot());
    auto run = target.launch({"relative", "t", "{}"});
    QVERIFY2(run, run ? "" : run.error().toString().c_str());
    QVERIFY(waitFor([&] { return !target.status(run->runDir)->processAlive; }));
    QCOMPARE(target.status(run->runDir)->state, core::RunState::Finished);
}

void TestLocalTarget::finishedRunStatusAndMetrics()
{
    qputenv("FAKE_TRAIN_STEPS", "5");
    const auto run = launch("finish");
    qunsetenv("FAKE_TRAIN_STEPS");
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    QVERIFY(waitFor([&] { return !target.status(run.runDir)->processAlive; }));
    auto status = target.status(run.runDir);
    QCOMPARE(status->state, core::RunState::Finished);
    QCOMPARE(status->exitCode, 0);
    QCOMPARE(status->status, std::string("finished"));
    auto chunk = target.readMetrics(run.runDir, 0, 1 << 20);
    QVERIFY(chunk);
    QCOMPARE(static_cast<int64_t>(chunk->bytes.size()), chunk->fileSize);
    core::MetricsLineReader reader;
    int steps = 0;
    for (const auto& record : reader.feed(chunk->bytes).records)
        steps += std::holds_alternative<core::StepRecord>(record);
    QCOMPARE(steps, 5);
    QCOMPARE(reader.malformedLines(), int64_t(0));
}

void TestLocalTarget::readMetricsByOffset_data()
{
    QTest::addColumn<int64_t>("offset");
    QTest::addColumn<int64_t>("maxBytes");
    QTest::addColumn<QByteArray>("expected");  // "!" = error
    QTest::newRow("from start") << int64_t(0) << int64_t(100) << QByteArray("line one\nline two\npart");
    QTest::newRow("capped") << int64_t(0) << int64_t(4) << QByteArray("line");
    QTest::newRow("from the middle of a line") << int64_t(5) << int64_t(100) << QByteArray("one\nline two\npart");
    QTest::newRow("at the end") << int64_t(22) << int64_t(100) << QByteArray("");
    QTest::newRow("past the end (truncated file)") << int64_t(23) << int64_t(100) << QByteArray("!");
}

void TestLocalTarget::readMetricsByOffset()
{
    QFETCH(int64_t, offset);
    QFETCH(int64_t, maxBytes);
    QFETCH(QByteArray, expected);
    const std::string dir = m_dir.filePath(QStringLiteral("offsets")).toStdString();
    QDir().mkpath(QString::fromStdString(dir));
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    std::remove((dir + "/metrics.jsonl").c_str());
    auto none = target.readMetrics(dir, 0, 100);  // not written yet: empty, not an error
    QVERIFY(none && none->bytes.empty() && none->fileSize == 0);
    writeAll(dir + "/metrics.jsonl", "line one\nline two\npart");
    auto chunk = target.readMetrics(dir, offset, maxBytes);
    if (expected == "!") {
        QVERIFY(!chunk);
        QCOMPARE(chunk.error().code, core::ErrorCode::Corrupt);
        return;
    }
    QVERIFY(chunk);
    QCOMPARE(QByteArray::fromStdString(chunk->bytes), expected);
    QCOMPARE(chunk->offset, offset);
    QCOMPARE(chunk->fileSize, int64_t(22));
}

void TestLocalTarget::statusToleratesTornFile_data()
{
    QTest::addColumn<QByteArray>("content");  // "<missing>" = no file
    QTest::addColumn<QString>("state");
    QTest::addColumn<QString>("word");
    QTest::addColumn<int>("exitCode");
    QTest::newRow("missing") << QByteArray("<missing>") << "failed" << "" << -1;
    QTest::newRow("empty") << QByteArray("") << "failed" << "" << -1;
    QTest::newRow("half written") << QByteArray("{\"status\": \"fini") << "failed" << "" << -1;
    QTest::newRow("not an object") << QByteArray("[1, 2]") << "failed" << "" << -1;
    QTest::newRow("finished") << QByteArray("{\"status\": \"finished\", \"exit_code\": 0, \"message\": \"\", \"step\": 9, \"pid\": 1, \"updated\": 1}")
                              << "finished" << "finished" << 0;
    QTest::newRow("oom") << QByteArray("{\"status\": \"oom\", \"exit_code\": 3, \"message\": \"CUDA OOM\"}") << "failed" << "oom" << 3;
    QTest::newRow("stopped") << QByteArray("{\"status\": \"stopped\", \"exit_code\": 5}") << "cancelled" << "stopped" << 5;
    QTest::newRow("running, exit_code null, process gone") << QByteArray("{\"status\": \"running\", \"exit_code\": null}") << "failed" << "running" << -1;
    QTest::newRow("wrong types") << QByteArray("{\"status\": 3, \"exit_code\": \"x\"}") << "failed" << "" << -1;
}

void TestLocalTarget::statusToleratesTornFile()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, state);
    QFETCH(QString, word);
    QFETCH(int, exitCode);
    const std::string dir = m_dir.filePath(QStringLiteral("status-%1").arg(QTest::currentDataTag()))
                                .toStdString();
    QDir().mkpath(QString::fromStdString(dir));
    // A pid that is certainly not running: a child we started and reaped.
    const pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, nullptr, 0);
    writeAll(dir + "/pid", std::to_string(gone) + "\n");
    if (content != "<missing>")
        writeAll(dir + "/status.json", content.toStdString());
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    auto status = target.status(dir);
    QVERIFY(status);
    QVERIFY(!status->processAlive);
    QCOMPARE(QString::fromUtf8(core::runStateName(status->state)), state);
    QCOMPARE(QString::fromStdString(status->status), word);
    QCOMPARE(status->exitCode, exitCode);
    QCOMPARE(target.status(dir + "/nope").error().code, core::ErrorCode::NotFound);
}

// `moe-train --resume` started by hand from a shell records the shell's process group in DIR/pid,
// which lives on after the trainer ended (issue 20 item 6: watch never ended). status.json names
// the process that wrote it: its final word with that process gone ends the run; a live writer of
// "running" is a run even while DIR/pid still names the stopped run's dead group.
void TestLocalTarget::groupOutlivingItsTrainer_data()
{
    QTest::addColumn<QString>("group");   // "alive" (this test's own group) or "gone"
    QTest::addColumn<QString>("status");
    QTest::addColumn<QString>("writer");  // "alive" (this process), "gone", or "none" (no pid key)
    QTest::addColumn<QString>("state");
    QTest::newRow("finished, writer gone, group lives on") << "alive" << "finished" << "gone" << "finished";
    QTest::newRow("stopped, writer gone, group lives on") << "alive" << "stopped" << "gone" << "cancelled";
    QTest::newRow("running, writer alive, old group gone") << "gone" << "running" << "alive" << "running";
    QTest::newRow("finished, writer still exiting") << "alive" << "finished" << "alive" << "running";
    QTest::newRow("finished, writer alive (pid reused), group gone") << "gone" << "finished" << "alive" << "finished";
    QTest::newRow("no writer named: the group decides") << "alive" << "finished" << "none" << "running";
    QTest::newRow("running, writer gone, group gone: lost") << "gone" << "running" << "gone" << "failed";
}

void TestLocalTarget::groupOutlivingItsTrainer()
{
    QFETCH(QString, group);
    QFETCH(QString, status);
    QFETCH(QString, writer);
    QFETCH(QString, state);
    const std::string dir = m_dir.filePath(QStringLiteral("outlive-%1").arg(QTest::currentDataTag())).toStdString();
    QDir().mkpath(QString::fromStdString(dir));
    const pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, nullptr, 0);
    writeAll(dir + "/pid", std::to_string(group == "alive" ? getpgrp() : gone) + "\n");
    std::string json = "{\"status\": \"" + status.toStdString() + "\", \"exit_code\": 0";
    if (writer != "none")
        json += ", \"pid\": " + std::to_string(writer == "alive" ? getpid() : gone);
    writeAll(dir + "/status.json", json + "}");
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    auto result = target.status(dir);
    QVERIFY(result);
    QCOMPARE(QString::fromUtf8(core::runStateName(result->state)), state);
    QCOMPARE(result->processAlive, state == "running");
}

void TestLocalTarget::cancelEndsWholeGroup_data()
{
    QTest::addColumn<QByteArray>("mode");
    QTest::addColumn<int>("graceMs");
    QTest::addColumn<QString>("finalWord");
    QTest::newRow("trainer stops on SIGTERM") << QByteArray("graceful") << 5000 << "stopped";
    QTest::newRow("grandchild ignores SIGTERM") << QByteArray("stubborn") << 300 << "running";
}

void TestLocalTarget::cancelEndsWholeGroup()
{
    QFETCH(QByteArray, mode);
    QFETCH(int, graceMs);
    QFETCH(QString, finalWord);
    const auto run = launch(mode.constData());
    remote::LocalTarget target(kFakeTrainer, runsRoot());
    const auto pgid = static_cast<pid_t>(run.pid);
    pid_t grandchild = 0;
    if (mode == "stubborn") {
        QVERIFY(waitFor([&] { return !readAll(run.runDir + "/grandchild.pid").empty(); }));
        grandchild = static_cast<pid_t>(std::stol(readAll(run.runDir + "/grandchild.pid")));
        QCOMPARE(groupAndSession(grandchild).first, static_cast<long>(pgid));
    }
    QVERIFY(waitFor([&] { return readAll(run.runDir + "/metrics.jsonl").find("\"step\"") != std::string::npos; }));

    QElapsedTimer timer;
    timer.start();
    auto cancelled = target.cancel(run.runDir, std::chrono::milliseconds(graceMs));
    QVERIFY2(cancelled, cancelled ? "" : cancelled.error().toString().c_str());
    if (mode == "graceful")
        QVERIFY(timer.elapsed() < graceMs);  // did not need SIGKILL
    // Nothing of the group runs any more: not the trainer, not the grandchild.
    QVERIFY2(remote::liveGroupMembers(pgid).empty(),
             remote::describeMembers(remote::liveGroupMembers(pgid)).c_str());
    QVERIFY(kill(static_cast<pid_t>(run.pid), 0) != 0 || remote::liveGroupMembers(pgid).empty());
    if (grandchild)
        QVERIFY(kill(grandchild, 0) != 0 || readAll("/proc/" + std::to_string(grandchild) + "/stat").find(") Z") != std::string::npos);
    auto status = target.status(run.runDir);
    QVERIFY(!status->processAlive);
    QCOMPARE(QString::fromStdString(status->status), finalWord);
    if (mode == "graceful") {
        QCOMPARE(status->state, core::RunState::Cancelled);
        QCOMPARE(status->exitCode, 5);
    }
    QVERIFY(target.cancel(run.runDir, std::chrono::milliseconds(100)));  // idempotent
}

QTEST_GUILESS_MAIN(TestLocalTarget)
#include "test_local_target.moc"
