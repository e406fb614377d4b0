// RunStore: resumable ingest, offset guard, refusal of newer/locked/foreign files (left
// byte-identical), migration, id lookup. Every test uses its own temp file.
#include "core/run_store.h"

#include <QCryptographicHash>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace wb::core;

Q_DECLARE_METATYPE(wb::core::RunState)

namespace {

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

void writeAll(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// A metrics stream as moe-train writes it: meta, steps with every field set, events, one
// malformed line, end. Values vary per step so a swapped or shifted row cannot compare equal.
struct Stream {
    std::string bytes;
    std::vector<StepRecord> steps;
    int64_t events = 0;
    int64_t malformed = 0;
};

Stream makeStream(int numSteps)
{
    Stream s;
    MetaRecord meta;
    meta.runId = "r";
    meta.configHash = "0123456789abcdef";
    meta.worldSize = 2;
    meta.layout = "tp1 pp1 cp1 ep2 etp1 dp2";
    meta.device = "cpu";
    meta.dataSource = "real";
    meta.versions["moe-train"] = "0.1.0";
    s.bytes += toJsonLine(meta) + "\n";
    for (int i = 1; i <= numSteps; ++i) {
        StepRecord r;
        r.step = i;
        r.time = 1.7e9 + i * 0.25;
        r.stepMs = 100.0 + i;
        r.dataMs = 1.0 + i * 0.01;
        r.visionMs = 10.5 + i;
        r.projectorMs = 0.5;
        r.decoderMs = 50.25 + i;
        r.backwardMs = 30.0 + i;
        r.optimizerMs = 2.0;
        r.images = 4 + i % 3;
        r.imageTokens = 64 * r.images;
        r.textTokens = 200 + i;
        r.padTokens = i % 7;
        r.effectiveTokens = r.imageTokens + r.textTokens;
        r.skippedImages = i % 11 == 0 ? 1 : 0;
        r.loss = 6.0 / (1.0 + i * 0.01);
        r.auxLoss = 0.01 * i;
        r.gradNorm = 1.5 - i * 0.001;
        r.lr = 1e-3 * i / numSteps;
        r.memAllocGib = 0.1 * i;
        r.memReservedGib = 0.2 * i;
        r.memPeakGib = 0.3 * i;
        r.tokensPerSPerGpu = 1234.5 + i;
        r.tflopsPerGpu = 0.5 + i * 0.001;
        r.mfu = 0.001 * i;
        s.bytes += toJsonLine(r) + "\n";
        s.steps.push_back(r);
        if (i % 25 == 0) {
            EventRecord e;
            e.time = r.time;
            e.level = "info";
            e.msg = "checkpoint saved at step " + std::to_string(i);
            e.step = i;
            s.bytes += toJsonLine(e) + "\n";
            ++s.events;
        }
        if (i == numSteps / 2) {
            s.bytes += "{\"v\":1,\"type\":\"step\",\"step\": this is not json\n";
            ++s.malformed;
        }
    }
    EndRecord end;
    end.status = "finished";
    end.exitCode = 0;
    end.step = numSteps;
    s.bytes += toJsonLine(end) + "\n";
    return s;
}

bool sameStep(const StepRecord& a, const StepRecord& b)
{
    return a.step == b.step && a.time == b.time && a.stepMs == b.stepMs && a.dataMs == b.dataMs &&
           a.visionMs == b.visionMs && a.projectorMs == b.projectorMs &&
           a.decoderMs == b.decoderMs && a.backwardMs == b.backwardMs &&
           a.optimizerMs == b.optimizerMs && a.images == b.images &&
           a.imageTokens == b.imageTokens && a.textTokens == b.textTokens &&
           a.padTokens == b.padTokens && a.effectiveTokens == b.effectiveTokens &&
           a.skippedImages == b.skippedImages && a.loss == b.loss && a.auxLoss == b.auxLoss &&
           a.gradNorm == b.gradNorm && a.lr == b.lr && a.memAllocGib == b.memAllocGib &&
           a.memReservedGib == b.memReservedGib && a.memPeakGib == b.memPeakGib &&
           a.tokensPerSPerGpu == b.tokensPerSPerGpu && a.tflopsPerGpu == b.tflopsPerGpu &&
           a.mfu == b.mfu;
}

std::unique_ptr<RunStore> openOrFail(const std::string& path)
{
    auto store = RunStore::open(path);
    if (!store)
        qWarning("%s", store.error().toString().c_str());
    return store ? std::move(store).value() : nullptr;
}

// Raw SQLite connection for the tests that must act as "another process".
struct RawDb {
    sqlite3* db = nullptr;
    explicit RawDb(const std::string& path) { sqlite3_open(path.c_str(), &db); }
    ~RawDb() { sqlite3_close(db); }
    int exec(const std::string& sql) { return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); }
};

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const char* name) const { return m_dir.filePath(QString::fromUtf8(name)).toStdString(); }

