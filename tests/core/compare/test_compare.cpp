// The comparison engine (core/compare/): steady-state detection on synthetic series with a known
// warm-up, normalization arithmetic on hand-computed cases, the mock-vs-real warning (always, and
// first), the config diff, and the CSV round trip. Data-driven rows where the cases are alike.
#include "core/compare/config_diff.h"
#include "core/compare/run_comparison.h"
#include "core/compare/smoothing.h"
#include "core/compare/steady_state.h"
#include "core/compare/steps_csv.h"
#include "core/run_config.h"
#include "synthetic_runs.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace wb::core;

namespace {

using Series = std::vector<double>;

Series steady(size_t n, double level, double noise, uint64_t seed = 0)
{
    Series s;
    for (size_t i = 0; i < n; ++i)
        s.push_back(level * (1.0 + noise * wb::test::hashNoise(seed + i)));
    return s;
}

Series concat(Series a, const Series& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<StepRecord> stepsFromMs(const Series& ms, int64_t tokens = 1000)
{
    std::vector<StepRecord> steps;
    for (size_t i = 0; i < ms.size(); ++i) {
        StepRecord s;
        s.step = static_cast<int64_t>(i) + 1;
        s.stepMs = ms[i];
        s.effectiveTokens = tokens;
        steps.push_back(s);
    }
    return steps;
}

WorkloadFingerprint fingerprint(const std::string& source)
{
    WorkloadFingerprint f;
    f.dataSource = source;
    f.seqLength = 256;
    f.globalBatchSize = 8;
    f.microBatchSize = 4;
    f.worldSize = 2;
    f.model = "decoder 2L×128";
    return f;
}

bool sameDouble(double a, double b)
{
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

}  // namespace

Q_DECLARE_METATYPE(Series)

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    // --- steady state ---------------------------------------------------------------------------
    void steadyState_data()
    {
        QTest::addColumn<Series>("stepMs");
        QTest::addColumn<bool>("detected");
        QTest::addColumn<int>("begin");

        QTest::newRow("five warm-up steps, then ±2 % noise")
            << concat({500, 400, 300, 200, 150}, steady(200, 100, 0.02)) << true << 5;
        QTest::newRow("one compilation step")
            << concat({3000}, steady(200, 100, 0.02)) << true << 1;
        QTest::newRow("no warm-up at all") << steady(200, 100, 0.02) << true << 0;
        {
            Series s = concat({900, 800, 700}, steady(200, 100, 0.02));
            s[150] = 1000.0;  // a checkpoint stall late in the run must not move the start
            QTest::newRow("late single spike is ignored") << s << true << 3;
        }
        {
            Series s;
            for (int i = 0; i < 300; ++i)  // 100 × (1 + 2 e^{-i/5}): within 5 % once i >= 19
                s.push_back(100.0 * (1.0 + 2.0 * std::exp(-i / 5.0)));
            QTest::newRow("exponential warm-up, noiseless") << s << true << 19;
        }
        QTest::newRow("noisy CPU run (±20 %), 10 slow steps")
            << concat(steady(10, 300, 0.02, 7), steady(300, 100, 0.20, 11)) << true << 10;
        QTest::newRow("too short: second half") << steady(12, 100, 0.0) << false << 6;
        {
            Series ramp;
            for (int i = 0; i < 200; ++i)
                ramp.push_back(100.0 + 900.0 * i / 199.0);
            QTest::newRow("never settles (a ramp): second half") << ramp << false << 100;
        }
        QTest::newRow("empty") << Series{} << false << 0;
    }

    void steadyState()
    {
        QFETCH(Series, stepMs);
        QFETCH(bool, detected);
        QFETCH(int, begin);
        const SteadyWindow w = detectSteadyState(stepMs);
        QCOMPARE(w.detected, detected);
        QCOMPARE(static_cast<int>(w.begin), begin);
        QCOMPARE(w.end, stepMs.size());
        QVERIFY(!w.note.empty());
    }

    void parseWindow_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<qint64>("first");  // -1: open
        QTest::addColumn<qint64>("last");
        QTest::newRow("both") << QStringLiteral("100:500") << true << qint64(100) << qint64(500);
        QTest::newRow("open end") << QStringLiteral("100:") << true << qint64(100) << qint64(-1);
        QTest::newRow("open start") << QStringLiteral(":500") << true << qint64(-1) << qint64(500);
        QTest::newRow("reversed") << QStringLiteral("500:100") << false << qint64(0) << qint64(0);
        QTest::newRow("no colon") << QStringLiteral("100") << false << qint64(0) << qint64(0);
        QTest::newRow("junk") << QStringLiteral("1x:5") << false << qint64(0) << qint64(0);
        QTest::newRow("negative") << QStringLiteral("-1:5") << false << qint64(0) << qint64(0);
    }

