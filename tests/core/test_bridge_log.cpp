// The Megatron-Bridge log reader and the import into the store, over fixture logs written in
// Megatron's exact formats (tests/core/fixtures/bridge/): a 2-node run with interleaved rank
// output, NaN and skipped iterations, a resumed run, a run killed mid-line, an older Megatron-LM
// log without TFLOP/s, and a log that is not Megatron's. Each checks the steps stored, exactly once.
#include "core/bridge/bridge_log.h"
#include "core/bridge/bridge_run_import.h"
#include "core/bridge/tensorboard_events.h"
#include "core/planner/calibration.h"
#include "core/planner/catalog.h"
#include "core/run_store.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

using namespace wb::core;
using namespace wb::core::bridge;

namespace {

std::string fixture(const char* name)
{
    return std::string(WB_SOURCE_DIR) + "/tests/core/fixtures/bridge/" + name;
}

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

planner::Catalog catalog()
{
    planner::Catalog c;
    auto r = c.addDirectory(std::string(WB_SOURCE_DIR) + "/resources/catalog");
    if (!r)
        qFatal("catalog: %s", r.error().toString().c_str());
    return c;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A TensorBoard event file as PyTorch's SummaryWriter writes add_scalar: Event{wall_time=1,
// step=2, summary=5 {value=1 {tag=1, simple_value=2}}}, each in TFRecord framing.
void varint(std::string& out, uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
template <typename T>
void raw(std::string& out, T v)
{
    out.append(reinterpret_cast<const char*>(&v), sizeof v);  // little endian (x86, aarch64)
}
std::string scalarEvent(int64_t step, double wallTime, const std::string& tag, float value)
{
    std::string v;
    v.push_back(0x0A);
    varint(v, tag.size());
    v += tag;
    v.push_back(0x15);
    raw(v, value);
    std::string summary;
    summary.push_back(0x0A);
    varint(summary, v.size());
    summary += v;
    std::string event;
    event.push_back(0x09);
    raw(event, wallTime);
    event.push_back(0x10);
    varint(event, static_cast<uint64_t>(step));
    event.push_back(0x2A);
    varint(event, summary.size());
    event += summary;
    return event;
}
void appendRecord(std::string& file, const std::string& data)
{
    std::string length;
    raw(length, static_cast<uint64_t>(data.size()));
    file += length;
    raw(file, maskedCrc32c(length));
    file += data;
    raw(file, maskedCrc32c(data));
}

}  // namespace

class TestBridgeLog : public QObject {
    Q_OBJECT

private slots:
    void twoNodesInterleaved()
    {
        LogState state;
        const std::string bytes = readAll(fixture("bridge_two_nodes.log"));
        const LogChunk chunk = parseLogChunk(bytes, state, true);
        QCOMPARE(chunk.iterations.size(), size_t(6));
        QCOMPARE(chunk.iterations.front().iteration, int64_t(10));
        QCOMPARE(chunk.iterations.front().trainIters, int64_t(60));
        QCOMPARE(chunk.iterations.front().elapsedMs, 6200.4);
        QCOMPARE(*chunk.iterations.front().tflopsPerGpu, 301.0);
        QCOMPARE(*chunk.iterations.front().globalBatchSize, int64_t(128));
        QCOMPARE(*chunk.iterations.front().consumedSamples, int64_t(1280));
        QCOMPARE(chunk.iterations.front().losses.at("lm loss"), 2.4);
        QCOMPARE(chunk.iterations.front().losses.at("load_balancing_loss"), 1.0123);
        // " [2026-11-20 10:01:10]" read as UTC.
        QCOMPARE(*chunk.iterations.front().time, 1795168870.0);
        // Three memory reports, two of them on one physical line (ranks 8 and 4).
        QCOMPARE(chunk.memory.size(), size_t(3));
        QCOMPARE(chunk.memory[1].rank, 8);
        QCOMPARE(chunk.memory[2].rank, 4);
        QVERIFY(std::abs(*chunk.memory[1].peakAllocatedGib - 66.789e9 / kGiB) < 1e-9);
        QCOMPARE(state.counts.sharedLines, int64_t(1));
        QCOMPARE(state.counts.rankPrefixedLines, state.counts.lines);
        QCOMPARE(state.facts.highestRankPrefix, 15);
        QCOMPARE(state.facts.flavor, std::string("megatron-bridge"));
        QCOMPARE(state.facts.settings.at("model.pipeline_model_parallel_size"), std::string("2"));
        QCOMPARE(state.facts.settings.at("model.moe_token_dispatcher_type"), std::string("'alltoall'"));
        QCOMPARE(state.facts.settings.at("train.global_batch_size"), std::string("128"));
        // The checkpoint line becomes an event at its step.
        bool checkpoint = false;
        for (const EventRecord& e : chunk.events)
            checkpoint = checkpoint || (e.step == 30 && e.msg.find("saved checkpoint") != std::string::npos);
        QVERIFY(checkpoint);
        QCOMPARE(chunk.consumedBytes, int64_t(bytes.size()));
    }

    // Read in arbitrary pieces with the state carried as JSON between them (what following a
    // growing log does): the same records as one read, each once.
    void chunkedReadEqualsWholeRead()
    {
        for (const char* name : {"bridge_two_nodes.log", "bridge_resumed.log", "megatron_lm_old.log"}) {
            const std::string bytes = readAll(fixture(name));
            LogState whole;
            const LogChunk all = parseLogChunk(bytes, whole, true);
            std::mt19937 rng(42);
            for (int round = 0; round < 20; ++round) {
                std::string stateJson;
                size_t offset = 0;
                int64_t line = 1;
                std::vector<IterationRecord> got;
                size_t memory = 0;
                size_t longer = 0;  // grows while a piece holds no whole line (as a follower reads more)
                while (offset < bytes.size()) {
                    const size_t piece = std::uniform_int_distribution<size_t>(1, 700)(rng) + longer;
                    const size_t end = std::min(bytes.size(), offset + piece);
                    LogState state = logStateFromJson(stateJson);
                    const LogChunk c = parseLogChunk(std::string_view(bytes).substr(offset, end - offset), state,
                                                     end == bytes.size(), line);
                    for (const char ch : std::string_view(bytes).substr(offset, c.consumedBytes))
                        line += ch == '\n';
                    offset += c.consumedBytes;
                    got.insert(got.end(), c.iterations.begin(), c.iterations.end());
                    memory += c.memory.size();
                    stateJson = toJson(state);
                    longer = c.consumedBytes == 0 ? 2 * longer + 700 : 0;
                }
                const LogState final = logStateFromJson(stateJson);
                QCOMPARE(got.size(), all.iterations.size());
                for (size_t i = 0; i < got.size(); ++i) {
                    QCOMPARE(got[i].iteration, all.iterations[i].iteration);
                    QCOMPARE(got[i].elapsedMs, all.iterations[i].elapsedMs);
                    QCOMPARE(got[i].line, all.iterations[i].line);
                }
                QCOMPARE(memory, all.memory.size());
                QCOMPARE(final.counts.iterationLines, whole.counts.iterationLines);
                QCOMPARE(final.counts.repeatedIterations, whole.counts.repeatedIterations);
                QCOMPARE(final.counts.lines, whole.counts.lines);
                QCOMPARE(final.facts.settings, whole.facts.settings);
            }
        }
    }

    void nanAndSkippedIterations()
    {
        LogState state;
        const LogChunk chunk = parseLogChunk(readAll(fixture("bridge_nan_skipped.log")), state, true);
        QCOMPARE(chunk.iterations.size(), size_t(8));
        QCOMPARE(state.counts.nanIterations, int64_t(1));
        QCOMPARE(state.counts.skippedIterations, int64_t(2));
        int warnings = 0;
        for (const EventRecord& e : chunk.events)
            warnings += e.level == "warning";
        QCOMPARE(warnings, 2);
        // The interval with a NaN logs no loss average and no grad norm: stored as NaN, not 0.
        const StepRecord nanStep = toStepRecord(chunk.iterations[3], {16, 4096, 64, 989.0});
        QVERIFY(std::isnan(nanStep.loss));
        QVERIFY(std::isnan(nanStep.gradNorm));
        const StepRecord ok = toStepRecord(chunk.iterations[0], {16, 4096, 64, 989.0});
        QCOMPARE(ok.effectiveTokens, int64_t(64 * 4096));
        QVERIFY(std::abs(ok.tokensPerSPerGpu - 64.0 * 4096 / 0.901 / 16) < 1e-6);
        QVERIFY(std::abs(ok.mfu - 250.0 / 989.0) < 1e-12);
        // Without the world size or a peak, nothing is made up.
        const StepRecord bare = toStepRecord(chunk.iterations[0], {});
        QCOMPARE(bare.effectiveTokens, int64_t(0));
        QCOMPARE(bare.tokensPerSPerGpu, 0.0);
        QVERIFY(std::isnan(bare.mfu));
    }

    void resumedRunKeepsTheLaterIterations()
    {
        LogState state;
        const LogChunk chunk = parseLogChunk(readAll(fixture("bridge_resumed.log")), state, true);
        QCOMPARE(chunk.iterations.size(), size_t(10));
        QCOMPARE(state.counts.repeatedIterations, int64_t(2));
        int restarts = 0;
        for (const EventRecord& e : chunk.events)
            restarts += e.msg.find("restarted") != std::string::npos;
        QCOMPARE(restarts, 1);
    }

    void killedMidLine()
    {
        const std::string bytes = readAll(fixture("bridge_killed.log"));
        // While the job may still write: the cut line is left for the next read.
        LogState growing;
        const LogChunk partial = parseLogChunk(bytes, growing, false);
        QCOMPARE(partial.iterations.size(), size_t(5));
        QVERIFY(partial.consumedBytes < int64_t(bytes.size()));
        QCOMPARE(bytes[static_cast<size_t>(partial.consumedBytes) - 1], '\n');
        // Finished: the cut line is counted, not stored.
        LogState finished;
        const LogChunk all = parseLogChunk(bytes, finished, true);
        QCOMPARE(all.iterations.size(), size_t(5));
        QVERIFY(all.tornTail);
        QCOMPARE(finished.counts.unreadableIterationLines, int64_t(1));
        QCOMPARE(all.consumedBytes, int64_t(bytes.size()));
    }

    void olderMegatronLm()
    {
        LogState state;
        const LogChunk chunk = parseLogChunk(readAll(fixture("megatron_lm_old.log")), state, true);
        QCOMPARE(chunk.iterations.size(), size_t(6));
        QVERIFY(!chunk.iterations.front().tflopsPerGpu);
        QVERIFY(!chunk.iterations.front().time);
        QCOMPARE(*state.facts.worldSize, 8);
        QCOMPARE(*state.facts.tensorParallel, 2);
        QCOMPARE(*state.facts.pipelineParallel, 2);
        QCOMPARE(*state.facts.dataParallel, 2);
        QCOMPARE(state.facts.flavor, std::string("megatron-lm"));
        QCOMPARE(state.counts.nonUtf8Lines, int64_t(1));
        // Megatron-LM reports MB of 2^20 bytes.
        QCOMPARE(chunk.memory.size(), size_t(1));
        QCOMPARE(*chunk.memory[0].peakAllocatedGib, 20.0);
        QCOMPARE(*chunk.memory[0].peakReservedGib, 22.0);
    }

    void importStoresEachIterationOnce()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        const planner::Catalog cat = catalog();
        BridgeImportRequest request;
        request.logPath = fixture("bridge_two_nodes.log");
        request.model = "qwen3-vl-30b-a3b";
        request.hardware = "h200";
        auto imported = importBridgeRun(**store, cat, request);
        QVERIFY2(imported, imported ? "" : imported.error().toString().c_str());
        QCOMPARE(imported->meta.worldSize, 16);  // from the highest rank prefix, said in a note
        QCOMPARE(imported->meta.seqLength, 4096);
        QCOMPARE(imported->meta.layout, std::string("tp1 pp2 cp1 ep8 etp1 dp8"));
        QVERIFY(imported->prediction);
        QVERIFY(imported->check);
        auto run = (*store)->run(imported->runId);
        QVERIFY(run);
        QCOMPARE(run->kind, std::string(kRunKindBridge));
        QCOMPARE(run->status, RunState::Finished);
        QCOMPARE(run->steps, int64_t(6));
        auto steps = (*store)->steps(imported->runId);
        QVERIFY(steps);
        QCOMPARE(steps->size(), size_t(6));
        // Step 10's memory: the max over the three ranks' reports, in GiB.
        QCOMPARE(steps->front().step, int64_t(10));
        QVERIFY(std::abs(steps->front().memPeakGib - 66.789e9 / kGiB) < 1e-9);
        QVERIFY(std::abs(steps->front().memReservedGib - 70.25e9 / kGiB) < 1e-9);
        QVERIFY(std::isnan((*steps)[1].memPeakGib));
        QCOMPARE(steps->front().effectiveTokens, int64_t(128 * 4096));
        auto meta = (*store)->meta(imported->runId);
        QVERIFY(meta);
        QCOMPARE(meta->tokenCounting, std::string("slots"));
        auto prediction = (*store)->prediction(imported->runId);
        QVERIFY(prediction && *prediction);
        QCOMPARE((*prediction)->gpus, 16);

        // The resumed log: 10 lines, 8 iterations stored, 40 and 50 with the restart's values.
        request.logPath = fixture("bridge_resumed.log");
        request.gpus = 16;
        auto resumed = importBridgeRun(**store, cat, request);
        QVERIFY(resumed);
        auto rs = (*store)->steps(resumed->runId);
        QCOMPARE(rs->size(), size_t(8));
        QCOMPARE((*rs)[3].step, int64_t(40));
        QCOMPARE((*rs)[3].stepMs, 4940.0);
    }

    // The event files hold every iteration (tensorboard_log_interval 1) where the log has one per
    // 10: the steps between are added, the logged steps' missing memory is filled in.
    void tensorboardFillsWhatTheLogLeftOut()
    {
        QTemporaryDir dir;
        std::string events;
        for (int64_t step = 1; step <= 60; ++step) {
            appendRecord(events, scalarEvent(step, 1795168800.0 + step, "iteration-time", 5.1f));
            appendRecord(events, scalarEvent(step, 1795168800.0 + step, "memory/mem-max-allocated-gigabytes", 70.0f));
            appendRecord(events, scalarEvent(step, 1795168800.0 + step, "lm loss", 2.0f));
        }
        std::ofstream(dir.filePath("events.out.tfevents.1795168800.gpu-node-0.1234.0").toStdString(), std::ios::binary)
            << events;
        auto store = RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        BridgeImportRequest request;
        request.logPath = fixture("bridge_two_nodes.log");
        request.tensorboardDir = dir.path().toStdString();
        request.hardware = "h200";
        auto imported = importBridgeRun(**store, catalog(), request);
        QVERIFY2(imported, imported ? "" : imported.error().toString().c_str());
        QCOMPARE(imported->tensorboardPoints, int64_t(180));
        QCOMPARE(imported->tensorboardSteps, int64_t(54));
        // Every logged step gets the event files' memory: steps 20..60 had no report, and step 10's
        // reports (66.8 GB at most) are raised to the event file's 70 GB (the max over all of them).
        QCOMPARE(imported->tensorboardFilled, int64_t(6));
        auto steps = (*store)->steps(imported->runId);
        QCOMPARE(steps->size(), size_t(60));
        // Step 10 keeps the log's time and loss; step 11 is the event file's.
        QCOMPARE((*steps)[9].step, int64_t(10));
        QCOMPARE((*steps)[9].stepMs, 6200.4);
        QCOMPARE((*steps)[9].loss, 2.4);
        QVERIFY(std::abs((*steps)[9].memPeakGib - 70e9 / kGiB) < 1e-6);
        QCOMPARE((*steps)[10].step, int64_t(11));
        QVERIFY(std::abs((*steps)[10].stepMs - 5100.0) < 1e-3);
        QCOMPARE((*steps)[10].effectiveTokens, int64_t(128 * 4096));
        QVERIFY(std::abs((*steps)[19].memPeakGib - 70e9 / kGiB) < 1e-6);  // step 20: filled

        // A corrupt event file: the import fails naming it, and stores nothing.
        events[40] = static_cast<char>(events[40] ^ 0x55);
        std::ofstream(dir.filePath("events.out.tfevents.1795168800.gpu-node-0.1234.0").toStdString(), std::ios::binary)
            << events;
        auto corrupt = importBridgeRun(**store, catalog(), request);
        QVERIFY(!corrupt);
        QVERIFY2(corrupt.error().toString().find("tfevents") != std::string::npos, corrupt.error().toString().c_str());
        QCOMPARE((*store)->listRuns()->size(), size_t(1));
    }

    // Imported Bridge runs carry the planner's prediction for Megatron-Bridge, so `plan
    // --calibrate` for Bridge fits its step-time factor from them (calibrateFromStore).
    void importedRunsCalibrateThePlanner()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        // The 2-node fixture's start-up lines (its layout), then 40 iterations at a known pace.
        std::string head;
        {
            std::istringstream in(readAll(fixture("bridge_two_nodes.log")));
            for (std::string line; std::getline(in, line);)
                if (line.find(" iteration ") == std::string::npos && line.find("[Rank") == std::string::npos)
                    head += line + "\n";
        }
        std::vector<double> ratios;
        for (int run = 0; run < 3; ++run) {
            std::string log = head;
            const double ms = 4000.0 + 500.0 * run;
            for (int i = 1; i <= 40; ++i) {
                char line[400];
                std::snprintf(line, sizeof line,
                              "15:  [2026-11-20 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time "
                              "per iteration (ms): %.1f | learning rate: 1.000000E-05 | global batch size:   128 | "
                              "lm loss: 2.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | number of skipped "
                              "iterations:   0 | number of nan iterations:   0 |\n",
                              i % 60, i, 40, i * 128, i <= 3 ? 3 * ms : ms);
                log += line;
            }
            const std::string path = dir.filePath(QStringLiteral("run%1.log").arg(run)).toStdString();
            std::ofstream(path) << log;
            BridgeImportRequest request;
            request.logPath = path;
            request.model = "qwen3-vl-30b-a3b";
            request.hardware = "h200";
            auto imported = importBridgeRun(**store, catalog(), request);
            QVERIFY2(imported && imported->prediction, imported ? "no prediction" : imported.error().toString().c_str());
            ratios.push_back(ms / imported->prediction->stepMs);
        }
        planner::CalibrationOptions options;
        options.runtime = "megatron-bridge";
        auto fitted = planner::calibrateFromStore(**store, "h200", options);
        QVERIFY(fitted);
        QVERIFY2(fitted->applied(), fitted->describe().c_str());
        QCOMPARE(fitted->runs.size(), size_t(3));
        std::sort(ratios.begin(), ratios.end());
        QVERIFY(std::abs(fitted->stepTimeFactor - ratios[1]) < 1e-3 * ratios[1]);
        // The same runs say nothing about moe-train's model.
        options.runtime = "moe-train";
        auto other = planner::calibrateFromStore(**store, "h200", options);
        QVERIFY(other && !other->applied());
    }

