// The compare charts' lines (core/compare/chart_series): min/max decimation keeps a one-step spike
// and a one-step dip, emits at most two points per column in step order, leaves out what an axis
// cannot place (NaN; y <= 0 on a log axis, for raw and smoothed alike); computeChartSet lays every
// run over the same columns, fits the bounds to what it draws and puts the steady window in x.
#include "core/compare/chart_series.h"
#include "core/compare/run_comparison.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace wb::core;

namespace {

std::vector<double> iota(size_t n, double start = 0.0)
{
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = start + static_cast<double>(i);
    return v;
}

ComparedRun runWithSteps(const std::string& name, size_t steps, double stepMs)
{
    ComparedRun run;
    run.summary.id = name;
    run.summary.name = name;
    StepSeries s;
    for (size_t i = 0; i < steps; ++i) {
        s.step.push_back(static_cast<int64_t>(i + 1));
        s.time.push_back(1000.0 + 0.1 * static_cast<double>(i));
        s.stepMs.push_back(stepMs + (i % 7 == 0 ? 1.0 : 0.0));
        s.images.push_back(8);
        s.imageTokens.push_back(1024);
        s.textTokens.push_back(3072);
        s.effectiveTokens.push_back(4096);
        s.loss.push_back(2.0 - 1e-5 * static_cast<double>(i));
        s.memReservedGib.push_back(12);
        s.memPeakGib.push_back(10);
        s.tflopsPerGpu.push_back(50);
        s.mfu.push_back(0.5);
    }
    run.setSteps(std::move(s));
    return run;
}

}  // namespace