private slots:
    void ingestResumesFromAnyOffset_data();
    void ingestResumesFromAnyOffset();
    void realMetricsFileIngestsExactly();
    void offsetMismatchRefused_data();
    void offsetMismatchRefused();
    void metaAndEndRecords();
    void newerSchemaRefusedUntouched_data();
    void newerSchemaRefusedUntouched();
    void foreignSqliteRefusedUntouched_data();
    void foreignSqliteRefusedUntouched();
    void lockedStoreRefused_data();
    void lockedStoreRefused();
    void foreignFileRefused_data();
    void foreignFileRefused();
    void migratesEmptyFile();
    void resolveRunId_data();
    void resolveRunId();
    void listRunsNewestFirst();
    void migratesVersion1KeepingRuns();
    void predictionRoundTrip();
    void badPredictionNamesTheProblem_data();
    void badPredictionNamesTheProblem();
    void runStateRoundTrip_data();
    void runStateRoundTrip();
    void unknownStatusTextReadsAsUnknown();
};

void TestRunStore::ingestResumesFromAnyOffset_data()
{
    QTest::addColumn<int>("steps");
    QTest::addColumn<int>("minGrowth");
    QTest::addColumn<int>("maxGrowth");
    QTest::addColumn<int>("reopenEvery");
    QTest::addColumn<unsigned>("seed");
    // The writer appends `growth` bytes at a time (cutting lines anywhere); the reader ingests
    // everything from the stored offset to the current end, as RunFollower does.
    QTest::newRow("byte-sized appends") << 60 << 1 << 8 << 7 << 1u;
    QTest::newRow("sub-line appends") << 200 << 1 << 300 << 5 << 2u;
    QTest::newRow("multi-line appends") << 400 << 100 << 5000 << 3 << 3u;
    QTest::newRow("one big append") << 300 << 1 << 1 << 1 << 4u;
}