    void parseWindow()
    {
        QFETCH(QString, text);
        QFETCH(bool, ok);
        QFETCH(qint64, first);
        QFETCH(qint64, last);
        const auto w = parseStepWindow(text.toStdString());
        QCOMPARE(w.ok(), ok);
        if (!ok) {
            QCOMPARE(w.error().code, ErrorCode::InvalidArgument);
            return;
        }
        QCOMPARE(w->first.value_or(-1), first);
        QCOMPARE(w->last.value_or(-1), last);
    }

    void userWindowOverridesDetection()
    {
        const auto steps = stepsFromMs(concat({500, 400}, steady(50, 100, 0.0)));  // steps 1..52
        auto w = resolveWindow(steps, StepWindow{10, 19});
        QVERIFY(w.ok());
        QVERIFY(w->userOverride);
        QCOMPARE(steps[w->begin].step, int64_t(10));
        QCOMPARE(steps[w->end - 1].step, int64_t(19));
        QVERIFY(!resolveWindow(steps, StepWindow{1000, std::nullopt}).ok());  // selects nothing
        auto all = resolveWindow(steps, StepWindow{});
        QVERIFY(all.ok());
        QCOMPARE(all->size(), steps.size());
    }

    // --- normalization ----------------------------------------------------------------------------
    void figures_data()
    {
        QTest::addColumn<double>("stepMs");
        QTest::addColumn<qint64>("tokens");
        QTest::addColumn<int>("world");
        QTest::addColumn<double>("tflops");
        QTest::addColumn<double>("peak");
        QTest::addColumn<double>("tokensPerSPerGpu");
        QTest::addColumn<double>("msPer1k");
        QTest::addColumn<double>("mfu");
        // 8192 tokens in 250 ms on 4 GPUs: 8192 / 0.25 / 4 = 8192 tok/s/GPU; 250 × 4 × 1000 / 8192
        // = 122.0703125 GPU-ms per 1k tokens; MFU = 300 / 989.
        QTest::newRow("4 GPUs") << 250.0 << qint64(8192) << 4 << 300.0 << 989.0 << 8192.0 << 122.0703125
                                << 300.0 / 989.0;
        // 1000 tokens in 2 s on 1 GPU: 500 tok/s; 2000 GPU-ms per 1k; no peak known: the records' mfu.
        QTest::newRow("1 GPU, peak unknown") << 2000.0 << qint64(1000) << 1 << 0.5 << 0.0 << 500.0 << 2000.0
                                             << 0.25;
        // World size 0 (no meta) counts as 1.
        QTest::newRow("world 0 counts as 1") << 100.0 << qint64(100) << 0 << 1.0 << 10.0 << 1000.0 << 1000.0
                                             << 0.1;
        // 64 GPUs, GBS 1024 × 4096 tokens = 4,194,304 tokens in 4 s: 16384 tok/s/GPU, 61.03515625 ms/1k.
        QTest::newRow("64 GPUs, 4M tokens") << 4000.0 << qint64(4194304) << 64 << 460.0 << 2500.0 << 16384.0
                                            << 61.03515625 << 0.184;
    }