    void badInputStoresNothing()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        const planner::Catalog cat = catalog();
        BridgeImportRequest request;
        request.logPath = fixture("not_megatron.log");
        auto notMegatron = importBridgeRun(**store, cat, request);
        QVERIFY(!notMegatron);
        QCOMPARE(notMegatron.error().code, ErrorCode::InvalidArgument);
        QVERIFY(notMegatron.error().message.find("not a Megatron training log") != std::string::npos);
        QVERIFY(notMegatron.error().context.find("not_megatron.log") != std::string::npos);

        request.logPath = fixture("no_such.log");
        QCOMPARE(importBridgeRun(**store, cat, request).error().code, ErrorCode::NotFound);

        // A config that names a layout the file cannot have: an error naming the config's line.
        const std::string bad = dir.filePath("bad.yaml").toStdString();
        std::ofstream(bad) << "model:\n  tensor_model_parallel_size: zero\n";
        request.logPath = fixture("bridge_two_nodes.log");
        request.configPath = bad;
        auto badConfig = importBridgeRun(**store, cat, request);
        QVERIFY(!badConfig);
        QVERIFY2(badConfig.error().message.find("line 2") != std::string::npos, badConfig.error().message.c_str());
        QCOMPARE((*store)->listRuns()->size(), size_t(0));
    }

    // ingestParsed: the offset rule of ingest() (two followers never store a chunk twice) and the
    // reader's state kept beside the offset.
    void ingestParsedKeepsOffsetAndState()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(dir.filePath("runs.sqlite").toStdString());
        QVERIFY(store);
        NewRun run;
        run.name = "follow";
        run.kind = kRunKindBridge;
        run.sourcePath = "/tmp/x.log";
        run.configJson = "{}";
        auto id = (*store)->createRun(run);
        QVERIFY(id);
        ParsedChunk chunk;
        chunk.offset = 0;
        chunk.newOffset = 100;
        StepRecord s;
        s.step = 1;
        s.stepMs = 10;
        chunk.steps.push_back(s);
        chunk.sourceState = "{\"last_iteration\":1}";
        QVERIFY((*store)->ingestParsed(*id, chunk));
        QCOMPARE(*(*store)->sourceState(*id), chunk.sourceState);
        QCOMPARE((*store)->run(*id)->streamOffset, int64_t(100));
        QCOMPARE((*store)->run(*id)->sourcePath, std::string("/tmp/x.log"));
        // The same chunk again: Busy, nothing stored twice.
        auto again = (*store)->ingestParsed(*id, chunk);
        QVERIFY(!again);
        QCOMPARE(again.error().code, ErrorCode::Busy);
        // A later chunk that logs step 1 again replaces it.
        chunk.offset = 100;
        chunk.newOffset = 150;
        chunk.steps[0].stepMs = 12;
        QVERIFY((*store)->ingestParsed(*id, chunk));
        QCOMPARE((*store)->steps(*id)->size(), size_t(1));
        QCOMPARE((*store)->steps(*id)->front().stepMs, 12.0);
    }
};

QTEST_APPLESS_MAIN(TestBridgeLog)
#include "test_bridge_log.moc"