void TestRunStore::ingestResumesFromAnyOffset()
{
    QFETCH(int, steps);
    QFETCH(int, minGrowth);
    QFETCH(int, maxGrowth);
    QFETCH(int, reopenEvery);
    QFETCH(unsigned, seed);
    const Stream stream = makeStream(steps);
    const std::string db = path(QTest::currentDataTag()) + ".sqlite";

    auto store = openOrFail(db);
    QVERIFY(store);
    auto id = store->createRun({"", "resume", "local", "/tmp/x", "{}", "h"});
    QVERIFY(id);

    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> growth(minGrowth, maxGrowth);
    size_t written = minGrowth == maxGrowth ? stream.bytes.size() : 0;
    int round = 0;
    int64_t stepsAdded = 0;
    std::vector<StepRecord> returned;  // what each ingest said it stored, in order
    int64_t eventsReturned = 0;
    while (true) {
        written = std::min(stream.bytes.size(), written + static_cast<size_t>(growth(rng)));
        if (++round % reopenEvery == 0) {
            store.reset();  // a new watcher process: everything must come from the file
            store = openOrFail(db);
            QVERIFY(store);
        }
        auto run = store->run(*id);
        QVERIFY(run);
        const int64_t offset = run->streamOffset;
        QVERIFY(offset <= static_cast<int64_t>(written));
        auto result = store->ingest(*id, offset,
                                    std::string_view(stream.bytes).substr(offset, written - offset));
        QVERIFY2(result, result ? "" : result.error().toString().c_str());
        stepsAdded += result->stepsAdded;
        QCOMPARE(static_cast<int64_t>(result->steps.size()), result->stepsAdded);
        QCOMPARE(static_cast<int64_t>(result->events.size()), result->eventsAdded);
        QCOMPARE(result->meta.has_value(), result->sawMeta);
        returned.insert(returned.end(), result->steps.begin(), result->steps.end());
        eventsReturned += static_cast<int64_t>(result->events.size());
        QVERIFY(result->newOffset <= static_cast<int64_t>(written));
        // The offset only ever lands just after a newline.
        QVERIFY(result->newOffset == 0 || stream.bytes[result->newOffset - 1] == '\n');
        if (written == stream.bytes.size() && result->newOffset == static_cast<int64_t>(written))
            break;
    }

    auto stored = store->steps(*id);
    QVERIFY(stored);
    QCOMPARE(stored->size(), stream.steps.size());
    QCOMPARE(stepsAdded, static_cast<int64_t>(stream.steps.size()));
    for (size_t i = 0; i < stored->size(); ++i)
        QVERIFY2(sameStep((*stored)[i], stream.steps[i]), qPrintable(QString::number(i)));
    // ingest's records (what RunFollower reports) are exactly the stored rows: none from a torn
    // tail, none twice across chunk boundaries.
    QCOMPARE(returned.size(), stored->size());
    for (size_t i = 0; i < returned.size(); ++i)
        QVERIFY2(sameStep(returned[i], (*stored)[i]), qPrintable(QString::number(i)));
    auto events = store->events(*id);
    QVERIFY(events);
    QCOMPARE(static_cast<int64_t>(events->size()), stream.events);
    QCOMPARE(eventsReturned, stream.events);
    auto run = store->run(*id);
    QCOMPARE(run->malformedLines, stream.malformed);
    QCOMPARE(run->streamOffset, static_cast<int64_t>(stream.bytes.size()));
    QCOMPARE(run->steps, static_cast<int64_t>(stream.steps.size()));
    QCOMPARE(*run->lastLoss, stream.steps.back().loss);
}