    void figures()
    {
        QFETCH(double, stepMs);
        QFETCH(qint64, tokens);
        QFETCH(int, world);
        QFETCH(double, tflops);
        QFETCH(double, peak);
        QFETCH(double, tokensPerSPerGpu);
        QFETCH(double, msPer1k);
        QFETCH(double, mfu);
        std::vector<StepRecord> steps(3);
        for (size_t i = 0; i < steps.size(); ++i) {
            steps[i].step = static_cast<int64_t>(i);
            steps[i].stepMs = stepMs;
            steps[i].effectiveTokens = tokens;
            steps[i].tflopsPerGpu = tflops;
            steps[i].mfu = 0.25;  // only used when the peak is unknown
            steps[i].memPeakGib = 1.0 + static_cast<double>(i);
        }
        SteadyWindow window;
        window.begin = 1;
        window.end = 3;
        const RunFigures f = computeRunFigures(steps, window, world, peak);
        QCOMPARE(f.windowSteps, size_t(2));
        QCOMPARE(f.tokensPerSPerGpu.median, tokensPerSPerGpu);
        QCOMPARE(f.gpuMsPer1kTokens.median, msPer1k);
        QCOMPARE(f.tflopsPerGpu.median, tflops);
        QVERIFY(std::abs(f.mfu.median - mfu) < 1e-12);
        QCOMPARE(f.peakMemGib, 3.0);  // max over the whole run
    }

    void figuresUseWindowAndMedian()
    {
        // Warm-up step 0 (huge) is outside the window; in the window the median of 100, 200, 400 ms
        // is 200 ms → 1000 tokens / 0.2 s / 1 GPU = 5000 tok/s, ms/1k = 200.
        auto steps = stepsFromMs({9000, 100, 400, 200});
        SteadyWindow window;
        window.begin = 1;
        window.end = 4;
        const RunFigures f = computeRunFigures(steps, window, 1, 0.0);
        QCOMPARE(f.stepMs.median, 200.0);
        QCOMPARE(f.tokensPerSPerGpu.median, 5000.0);
        QCOMPARE(f.gpuMsPer1kTokens.median, 200.0);
        QCOMPARE(f.stepMs.p10, 120.0);  // 100 + 0.2 × (200 - 100)
        QCOMPARE(f.stepMs.p90, 360.0);  // 200 + 0.8 × (400 - 200)
        QCOMPARE(f.stepMs.spread, 1.2); // (360 - 120) / 200
    }

    void timeSplitFigures()
    {
        // Three steps in the window; each part's median is over the window only (step 0 is the
        // warm-up). Data wait is 0 on every step: a real 0, not a missing split.
        std::vector<StepRecord> steps(4);
        const double vision[] = {500, 10, 30, 20}, backward[] = {900, 100, 140, 120};
        for (size_t i = 0; i < steps.size(); ++i) {
            steps[i].step = static_cast<int64_t>(i) + 1;
            steps[i].stepMs = 300;
            steps[i].effectiveTokens = 1000;
            steps[i].visionMs = vision[i];
            steps[i].projectorMs = 2;
            steps[i].decoderMs = 50;
            steps[i].backwardMs = backward[i];
            steps[i].optimizerMs = 40;
        }
        SteadyWindow window;
        window.begin = 1;
        window.end = 4;
        const RunFigures f = computeRunFigures(steps, window, 1, 0.0);
        QCOMPARE(stepPhases()[1].key, "vision_ms");
        const double want[kStepPhaseCount] = {0.0, 20.0, 2.0, 50.0, 120.0, 40.0};
        for (size_t k = 0; k < kStepPhaseCount; ++k) {
            QVERIFY2(f.phaseMs[k].valid(), stepPhases()[k].key);
            QCOMPARE(f.phaseMs[k].median, want[k]);
            QCOMPARE(f.phaseMs[k].count, size_t(3));
        }
        QCOMPARE(f.phaseMs[1].p90, 28.0);  // 20 + 0.8 × (30 - 20)

        // Each part is a row of the table (CLI, GUI, JSON) under the stream's key.
        auto spec = [](const char* key) {
            for (const auto& s : figureSpecs())
                if (std::string(s.key) == key)
                    return s;
            return FigureSpec{};
        };
        QVERIFY(spec("backward_ms").key);
        QCOMPARE(spec("backward_ms").value(f), 120.0);
        QVERIFY(!spec("backward_ms").higherIsBetter);

        // A stream without a split (every part 0): n/a, not a column of zeros.
        for (auto& s : steps)
            s.visionMs = s.projectorMs = s.decoderMs = s.backwardMs = s.optimizerMs = 0.0;
        const RunFigures none = computeRunFigures(steps, window, 1, 0.0);
        for (size_t k = 0; k < kStepPhaseCount; ++k)
            QVERIFY(!none.phaseMs[k].valid());
        QVERIFY(std::isnan(spec("vision_ms").value(none)));
        QVERIFY(std::isnan(spec("data_ms").value(none)));

        // A window longer than kSplitSamples: every stride-th step of it, starting at its first.
        std::vector<StepRecord> many(2 * kSplitSamples + 10);
        for (size_t i = 0; i < many.size(); ++i) {
            many[i].step = static_cast<int64_t>(i) + 1;
            many[i].stepMs = 100;
            many[i].effectiveTokens = 10;
            many[i].backwardMs = i % 3 == 0 ? 60.0 : 1.0;  // stride 3: only the 60 ms steps sampled
        }
        SteadyWindow all;
        all.begin = 0;
        all.end = many.size();
        const RunFigures sampled = computeRunFigures(many, all, 1, 0.0);
        QCOMPARE(sampled.phaseMs[4].count, (many.size() + 2) / 3);  // stride ceil(16394 / 8192) = 3
        QCOMPARE(sampled.phaseMs[4].median, 60.0);
    }