class TestChartSeries : public QObject {
    Q_OBJECT

private slots:
    void spikeAndDipSurvive_data()
    {
        QTest::addColumn<int>("columns");
        QTest::addColumn<int>("spikeAt");
        QTest::newRow("600 columns, spike mid-column") << 600 << 50'017;
        QTest::newRow("600 columns, spike first of a column") << 600 << 50'000;
        QTest::newRow("37 columns, spike at the last step") << 37 << 99'999;
        QTest::newRow("1 column") << 1 << 3;
    }
    void spikeAndDipSurvive()
    {
        QFETCH(int, columns);
        QFETCH(int, spikeAt);
        const auto xs = iota(100'000);
        std::vector<double> ys(xs.size(), 100.0);
        for (size_t i = 0; i < ys.size(); ++i)
            ys[i] += std::sin(static_cast<double>(i) * 0.01);  // within [99, 101]
        ys[static_cast<size_t>(spikeAt)] = 900.0;
        ys[static_cast<size_t>((spikeAt + 7) % 100'000)] = 5.0;
        const ChartLine line = decimateMinMax(xs, ys, nullptr, false, columns, xs.front(), xs.back());
        QVERIFY(line.size() <= 2 * static_cast<size_t>(columns) + 2);
        QCOMPARE(line.x.front(), 0.0);  // the line spans the whole run
        QCOMPARE(line.x.back(), 99'999.0);
        QVERIFY(line.size() >= static_cast<size_t>(columns));
        const auto spike = std::find(line.y.begin(), line.y.end(), 900.0);
        QVERIFY2(spike != line.y.end(), "the one-step spike was decimated away");
        QCOMPARE(line.x[static_cast<size_t>(spike - line.y.begin())], static_cast<double>(spikeAt));
        QVERIFY(std::find(line.y.begin(), line.y.end(), 5.0) != line.y.end());
        QVERIFY(std::is_sorted(line.x.begin(), line.x.end()));  // step order: no zig-zag back
    }

    void fewPointsAreKeptAsTheyAre()
    {
        const auto xs = iota(50);
        const auto ys = iota(50, 1.0);
        const ChartLine line = decimateMinMax(xs, ys, nullptr, false, 600, 0.0, 49.0);
        QCOMPARE(line.size(), size_t(50));
        QCOMPARE(line.y, ys);
    }

    void leavesOutWhatTheAxisCannotPlace()
    {
        const auto xs = iota(10);
        std::vector<double> raw{1, 2, std::nan(""), 4, -1, 6, 0, 8, 9, 10};
        std::vector<double> smooth{1, 2, 3, 4, 5, -6, 7, 8, 9, 10};
        const ChartLine linear = decimateMinMax(xs, raw, &smooth, false, 0, 0, 9);
        QCOMPARE(linear.size(), size_t(9));  // only the NaN is a gap
        const ChartLine logRaw = decimateMinMax(xs, raw, &smooth, true, 0, 0, 9);
        const ChartLine logSmooth = decimateMinMax(xs, smooth, &raw, true, 0, 0, 9);
        // Steps 2 (NaN), 4 (-1), 5 (smoothed -6) and 6 (0) are left out of both lines alike.
        const std::vector<double> kept{0, 1, 3, 7, 8, 9};
        QCOMPARE(logRaw.x, kept);
        QCOMPARE(logSmooth.x, kept);
    }

    void sameNamedRunsAreToldApart()
    {
        // Issue 18 item 3: legends and tables cut long labels, so two runs named alike get the
        // short part of their id; when that repeats too, the whole id.
        std::vector<ComparedRun> runs{runWithSteps("a", 200, 100.0), runWithSteps("b", 200, 100.0),
                                      runWithSteps("c", 200, 100.0), runWithSteps("d", 200, 100.0)};
        runs[0].summary.id = "20261204-234811-2b69";
        runs[1].summary.id = "20261204-234816-6c6f";
        runs[2].summary.id = "20261204-234900-6c6f";
        runs[3].summary.id = "20261204-235000-7d7d";
        runs[0].summary.name = runs[1].summary.name = "baseline";
        runs[2].summary.name = runs[3].summary.name = "repeat";
        runs[3].summary.id = "20261204-235000-6c6f";
        auto built = buildComparison(std::move(runs), 0, StepWindow{10, 150});
        QVERIFY(built.ok());
        QCOMPARE(built->runs[0].label(), std::string("baseline · 2b69"));
        QCOMPARE(built->runs[1].label(), std::string("baseline · 6c6f"));
        QCOMPARE(built->runs[2].label(), std::string("repeat (20261204-234900-6c6f)"));
        QCOMPARE(built->runs[3].label(), std::string("repeat (20261204-235000-6c6f)"));
    }

    void chartSetSharesColumnsBoundsAndWindows()
    {
        std::vector<ComparedRun> runs{runWithSteps("a", 20'000, 100.0), runWithSteps("b", 5'000, 50.0)};
        auto built = buildComparison(std::move(runs), 0, StepWindow{100, 4000});
        QVERIFY2(built.ok(), built.ok() ? "" : built.error().toString().c_str());
        ChartLinesRequest request;
        request.columns = {400, 300, 200, 100};
        request.smoothing = 0.6;
        const ChartSet set = computeChartSet(*built, request, 2);
        QCOMPARE(set.request, request);
        for (size_t c = 0; c < 4; ++c) {
            const ChartLines& chart = set.charts[c];
            QCOMPARE(chart.runs.size(), size_t(2));
            for (const auto& run : chart.runs) {
                // Columns are laid over the x extent of all runs: run b spans a quarter of it.
                QVERIFY(run.raw.size() <= 2 * static_cast<size_t>(request.columns[c]) + 2);
                QVERIFY(!run.smooth.empty());
                QCOMPARE(run.windowFrom, 100.0);  // x = step
                QCOMPARE(run.windowTo, 4000.0);
            }
            QVERIFY(chart.runs[1].raw.size() < chart.runs[0].raw.size() / 2);
            QCOMPARE(chart.bounds.xMin, 1.0);
            QCOMPARE(chart.bounds.xMax, 20'000.0);
        }
        const ChartLines& stepTime = set.charts[0];
        QCOMPARE(stepTime.bounds.yMax, 101.0);  // the raw every-7th step, not the smoothed line
        QCOMPARE(stepTime.bounds.yMin, 50.0);

        // No smoothing: one line per run, the raw one.
        request.smoothing = 0.0;
        const ChartSet raw = computeChartSet(*built, request, 1, ChartMetric::Loss);
        QVERIFY(raw.charts[2].runs[0].raw.empty());
        QVERIFY(!raw.charts[2].runs[0].smooth.empty());
        QVERIFY(raw.charts[0].runs[0].smooth.empty());  // only the loss chart was asked for

        // Wall time on x: the window moves with it.
        request.xAxis = ChartXAxis::WallTime;
        const ChartSet wall = computeChartSet(*built, request);
        QVERIFY(std::abs(wall.charts[0].runs[0].windowFrom - 9.9) < 1e-9);  // step 100 = 99 × 0.1 s
    }
};

QTEST_GUILESS_MAIN(TestChartSeries)
#include "test_chart_series.moc"