// A metrics.jsonl captured from a real moe-train run (tests/core/test_run_store_metrics.jsonl),
// fed in random chunks: the store holds exactly its step lines.
void TestRunStore::realMetricsFileIngestsExactly()
{
    const std::string fixture = std::string(WB_SOURCE_DIR) + "/tests/core/test_run_store_metrics.jsonl";
    const std::string bytes = readAll(fixture);
    if (bytes.empty())
        QSKIP("no captured moe-train metrics fixture");
    std::vector<int64_t> expected;
    {
        std::istringstream lines(bytes);
        std::string line;
        while (std::getline(lines, line))
            if (auto r = parseMetricsLine(line); r && std::holds_alternative<StepRecord>(*r))
                expected.push_back(std::get<StepRecord>(*r).step);
    }
    QVERIFY(!expected.empty());
    const std::string db = path("real.sqlite");
    auto store = openOrFail(db);
    auto id = store->createRun({"", "real", "local", "", "{}", ""});
    std::mt19937 rng(7);
    size_t written = 0;
    while (true) {
        written = std::min(bytes.size(), written + std::uniform_int_distribution<size_t>(1, 700)(rng));
        store = openOrFail(db);
        const int64_t offset = store->run(*id)->streamOffset;
        auto r = store->ingest(*id, offset, std::string_view(bytes).substr(offset, written - offset));
        QVERIFY(r);
        if (written == bytes.size() && r->newOffset == static_cast<int64_t>(bytes.size()))
            break;
    }
    auto stored = store->steps(*id);
    QCOMPARE(stored->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
        QCOMPARE((*stored)[i].step, expected[i]);
}

void TestRunStore::offsetMismatchRefused_data()
{
    QTest::addColumn<int64_t>("delta");
    QTest::newRow("replayed chunk (behind)") << int64_t(-1);
    QTest::newRow("skipped bytes (ahead)") << int64_t(+1);
    QTest::newRow("start over at 0") << int64_t(0);
}

void TestRunStore::offsetMismatchRefused()
{
    QFETCH(int64_t, delta);
    const Stream stream = makeStream(20);
    auto store = openOrFail(path("mismatch.sqlite"));
    auto id = store->createRun({"", "m", "local", "", "{}", ""});
    const size_t half = stream.bytes.size() / 2;
    auto first = store->ingest(*id, 0, std::string_view(stream.bytes).substr(0, half));
    QVERIFY(first);
    const int64_t stored = first->newOffset;
    const int64_t stepsBefore = store->run(*id)->steps;
    QVERIFY(stored > 0);

    const int64_t offset = delta == 0 ? 0 : stored + delta;
    auto again = store->ingest(*id, offset, std::string_view(stream.bytes).substr(offset));
    QVERIFY(!again);
    // Behind: another follower stored it first (Busy: read again); ahead: bytes would be skipped.
    QCOMPARE(again.error().code, offset < stored ? ErrorCode::Busy : ErrorCode::InvalidArgument);
    QVERIFY(again.error().message.find(std::to_string(stored)) != std::string::npos);
    QCOMPARE(store->run(*id)->streamOffset, stored);
    QCOMPARE(store->run(*id)->steps, stepsBefore);
}

void TestRunStore::metaAndEndRecords()
{
    const Stream stream = makeStream(3);
    auto store = openOrFail(path("meta.sqlite"));
    auto id = store->createRun({"", "m", "local", "", "{\"a\":1}", "abc"});
    QCOMPARE(store->meta(*id).error().code, ErrorCode::NotFound);
    auto r = store->ingest(*id, 0, stream.bytes);
    QVERIFY(r);
    QVERIFY(r->sawMeta);
    QVERIFY(r->end);
    QCOMPARE(r->end->status, std::string("finished"));
    auto meta = store->meta(*id);
    QVERIFY(meta);
    QCOMPARE(meta->layout, std::string("tp1 pp1 cp1 ep2 etp1 dp2"));
    QCOMPARE(meta->versions.at("moe-train"), std::string("0.1.0"));
    QCOMPARE(store->run(*id)->dataSource, std::string("real"));
    QCOMPARE(*store->configJson(*id), std::string("{\"a\":1}"));
}

void TestRunStore::newerSchemaRefusedUntouched_data()
{
    QTest::addColumn<QString>("journalMode");
    QTest::newRow("WAL store from a newer workbench") << QStringLiteral("wal");
    QTest::newRow("rollback-journal file") << QStringLiteral("delete");
}

void TestRunStore::newerSchemaRefusedUntouched()
{
    QFETCH(QString, journalMode);
    const std::string db = path("newer.sqlite") + journalMode.toStdString();
    {
        RawDb raw(db);
        QCOMPARE(raw.exec("PRAGMA journal_mode=" + journalMode.toStdString()), SQLITE_OK);
        QCOMPARE(raw.exec("CREATE TABLE future(x); PRAGMA user_version = 7"), SQLITE_OK);
    }
    const std::string before = readAll(db);
    auto store = RunStore::open(db);
    QVERIFY(!store);
    const Error& e = store.error();
    QCOMPARE(e.code, ErrorCode::Incompatible);
    const std::string text = e.toString();
    QVERIFY2(text.find(db) != std::string::npos, text.c_str());
    QVERIFY2(text.find('7') != std::string::npos, text.c_str());
    QVERIFY2(text.find(std::to_string(kStoreSchemaVersion)) != std::string::npos, text.c_str());
    QVERIFY2(text.find("--db") != std::string::npos && text.find("pgrade") != std::string::npos,
             text.c_str());
    QVERIFY(readAll(db) == before);
    RawDb check(db);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(check.db, "PRAGMA journal_mode", -1, &stmt, nullptr);
    QCOMPARE(sqlite3_step(stmt), SQLITE_ROW);
    QCOMPARE(QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))), journalMode);
    sqlite3_finalize(stmt);
}