    void gpuFiguresOverTheWindow()
    {
        // Issue 18 item 10: the GPU system samples of the steady window, per sample over the GPUs
        // (mean utilization and power, hottest temperature, slowest SM clock); a run without
        // samples has none (n/a), not zeros.
        std::vector<StepRecord> records;
        for (int i = 1; i <= 10; ++i) {
            StepRecord r;
            r.step = i;
            r.stepMs = 100;
            r.effectiveTokens = 1000;
            records.push_back(r);
        }
        const StepSeries steps = StepSeries::fromRecords(records);
        const SteadyWindow window{2, 8};  // steps 3..8
        std::vector<GpuRecord> samples = {
            {1.0, 1, {{0, 10, 1, 2, 100, 90, 500}}},  // warm-up: left out
            {2.0, 4, {{0, 90, 1, 2, 600, 60, 1980}, {1, 70, 1, 2, 500, 70, 1500}}},
            {3.0, 6, {{0, 94, 1, 2, NAN, 62, 1900}, {1, 96, 1, 2, NAN, 64, 1950}}},
            {4.0, 9, {{0, 10, 1, 2, 100, 90, 500}}},  // after the window
        };
        RunFigures f = computeRunFigures(steps, window, 1, 0.0);
        addGpuFigures(f, steps, window, samples);
        QCOMPARE(f.gpuUtilPct.count, size_t(2));
        QCOMPARE(f.gpuUtilPct.median, 87.5);   // (80 + 95) / 2
        QCOMPARE(f.gpuPowerW.count, size_t(1));  // the second sample has no power sensor
        QCOMPARE(f.gpuPowerW.median, 550.0);
        QCOMPARE(f.gpuTempC.median, 67.0);     // (70 + 64) / 2
        QCOMPARE(f.gpuSmClockMhz.median, 1700.0);  // (1500 + 1900) / 2
        RunFigures none = computeRunFigures(steps, window, 1, 0.0);
        addGpuFigures(none, steps, window, {});
        QVERIFY(!none.gpuUtilPct.valid());
        const auto& specs = figureSpecs();
        const auto util = std::find_if(specs.begin(), specs.end(), [](const FigureSpec& s) { return std::string(s.key) == "gpu_util_pct"; });
        QVERIFY(util != specs.end());
        QVERIFY(std::isnan(util->value(none)));
        QCOMPARE(util->value(f), 87.5);
    }

