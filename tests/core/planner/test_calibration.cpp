// Calibration from a run store built here: runs with a planner prediction and a steady state give
// measured/predicted step time; the median of at least minRuns runs becomes the hardware's factor,
// applied to EfficiencyFactors::stepTimeFactor. Too few runs, other hardware, runs without a
// steady state and calibrated predictions without the model's own figure are left out, with why.
#include "core/planner/calibration.h"
#include "core/planner/catalog.h"
#include "core/planner/prediction.h"
#include "core/run_store.h"

#include <QtTest/QtTest>
#include <QTemporaryDir>

#include <cstdio>

using namespace wb::core;
using namespace wb::core::planner;

namespace {

// A run with `steps` steps: two warm-up steps at 5× the steady time, then `stepMs` with ±1% wobble.
std::string addRun(RunStore& store, const std::string& name, double stepMs, int steps,
                   const std::optional<RunPrediction>& prediction)
{
    NewRun run;
    run.name = name;
    run.target = "local";
    run.runDir = "/tmp/" + name;
    run.configJson = "{}";
    run.configHash = "h";
    const std::string id = *store.createRun(run);
    std::string lines = "{\"v\":1,\"type\":\"meta\",\"run_id\":\"" + id + "\",\"world_size\":8,\"device\":\"gpu\",\"data_source\":\"real\"}\n";
    for (int s = 1; s <= steps; ++s) {
        const double ms = s <= 2 ? 5 * stepMs : stepMs * (1.0 + 0.01 * ((s % 3) - 1));
        char line[256];
        std::snprintf(line, sizeof line,
                      "{\"v\":1,\"type\":\"step\",\"step\":%d,\"time\":%d,\"step_ms\":%.3f,\"loss\":1.0,"
                      "\"effective_tokens\":4096,\"tokens_per_s_per_gpu\":1000}\n",
                      s, 1000 + s, ms);
        lines += line;
    }
    const auto ingested = store.ingest(id, 0, lines);
    if (!ingested)
        qFatal("ingest: %s", ingested.error().toString().c_str());
    if (prediction)
        (void)store.setPrediction(id, *prediction);
    return id;
}

RunPrediction predicted(const std::string& hardware, double stepMs)
{
    RunPrediction p;
    p.source = "test";
    p.hardware = hardware;
    p.gpus = 8;
    p.stepMs = stepMs;
    p.tokensPerSPerGpu = 1;
    p.tflopsPerGpu = 1;
    p.mfu = 0.1;
    p.memoryGib = 10;
    return p;
}

}  // namespace

class TestPlannerCalibration : public QObject {
    Q_OBJECT
private slots:
    void medianOfEnoughRunsIsTheFactor()
    {
        QTemporaryDir dir;
        auto store = std::move(RunStore::open(dir.filePath("runs.db").toStdString()).value());
        addRun(*store, "a", 120, 40, predicted("h200", 100));  // 1.2
        addRun(*store, "b", 150, 40, predicted("h200", 100));  // 1.5
        addRun(*store, "c", 130, 40, predicted("h200", 100));  // 1.3
        addRun(*store, "odd", 900, 40, predicted("h200", 100));  // 9.0: the median ignores it
        addRun(*store, "other-hw", 500, 40, predicted("gb200", 100));
        addRun(*store, "no-prediction", 500, 40, std::nullopt);
        const std::string shortId = addRun(*store, "short", 130, 6, predicted("h200", 100));
        const auto c = calibrateFromStore(*store, "h200");
        QVERIFY(c.ok());
        QVERIFY(c->applied());
        QCOMPARE(int(c->runs.size()), 4);
        // Median of 1.2, 1.3, 1.5, 9.0 (each ±1% wobble around the steady level) ≈ 1.4.
        QVERIFY2(std::abs(c->stepTimeFactor - 1.4) < 0.02, std::to_string(c->stepTimeFactor).c_str());
        QCOMPARE(int(c->skipped.size()), 1);
        QVERIFY(c->skipped.front().rfind(shortId + ": no steady state", 0) == 0);
        for (const CalibrationRun& r : c->runs) {
            QVERIFY(r.steadySteps >= 10);
            if (r.name == "a")  // the 5× warm-up steps are outside the steady window
                QVERIFY2(std::abs(r.measuredStepMs - 120) < 1.5, std::to_string(r.measuredStepMs).c_str());
        }
        QVERIFY(c->describe().find("from 4 h200 run(s)") != std::string::npos);

        EfficiencyFactors f;
        applyCalibration(*c, f);
        QCOMPARE(f.stepTimeFactor, c->stepTimeFactor);
    }