void TestRunStore::lockedStoreRefused_data()
{
    QTest::addColumn<bool>("existingStore");
    QTest::newRow("existing WAL store, writer mid-transaction") << true;
    QTest::newRow("new rollback-journal file, exclusive lock") << false;
}

void TestRunStore::lockedStoreRefused()
{
    QFETCH(bool, existingStore);
    const std::string db = path(existingStore ? "locked-store.sqlite" : "locked-new.sqlite");
    if (existingStore) {
        auto store = openOrFail(db);
        QVERIFY(store);
        QVERIFY(store->createRun({"", "a", "local", "", "{}", ""}));
    } else {
        RawDb raw(db);
        QCOMPARE(raw.exec("CREATE TABLE other(x)"), SQLITE_OK);
    }
    const std::string before = readAll(db);
    RawDb holder(db);
    QCOMPARE(holder.exec("BEGIN EXCLUSIVE"), SQLITE_OK);
    QElapsedTimer timer;
    timer.start();
    auto store = RunStore::open(db);
    QVERIFY(!store);
    QCOMPARE(store.error().code, ErrorCode::Busy);
    QVERIFY2(store.error().message.find("locked") != std::string::npos, store.error().message.c_str());
    QVERIFY(timer.elapsed() < 10000);  // the busy timeout, not a hang
    QCOMPARE(holder.exec("ROLLBACK"), SQLITE_OK);
    QVERIFY(readAll(db) == before);
}

void TestRunStore::foreignFileRefused_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("text file") << QByteArray("this is a config, not a database\n").repeated(40);
    std::mt19937 rng(3);
    QByteArray noise(8192, '\0');
    for (auto& c : noise)
        c = static_cast<char>(rng());
    QTest::newRow("random bytes") << noise;
}

void TestRunStore::foreignFileRefused()
{
    QFETCH(QByteArray, content);
    const std::string db = path("foreign") + std::to_string(content.size());
    writeAll(db, content.toStdString());
    auto store = RunStore::open(db);
    QVERIFY(!store);
    QCOMPARE(store.error().code, ErrorCode::Corrupt);
    QVERIFY(store.error().message.find("--db") != std::string::npos);
    QVERIFY(readAll(db) == content.toStdString());
}

// Another program's SQLite file given as --db (issue 20 item 10): even the read-only `runs` added
// six tables and set user_version. A database with tables but no store schema, or a negative
// user_version (which indexed past the migrations), is refused and left byte for byte.
void TestRunStore::foreignSqliteRefusedUntouched_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QString>("says");
    QTest::newRow("another program's tables") << QStringLiteral("CREATE TABLE notes(x); CREATE TABLE tags(y)")
                                              << QStringLiteral("tables notes, tags");
    QTest::newRow("user_version -1") << QStringLiteral("PRAGMA user_version = -1") << QStringLiteral("user_version -1");
}

void TestRunStore::foreignSqliteRefusedUntouched()
{
    QFETCH(QString, sql);
    QFETCH(QString, says);
    const std::string db = path(("foreign-sqlite-" + std::to_string(qHash(sql)) + ".sqlite").c_str());
    {
        RawDb raw(db);
        QCOMPARE(raw.exec(sql.toStdString()), SQLITE_OK);
    }
    const std::string before = readAll(db);
    auto store = RunStore::open(db);
    QVERIFY(!store);
    QCOMPARE(store.error().code, ErrorCode::Incompatible);
    const std::string text = store.error().toString();
    QVERIFY2(text.find("not a run store") != std::string::npos && text.find(says.toStdString()) != std::string::npos &&
                 text.find("--db") != std::string::npos,
             text.c_str());
    QVERIFY(readAll(db) == before);
}