    void mfuUnknownIsNotZero()
    {
        // A CPU run: no peak known and no MFU in the records. The figure is n/a (NaN → "n/a" in the
        // tables, null in JSON), not a 0 % that reads like a measurement.
        auto steps = stepsFromMs({100, 100, 100});
        SteadyWindow window;
        window.begin = 0;
        window.end = 3;
        const RunFigures f = computeRunFigures(steps, window, 1, 0.0);
        for (const auto& spec : figureSpecs())
            if (std::string(spec.key) == "mfu" || std::string(spec.key) == "tflops_per_gpu")
                QVERIFY2(std::isnan(spec.value(f)), spec.key);
        for (auto& s : steps)
            s.tflopsPerGpu = 10.0;
        const RunFigures known = computeRunFigures(steps, window, 1, 100.0);
        for (const auto& spec : figureSpecs())
            if (std::string(spec.key) == "mfu") {
                QCOMPARE(spec.value(known), 10.0);  // 10 / 100 TFLOP/s, in %
                QCOMPARE(spec.statsScale, 100.0);
            }
    }

    void relativeDeltas()
    {
        QCOMPARE(relativeDelta(110.0, 100.0).value(), 0.1);
        QCOMPARE(relativeDelta(50.0, 100.0).value(), -0.5);
        QVERIFY(!relativeDelta(1.0, 0.0));
        QVERIFY(!relativeDelta(std::nan(""), 1.0));
    }

    // --- workload warnings ------------------------------------------------------------------------
    void mockVsRealAlwaysWarns_data()
    {
        QTest::addColumn<QString>("other");
        QTest::addColumn<bool>("alsoDiffer");
        QTest::newRow("mock vs real, otherwise identical") << QStringLiteral("mock") << false;
        QTest::newRow("mock vs real, everything else differs too") << QStringLiteral("mock") << true;
        QTest::newRow("unknown vs real") << QString() << false;
    }

    void mockVsRealAlwaysWarns()
    {
        QFETCH(QString, other);
        QFETCH(bool, alsoDiffer);
        WorkloadFingerprint a = fingerprint("real");
        WorkloadFingerprint b = fingerprint(other.toStdString());
        if (alsoDiffer) {
            b.seqLength = 4096;
            b.worldSize = 64;
            b.frozenModules = {"vision"};
            b.model = "other";
            b.imageTokensPerSample.median = 1000;
            b.imageTokensPerSample.count = 1;
        }
        for (const auto& order : {std::vector{a, b}, std::vector{b, a}}) {
            const auto warnings = compareWorkloads({"first", "second"}, order);
            QVERIFY(!warnings.empty());
            QCOMPARE(warnings.front().severity, WarningSeverity::Critical);
            QCOMPARE(warnings.front().code, std::string("data_source"));
            QCOMPARE(std::count_if(warnings.begin(), warnings.end(),
                                   [](const auto& w) { return w.severity == WarningSeverity::Critical; }),
                     1);
        }
    }

    // An imported Megatron log counts token slots and no images: compare says the counting
    // differs and the trainers differ, and does not call its unknown image counts a difference.
    void importedLogAgainstMoeTrain()
    {
        WorkloadFingerprint moeTrain = fingerprint("real");
        moeTrain.imagesPerSampleConfigured = 1;
        moeTrain.imagesPerSample = 1.0;
        moeTrain.imageTokensPerSample.median = 256;
        moeTrain.imageTokensPerSample.count = 10;
        WorkloadFingerprint bridge = fingerprint("real");
        bridge.tokenCounting = "slots";
        bridge.trainer = "megatron-bridge";
        const auto warnings = compareWorkloads({"moe-train", "bridge"}, {moeTrain, bridge});
        const auto has = [&](const char* code) {
            return std::any_of(warnings.begin(), warnings.end(), [&](const auto& w) { return w.code == code; });
        };
        QVERIFY(has("token_counting"));
        QVERIFY(has("trainer"));
        QVERIFY(!has("images_per_sample"));
        QVERIFY(!has("images_measured"));
        QVERIFY(!has("image_tokens"));
        QVERIFY(!has("data_source"));
        // Two moe-train runs: none of these.
        const auto same = compareWorkloads({"a", "b"}, {moeTrain, moeTrain});
        QVERIFY(same.empty());
    }