    void tooFewRunsKeepTheCatalogFactors()
    {
        QTemporaryDir dir;
        auto store = std::move(RunStore::open(dir.filePath("runs.db").toStdString()).value());
        addRun(*store, "a", 120, 40, predicted("h200", 100));
        addRun(*store, "b", 150, 40, predicted("h200", 100));
        const auto c = calibrateFromStore(*store, "h200");
        QVERIFY(c.ok());
        QVERIFY(!c->applied());
        QCOMPARE(c->stepTimeFactor, 1.0);
        QCOMPARE(int(c->runs.size()), 2);
        QVERIFY(c->describe().find("not calibrated: 2 usable h200 run(s), 3 needed") == 0);
        EfficiencyFactors f;
        applyCalibration(*c, f);
        QCOMPARE(f.stepTimeFactor, 1.0);
        CalibrationOptions two;
        two.minRuns = 2;
        QVERIFY(calibrateFromStore(*store, "h200", two)->applied());
    }

    void calibratedPredictionsCompareAgainstTheModelsOwnStepTime()
    {
        // A prediction made with a factor of 2 carries the uncalibrated figure (prediction.cpp);
        // calibration must use it, or factors would compound run after run.
        const Catalog catalog = *loadCatalog(planner::builtinCatalogDir(WB_SOURCE_DIR));
        const ModelSpec model = *catalog.model("qwen3-vl-30b-a3b");
        const HardwareSpec hw = *catalog.hardware("h200");
        Layout l;
        l.worldSize = 8, l.ep = 8, l.mbs = 1, l.gbs = 64;
        ThroughputOptions doubled;
        doubled.eff.stepTimeFactor = 2.0;
        const Candidate plain = evaluateLayout(model, l, Workload{}, hw);
        const Candidate scaled = evaluateLayout(model, l, Workload{}, hw, doubled);
        QVERIFY(std::abs(scaled.throughput.stepMs - 2 * plain.throughput.stepMs) < 1e-6 * plain.throughput.stepMs);
        const RunPrediction p = predictionForCandidate(scaled, hw, "step time × 2.00", plain.throughput.stepMs);
        const auto parsed = parsePrediction(predictionToJson(p));
        QVERIFY(parsed.ok());
        QCOMPARE(parsed->hardware, std::string("h200"));
        QCOMPARE(parsed->gpus, 8);

        QTemporaryDir dir;
        auto store = std::move(RunStore::open(dir.filePath("runs.db").toStdString()).value());
        for (const char* name : {"a", "b", "c"})
            addRun(*store, name, 1.5 * plain.throughput.stepMs, 30, *parsed);
        RunPrediction opaque = predicted("h200", 100);
        opaque.calibration = "by hand";
        const std::string opaqueId = addRun(*store, "opaque", 150, 30, opaque);
        const auto c = calibrateFromStore(*store, "h200");
        QVERIFY(c->applied());
        QVERIFY2(std::abs(c->stepTimeFactor - 1.5) < 0.02, std::to_string(c->stepTimeFactor).c_str());
        QCOMPARE(int(c->skipped.size()), 1);
        QVERIFY(c->skipped.front().rfind(opaqueId + ": its prediction was calibrated", 0) == 0);
    }
};

QTEST_GUILESS_MAIN(TestPlannerCalibration)
#include "test_calibration.moc"