void TestRunStore::migratesEmptyFile()
{
    const std::string db = path("empty.sqlite");
    writeAll(db, "");
    {
        auto store = openOrFail(db);
        QVERIFY(store);
        QVERIFY(store->createRun({"", "x", "local", "", "{}", ""}));
    }
    RawDb raw(db);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(raw.db, "SELECT (SELECT user_version FROM pragma_user_version), "
                               "(SELECT journal_mode FROM pragma_journal_mode), "
                               "(SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name IN "
                               "('runs','configs','meta','steps','events'))",
                       -1, &stmt, nullptr);
    QCOMPARE(sqlite3_step(stmt), SQLITE_ROW);
    QCOMPARE(sqlite3_column_int(stmt, 0), kStoreSchemaVersion);
    QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1))), QByteArray("wal"));
    QCOMPARE(sqlite3_column_int(stmt, 2), 5);
    sqlite3_finalize(stmt);

    // A store in a folder that does not exist yet (first start of the workbench).
    auto nested = RunStore::open(path("a/b/c/runs.sqlite"));
    QVERIFY(nested);
}

void TestRunStore::resolveRunId_data()
{
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("expected");  // an id, or "!code"
    QTest::newRow("exact") << "20260101-120000-aaaa" << "20260101-120000-aaaa";
    QTest::newRow("exact that is also a prefix") << "20260101-120000-aa" << "20260101-120000-aa";
    QTest::newRow("unique prefix") << "20260101-13" << "20260101-130000-bbbb";
    QTest::newRow("ambiguous prefix") << "20260101-12" << "!invalid";
    QTest::newRow("unknown") << "1999" << "!notfound";
    QTest::newRow("empty") << "" << "!invalid";
    QTest::newRow("LIKE wildcard is literal") << "2026%" << "!notfound";
}

void TestRunStore::resolveRunId()
{
    QFETCH(QString, query);
    QFETCH(QString, expected);
    auto store = openOrFail(path("resolve.sqlite"));
    if (store->listRuns()->empty()) {
        for (const char* id : {"20260101-120000-aaaa", "20260101-120000-aa", "20260101-130000-bbbb"})
            QVERIFY(store->createRun({id, "n", "local", "", "{}", ""}));
    }
    auto r = store->resolveRunId(query.toStdString());
    if (expected.startsWith(u'!')) {
        QVERIFY(!r);
        QCOMPARE(r.error().code, expected == u"!invalid" ? ErrorCode::InvalidArgument : ErrorCode::NotFound);
    } else {
        QVERIFY(r);
        QCOMPARE(QString::fromStdString(*r), expected);
    }
}

void TestRunStore::listRunsNewestFirst()
{
    auto store = openOrFail(path("list.sqlite"));
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        auto id = store->createRun({"", "run" + std::to_string(i), "local", "", "{}", ""});
        QVERIFY(id);
        QVERIFY(QRegularExpression(QStringLiteral("^\\d{8}-\\d{6}-[0-9a-f]{4}$"))
                    .match(QString::fromStdString(*id)).hasMatch());
        ids.push_back(*id);
        QTest::qWait(5);
    }
    QCOMPARE(store->createRun({ids[0], "dup", "local", "", "{}", ""}).error().code,
             ErrorCode::InvalidArgument);
    const Stream stream = makeStream(10);
    QVERIFY(store->ingest(ids[1], 0, stream.bytes));
    QVERIFY(store->setStatus(ids[1], RunState::Finished, 0));
    auto runs = store->listRuns();
    QVERIFY(runs);
    QCOMPARE(runs->size(), size_t(3));
    QCOMPARE((*runs)[0].id, ids[2]);
    QCOMPARE((*runs)[1].id, ids[1]);
    QCOMPARE((*runs)[2].id, ids[0]);
    QCOMPARE((*runs)[1].steps, int64_t(10));
    QCOMPARE((*runs)[1].status, RunState::Finished);
    QCOMPARE(*(*runs)[1].lastLoss, stream.steps.back().loss);
    QVERIFY(!(*runs)[0].lastLoss);
    QCOMPARE(store->setStatus("nope", RunState::Failed, 1).error().code, ErrorCode::NotFound);
}