    void workloadWarnings_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("code");
        QTest::addColumn<int>("severity");
        QTest::newRow("same") << QString() << QString() << -1;
        QTest::newRow("seq") << QStringLiteral("seq") << QStringLiteral("seq_length") << int(WarningSeverity::Warning);
        QTest::newRow("frozen") << QStringLiteral("frozen") << QStringLiteral("frozen_modules")
                                << int(WarningSeverity::Warning);
        QTest::newRow("image tokens +50 %") << QStringLiteral("imgtok") << QStringLiteral("image_tokens")
                                            << int(WarningSeverity::Warning);
        QTest::newRow("image tokens +5 % is noise") << QStringLiteral("imgtok5") << QString() << -1;
        QTest::newRow("world size") << QStringLiteral("world") << QStringLiteral("world_size")
                                    << int(WarningSeverity::Info);
        QTest::newRow("both mock") << QStringLiteral("mock") << QStringLiteral("mock_data")
                                   << int(WarningSeverity::Warning);
        QTest::newRow("environment switches")
            << QStringLiteral("switches") << QStringLiteral("runtime_switches") << int(WarningSeverity::Info);
    }

    void workloadWarnings()
    {
        QFETCH(QString, field);
        QFETCH(QString, code);
        QFETCH(int, severity);
        WorkloadFingerprint a = fingerprint("real");
        a.imageTokensPerSample.median = 100;
        a.imageTokensPerSample.count = 1;
        WorkloadFingerprint b = a;
        if (field == QStringLiteral("seq"))
            b.seqLength = 512;
        else if (field == QStringLiteral("frozen"))
            b.frozenModules = {"vision", "projection"};
        else if (field == QStringLiteral("imgtok"))
            b.imageTokensPerSample.median = 150;
        else if (field == QStringLiteral("imgtok5"))
            b.imageTokensPerSample.median = 105;
        else if (field == QStringLiteral("world"))
            b.worldSize = 8;
        else if (field == QStringLiteral("mock"))
            a.dataSource = b.dataSource = "mock";
        else if (field == QStringLiteral("switches"))
            b.runtimeSwitches = "WB_ROW_KERNELS=1";
        const auto warnings = compareWorkloads({"a", "b"}, {a, b});
        if (severity < 0) {
            QVERIFY2(warnings.empty(), warnings.empty() ? "" : warnings.front().message.c_str());
            return;
        }
        QCOMPARE(warnings.size(), size_t(1));
        QCOMPARE(QString::fromStdString(warnings.front().code), code);
        QCOMPARE(int(warnings.front().severity), severity);
        if (field != QStringLiteral("mock"))  // a difference names the runs and their values
            QVERIFY(warnings.front().message.find("a = ") != std::string::npos);
    }

    void mockVsRealThroughTheStore()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(QDir(dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString());
        QVERIFY(store.ok());
        wb::test::SyntheticRun real;
        real.name = "real-run";
        wb::test::SyntheticRun mock = real;
        mock.name = "mock-run";
        mock.dataSource = "mock";
        mock.stepMs = 50.0;  // "2x faster"
        const std::string realId = wb::test::addSyntheticRun(**store, real);
        const std::string mockId = wb::test::addSyntheticRun(**store, mock);
        QVERIFY(!realId.empty() && !mockId.empty());

        CompareRequest request;
        request.runs = {realId, mockId};
        auto c = compareRuns(**store, request);
        QVERIFY2(c.ok(), c.ok() ? "" : c.error().toString().c_str());
        QVERIFY(c->hasCritical());
        QCOMPARE(c->warnings.front().code, std::string("data_source"));
        QCOMPARE(c->baseline, size_t(0));
        // The synthetic warm-up (5 steps) is skipped; tokens/s/GPU: 4096 / 0.1 / 2 = 20480.
        QCOMPARE(c->runs[0].window.begin, size_t(5));
        QVERIFY(std::abs(c->runs[0].figures.tokensPerSPerGpu.median - 20480.0) < 20480.0 * 0.02);
        const auto delta = relativeDelta(c->runs[1].figures.tokensPerSPerGpu.median,
                                         c->runs[0].figures.tokensPerSPerGpu.median);
        QVERIFY(delta && std::abs(*delta - 1.0) < 0.05);
        // The time split comes through the store's column read: backward is 55 % of each step.
        const auto& backward = c->runs[0].figures.phaseMs[4];
        QVERIFY(backward.valid());
        QVERIFY(std::abs(backward.median - 0.55 * c->runs[0].figures.stepMs.median) < 1e-9 * backward.median + 1e-9);
        // The config diff names the data source (and only what differs).
        bool sourceRow = false;
        for (const auto& row : c->configDiff.rows) {
            QVERIFY(row.values[0] != row.values[1]);
            sourceRow = sourceRow || row.key == "data.source";
        }
        QVERIFY(sourceRow);
        // The JSON form carries the warning first, too.
        const std::string json = comparisonToJson(*c);
        QVERIFY(json.find("\"critical\"") < json.find("\"runs\""));

        request.baseline = mockId;
        auto c2 = compareRuns(**store, request);
        QVERIFY(c2.ok());
        QCOMPARE(c2->baseline, size_t(1));
        request.baseline = "no-such-run";
        QVERIFY(!compareRuns(**store, request).ok());
    }

    // --- config diff ------------------------------------------------------------------------------
    void configDiff_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QStringList>("keys");
        QTest::newRow("identical") << QString() << QStringList{};
        QTest::newRow("name only is ignored") << QStringLiteral("name") << QStringList{};
        QTest::newRow("two fields") << QStringLiteral("ep+mbs")
                                    << QStringList{QStringLiteral("train.micro_batch_size"),
                                                   QStringLiteral("parallel.expert_model_parallel_size")};
        QTest::newRow("an array") << QStringLiteral("deepstack")
                                  << QStringList{QStringLiteral("model.vision.deepstack_layers")};
    }

    void configDiff()
    {
        QFETCH(QString, change);
        QFETCH(QStringList, keys);
        RunConfig a;
        RunConfig b;
        if (change == QStringLiteral("name"))
            b.name = "other";
        if (change == QStringLiteral("ep+mbs")) {
            b.parallel.expertModelParallelSize = 4;
            b.train.microBatchSize = 2;
        }
        if (change == QStringLiteral("deepstack"))
            b.model.vision.deepstackLayers = {0, 1};
        const ConfigDiff diff = diffConfigs({runConfigToJson(a), runConfigToJson(b)});
        QStringList got;
        for (const auto& row : diff.rows)
            got << QString::fromStdString(row.key);
        QCOMPARE(got, keys);
        QVERIFY(diff.keysCompared > 50);
        if (change == QStringLiteral("deepstack")) {
            QCOMPARE(diff.rows[0].values[0], std::string("[]"));
            QCOMPARE(diff.rows[0].values[1], std::string("[0,1]"));
        }
    }

    void configDiffMissingKeysAndBadJson()
    {
        const ConfigDiff diff = diffConfigs({R"({"a":1,"b":{"c":2}})", R"({"a":1})", "not json"});
        QCOMPARE(diff.rows.size(), size_t(2));
        QCOMPARE(diff.rows[0].key, std::string("a"));  // "not json" lacks it
        QCOMPARE(diff.rows[1].key, std::string("b.c"));
        QCOMPARE(diff.rows[1].values[1], std::string());
    }

    // --- smoothing --------------------------------------------------------------------------------
    void ema_data()
    {
        QTest::addColumn<Series>("values");
        QTest::addColumn<double>("weight");
        QTest::addColumn<Series>("expected");
        // Debiased: the first output equals the first input whatever the weight.
        QTest::newRow("constant stays constant") << Series{5, 5, 5} << 0.9 << Series{5, 5, 5};
        QTest::newRow("weight 0 is the identity") << Series{1, 2, 3} << 0.0 << Series{1, 2, 3};
        // w = 0.5: s1 = 0.5 → /0.5 = 1; s2 = 0.25 + 1.5 = 1.75 → /0.75 = 7/3; s3 = 0.875 + 0 = 0.875 → /0.875 = 1.
        QTest::newRow("hand-computed, w = 0.5") << Series{1, 3, 0} << 0.5 << Series{1, 7.0 / 3.0, 1};
        const double nan = std::nan("");
        QTest::newRow("NaN passes through, not averaged") << Series{2, nan, 2} << 0.5 << Series{2, nan, 2};
    }

    void ema()
    {
        QFETCH(Series, values);
        QFETCH(double, weight);
        QFETCH(Series, expected);
        const Series got = emaDebiased(values, weight);
        QCOMPARE(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i)
            QVERIFY2((std::isnan(got[i]) && std::isnan(expected[i])) || std::abs(got[i] - expected[i]) < 1e-12,
                     qPrintable(QStringLiteral("index %1: %2 vs %3").arg(i).arg(got[i]).arg(expected[i])));
    }

    // --- CSV --------------------------------------------------------------------------------------
    void csvRoundTrip()
    {
        std::vector<StepRecord> steps(3);
        steps[0].step = 1;
        steps[0].time = 1764430000.123456789;
        steps[0].stepMs = 0.1;
        steps[0].loss = 1e-300;
        steps[0].lr = 3e-4;
        steps[0].effectiveTokens = std::numeric_limits<int64_t>::max();
        steps[1].step = 2;
        steps[1].loss = std::nan("");  // diverged: an empty cell
        steps[1].gradNorm = -0.0;
        steps[1].mfu = 0.1 + 0.2;
        steps[2].step = 3;
        steps[2].memPeakGib = 79.999999999999;
        steps[2].images = -1;

        const std::string csv = stepsToCsv(steps);
        QVERIFY(csv.rfind("step,time,step_ms,", 0) == 0);
        QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), 4);
        auto back = stepsFromCsv(csv);
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().toString().c_str());
        QCOMPARE(back->size(), steps.size());
        for (size_t i = 0; i < steps.size(); ++i) {
            const auto& x = steps[i];
            const auto& y = (*back)[i];
            QVERIFY(std::memcmp(&x.step, &y.step, sizeof x.step) == 0);
            QCOMPARE(y.effectiveTokens, x.effectiveTokens);
            QCOMPARE(y.images, x.images);
            for (auto m : {&StepRecord::time, &StepRecord::stepMs, &StepRecord::loss, &StepRecord::lr,
                           &StepRecord::gradNorm, &StepRecord::mfu, &StepRecord::memPeakGib})
                QVERIFY2(sameDouble(x.*m, y.*m), csv.c_str());
        }
        QCOMPARE(stepCsvColumns().size(), size_t(25));
    }

    void csvRejectsCorruptInput_data()
    {
        QTest::addColumn<QString>("csv");
        QTest::newRow("no step column") << QStringLiteral("time,loss\n1,2\n");
        QTest::newRow("short row") << QStringLiteral("step,loss\n1\n");
        QTest::newRow("not a number") << QStringLiteral("step,loss\n1,abc\n");
    }

    void csvRejectsCorruptInput()
    {
        QFETCH(QString, csv);
        const auto r = stepsFromCsv(csv.toStdString());
        QVERIFY(!r.ok());
        QCOMPARE(r.error().code, ErrorCode::Corrupt);
    }

    void csvFileIsWrittenAtomically()
    {
        QTemporaryDir dir;
        const QString path = QDir(dir.path()).filePath(QStringLiteral("steps.csv"));
        QFile old(path);
        QVERIFY(old.open(QIODevice::WriteOnly));
        old.write("old contents\n");
        old.close();
        auto steps = stepsFromMs({100, 200});
        QVERIFY(writeStepsCsv(path.toStdString(), steps).ok());
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray bytes = file.readAll();
        auto back = stepsFromCsv(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        QVERIFY(back.ok());
        QCOMPARE(back->size(), size_t(2));
        QCOMPARE((*back)[1].stepMs, 200.0);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);  // no temporary left behind

        const auto bad = writeStepsCsv(QDir(dir.path()).filePath(QStringLiteral("missing/steps.csv")).toStdString(),
                                       steps);
        QVERIFY(!bad.ok());
        QCOMPARE(bad.error().code, ErrorCode::IoError);
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "test_compare.moc"