void TestRunStore::migratesVersion1KeepingRuns()
{
    // A version-1 store: today's store with the v1->v2 ... v4->v5 migrations undone (v1's
    // SQL is unchanged). The old run becomes a moe-train run with no source file, never synced.
    const std::string db = path("v1.sqlite");
    {
        auto fresh = openOrFail(db);
        QVERIFY(fresh);
        QVERIFY(fresh->createRun({"old-run", "kept", "local", "", "{}", ""}));
    }
    {
        RawDb raw(db);
        QCOMPARE(raw.exec("DROP TABLE gpu_samples; DROP TABLE predictions; ALTER TABLE runs DROP COLUMN kind; "
                          "ALTER TABLE runs DROP COLUMN source_path; ALTER TABLE runs DROP COLUMN source_state; "
                          "ALTER TABLE runs DROP COLUMN synced_at; PRAGMA user_version = 1;"),
                 SQLITE_OK);
    }
    auto store = openOrFail(db);
    QVERIFY(store);
    auto kept = store->run("old-run");
    QVERIFY(kept);
    QCOMPARE(QString::fromStdString(kept->name), QStringLiteral("kept"));
    QCOMPARE(kept->kind, std::string(kRunKindMoeTrain));
    QCOMPARE(kept->sourcePath, std::string());
    QCOMPARE(kept->syncedAt, 0.0);
    QVERIFY(store->markSynced("old-run", 1.5e9));
    QCOMPARE(store->run("old-run")->syncedAt, 1.5e9);
    QCOMPARE(*store->sourceState("old-run"), std::string());
    auto none = store->prediction("old-run");
    QVERIFY(none);
    QVERIFY(!none->has_value());
}

void TestRunStore::predictionRoundTrip()
{
    auto store = openOrFail(path("pred.sqlite"));
    QVERIFY(store);
    auto id = store->createRun({"", "planned", "local", "", "{}", ""});
    QVERIFY(id);
    RunPrediction p;
    p.source = "moe-workbench planner test";
    p.hardware = "h200";
    p.gpus = 8;
    p.stepMs = 1234.5;
    p.tokensPerSPerGpu = 4321.0;
    p.tflopsPerGpu = 250.25;
    p.mfu = 0.2529;
    p.memoryGib = 97.5;
    p.detailJson = R"({"memory_gib":{"total":97.5}})";
    // Through the sidecar file format first, then the store.
    auto parsed = parsePrediction(predictionToJson(p));
    QVERIFY2(parsed, parsed ? "" : parsed.error().toString().c_str());
    QVERIFY(store->setPrediction(*id, *parsed));
    auto back = store->prediction(*id);
    QVERIFY(back && back->has_value());
    const RunPrediction& q = **back;
    QCOMPARE(q.source, p.source);
    QCOMPARE(q.hardware, p.hardware);
    QCOMPARE(q.gpus, 8);
    QCOMPARE(q.stepMs, p.stepMs);
    QCOMPARE(q.tokensPerSPerGpu, p.tokensPerSPerGpu);
    QCOMPARE(q.tflopsPerGpu, p.tflopsPerGpu);
    QCOMPARE(q.mfu, p.mfu);
    QCOMPARE(q.memoryGib, p.memoryGib);
    QCOMPARE(q.detailJson, p.detailJson);
    QCOMPARE(store->setPrediction("no-such-run", p).error().code, ErrorCode::NotFound);
}

void TestRunStore::badPredictionNamesTheProblem_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("not json") << "step_ms: 3" << "not a prediction";
    QTest::newRow("no version") << R"({"gpus":1,"step_ms":1,"tokens_per_s_per_gpu":1,"tflops_per_gpu":1,"mfu":0.1,"memory_gib":1})" << "prediction_version";
    QTest::newRow("newer") << R"({"prediction_version":99})" << "newer";
    QTest::newRow("negative") << R"({"prediction_version":1,"gpus":1,"step_ms":-1,"tokens_per_s_per_gpu":1,"tflops_per_gpu":1,"mfu":0.1,"memory_gib":1})" << "step_ms: must be >= 0";
    QTest::newRow("mfu percent") << R"({"prediction_version":1,"gpus":1,"step_ms":1,"tokens_per_s_per_gpu":1,"tflops_per_gpu":1,"mfu":25,"memory_gib":1})" << "fraction";
    QTest::newRow("missing") << R"({"prediction_version":1,"gpus":2})" << "memory_gib: missing";
    QTest::newRow("zero gpus") << R"({"prediction_version":1,"gpus":0,"step_ms":1,"tokens_per_s_per_gpu":1,"tflops_per_gpu":1,"mfu":0.1,"memory_gib":1})" << "gpus: must be a positive";
}

void TestRunStore::badPredictionNamesTheProblem()
{
    QFETCH(QString, json);
    QFETCH(QString, mentions);
    auto p = parsePrediction(json.toStdString());
    QVERIFY(!p);
    QVERIFY2(QString::fromStdString(p.error().message).contains(mentions),
             p.error().message.c_str());
}

// RunSummary::status is a RunState; the column keeps the words it always had (stores written by
// earlier versions read the same, and they can read ours). Every state, with its word spelt out
// here rather than taken from runStateName, so a renamed word fails.
void TestRunStore::runStateRoundTrip_data()
{
    QTest::addColumn<RunState>("state");
    QTest::addColumn<QString>("word");
    QTest::newRow("pending") << RunState::Pending << "pending";
    QTest::newRow("running") << RunState::Running << "running";
    QTest::newRow("finished") << RunState::Finished << "finished";
    QTest::newRow("failed") << RunState::Failed << "failed";
    QTest::newRow("cancelled") << RunState::Cancelled << "cancelled";
    QTest::newRow("unknown") << RunState::Unknown << "unknown";
}

void TestRunStore::runStateRoundTrip()
{
    QFETCH(RunState, state);
    QFETCH(QString, word);
    const std::string db = path("state-") + QTest::currentDataTag() + ".sqlite";
    auto store = openOrFail(db);
    QVERIFY(store);
    auto id = store->createRun({"", "s", "local", "", "{}", ""});
    QVERIFY(id);
    QCOMPARE(store->run(*id)->status, RunState::Pending);  // the schema's default word
    QVERIFY(store->setStatus(*id, state, 7));
    QCOMPARE(store->run(*id)->status, state);
    QCOMPARE(store->listRuns()->front().status, state);
    QCOMPARE(QString::fromUtf8(runStateName(state)), word);
    QCOMPARE(runStateFromName(word.toStdString()), state);
    QCOMPARE(isLive(state), state == RunState::Pending || state == RunState::Running);

    RawDb raw(db);
    sqlite3_stmt* stmt = nullptr;
    QCOMPARE(sqlite3_prepare_v2(raw.db, "SELECT status, exit_code FROM runs", -1, &stmt, nullptr), SQLITE_OK);
    QCOMPARE(sqlite3_step(stmt), SQLITE_ROW);
    QCOMPARE(QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))), word);
    QCOMPARE(sqlite3_column_int(stmt, 1), 7);
    sqlite3_finalize(stmt);
}

// A word this version does not know (a store another program wrote to, or a later version) is
// read as Unknown, not taken for any state; the row itself is left as it is.
void TestRunStore::unknownStatusTextReadsAsUnknown()
{
    const std::string db = path("alien-status.sqlite");
    auto store = openOrFail(db);
    QVERIFY(store);
    auto id = store->createRun({"", "s", "local", "", "{}", ""});
    QVERIFY(id);
    {
        RawDb raw(db);
        QCOMPARE(raw.exec("UPDATE runs SET status = 'Running ' WHERE id = '" + *id + "'"), SQLITE_OK);
    }
    QCOMPARE(store->run(*id)->status, RunState::Unknown);
    QVERIFY(!isLive(store->run(*id)->status));
    QCOMPARE(store->listRuns()->front().status, RunState::Unknown);
    RawDb raw(db);
    sqlite3_stmt* stmt = nullptr;
    QCOMPARE(sqlite3_prepare_v2(raw.db, "SELECT status FROM runs", -1, &stmt, nullptr), SQLITE_OK);
    QCOMPARE(sqlite3_step(stmt), SQLITE_ROW);
    QCOMPARE(QByteArray(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))), QByteArray("Running "));
    sqlite3_finalize(stmt);
}

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"
