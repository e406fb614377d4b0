// RunChartsPanel: the step-time split (stacked bands with a clipped "other"), the no-split notice,
// MFU on the throughput chart's right axis (or "MFU n/a"), gradient norm and learning rate, the
// header's latest split and the per-step tooltips — fed steps as the window feeds them, read back
// from the charts' series after the coalesced redraw.
#include "core/metrics_schema.h"
#include "ui/metric_chart_view.h"
#include "ui/run_charts_panel.h"
#include "ui/run_status_style.h"
#include "ui/step_series_buffer.h"
#include "ui_test_main.h"

#include <QAreaSeries>
#include <QChart>
#include <QFile>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QSet>
#include <QTest>
#include <QValueAxis>

#include <cmath>

using wb::core::StepRecord;
using wb::ui::MetricChartView;
using wb::ui::RunChartsPanel;
using wb::ui::StepList;
using Chart = RunChartsPanel::Chart;

namespace {

const QString kRun = QStringLiteral("20261130-000000-test");

/// A step of the given split; the other fields are plausible and distinct per step.
StepRecord makeStep(int64_t step, double stepMs, const QList<double>& parts, double mfu = 0.0)
{
    StepRecord s;
    s.step = step;
    s.stepMs = stepMs;
    s.dataMs = parts.value(0);
    s.visionMs = parts.value(1);
    s.projectorMs = parts.value(2);
    s.decoderMs = parts.value(3);
    s.backwardMs = parts.value(4);
    s.optimizerMs = parts.value(5);
    s.loss = 6.0 - 0.1 * static_cast<double>(step);
    s.auxLoss = 0.01 + 0.001 * static_cast<double>(step);
    s.gradNorm = 3.0 + 0.25 * static_cast<double>(step);
    s.lr = 1e-4 * static_cast<double>(step);
    s.memAllocGib = 1.0;
    s.memReservedGib = 2.0;
    s.memPeakGib = 1.5;
    s.tokensPerSPerGpu = 1000.0 * static_cast<double>(step);
    s.tflopsPerGpu = mfu * 989.5;
    s.mfu = mfu;
    return s;
}

/// Feeds `steps` as the run's history and waits for the coalesced redraw.
void feed(RunChartsPanel& panel, const StepList& steps)
{
    panel.showRun(kRun, QStringLiteral("test"));
    panel.setHistory(kRun, steps);
    QTRY_VERIFY(panel.drawnPoints(Chart::StepTime) == static_cast<int>(steps.size()) && !panel.redrawPending());
}

double part(const StepRecord& s, int phase)
{
    switch (static_cast<RunChartsPanel::Phase>(phase)) {
    case RunChartsPanel::Phase::Data: return s.dataMs;
    case RunChartsPanel::Phase::Vision: return s.visionMs;
    case RunChartsPanel::Phase::Projector: return s.projectorMs;
    case RunChartsPanel::Phase::Decoder: return s.decoderMs;
    case RunChartsPanel::Phase::Backward: return s.backwardMs;
    case RunChartsPanel::Phase::Optimizer: return s.optimizerMs;
    case RunChartsPanel::Phase::Other: {
        double sum = 0.0;
        for (int p = 0; p < 6; ++p)
            sum += part(s, p);
        return std::max(0.0, s.stepMs - sum);
    }
    }
    return 0.0;
}

int visibleLegendMarkers(MetricChartView* view)
{
    int visible = 0;
    for (auto* marker : view->chart()->legend()->markers())
        visible += marker->isVisible() ? 1 : 0;
    return visible;
}

StepList readFixture(const QString& name)
{
    QFile file(QStringLiteral(WB_TEST_DATA_DIR "/") + name);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bytes = file.readAll();
    wb::core::MetricsLineReader reader;
    StepList steps;
    for (const auto& record : reader.feed(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size()))).records)
        if (const auto* step = std::get_if<StepRecord>(&record))
            steps.append(*step);
    return steps;
}

}  // namespace

class TestRunChartsPanel : public QObject {
    Q_OBJECT

private slots:
    void gpuChartShowsOnlyWithSamples()
    {
        // Issue 18 item 10: a run with NVML samples gets the GPU chart (mean utilization and power,
        // hottest temperature, slowest SM clock per sample, at its step); a CPU run keeps three rows.
        RunChartsPanel panel;
        panel.resize(1000, 900);
        feed(panel, {makeStep(1, 100.0, {}), makeStep(2, 100.0, {})});
        MetricChartView* gpu = panel.gpuChart();
        QVERIFY(!gpu->isVisibleTo(&panel));
        using wb::core::GpuRecord;
        const GpuRecord first{100.0, 1, {{0, 90, 80, 140, 600, 60, 1980}, {1, 70, 80, 140, 500, 70, 1500}}};
        panel.setGpuSamples(kRun, {first}, true);
        QVERIFY(gpu->isVisibleTo(&panel));
        QCOMPARE(gpu->series(0)->points(), QList<QPointF>{QPointF(1, 80)});         // mean utilization
        QCOMPARE(gpu->series(1)->points(), QList<QPointF>{QPointF(1, 70)});         // hottest
        QCOMPARE(gpu->rightSeries(0)->points(), QList<QPointF>{QPointF(1, 550)});   // mean power
        QCOMPARE(gpu->rightSeries(1)->points(), QList<QPointF>{QPointF(1, 1500)});  // slowest clock
        const GpuRecord second{105.0, 2, {{0, 95, 80, 140, NAN, 62, 1900}}};
        panel.setGpuSamples(kRun, {second}, false);
        QCOMPARE(gpu->series(0)->count(), 2);
        QCOMPARE(gpu->rightSeries(0)->count(), 1);  // no power sensor in the second sample: no point
        panel.setGpuSamples(QStringLiteral("another-run"), {first}, false);  // not the shown run
        QCOMPARE(gpu->series(0)->count(), 2);
        panel.clearRun();
        QVERIFY(!gpu->isVisibleTo(&panel));
    }

    void headerSaysTheStateOnce()
    {
        // Issue 18 item 7: "finished  finished 60 steps" — the message without the state word.
        RunChartsPanel panel;
        feed(panel, {makeStep(1, 100.0, {})});
        panel.setRunState(kRun, wb::core::RunState::Finished, QStringLiteral("finished 60 steps"));
        QVERIFY2(panel.headerText().count(QStringLiteral("finished")) == 1 && panel.headerText().contains(QStringLiteral("60 steps")),
                 qPrintable(panel.headerText()));
        panel.setRunState(kRun, wb::core::RunState::Running, QStringLiteral("training"));
        QVERIFY2(panel.headerText().contains(QStringLiteral("running")) && panel.headerText().contains(QStringLiteral("training")),
                 qPrintable(panel.headerText()));
        QCOMPARE(wb::ui::statusDetail(QStringLiteral("finished"), QStringLiteral("finished")), QString());
        QCOMPARE(wb::ui::statusDetail(QStringLiteral("failed"), QStringLiteral("failedover to node 2")),
                 QStringLiteral("failedover to node 2"));  // only the whole word
    }

    void lossAxisStaysAtOrAboveZero()
    {
        // Issue 18 item 7: losses from 6 down to 0.02 put the axis at -0.5 (5 % padding, then
        // round ticks); no loss is negative, so the axis starts at 0.
        RunChartsPanel panel;
        panel.resize(1000, 800);
        StepList steps;
        for (int i = 1; i <= 60; ++i) {
            StepRecord s = makeStep(i, 100.0, {});
            s.loss = i < 60 ? 6.0 - 0.1 * i : 0.02;
            steps.append(s);
        }
        feed(panel, steps);
        auto* axis = qobject_cast<QValueAxis*>(panel.chartView(Chart::Loss)->axisY());
        QVERIFY(axis);
        QCOMPARE(axis->min(), 0.0);
        QVERIFY(axis->max() >= 5.9);
        // A run with no steps yet: round ticks on both axes.
        panel.clearRun();
        auto* empty = qobject_cast<QValueAxis*>(panel.chartView(Chart::Loss)->axisY());
        QCOMPARE(empty->min(), 0.0);
        QCOMPARE(empty->max(), 1.0);
        QCOMPARE(empty->tickCount(), 6);
        QCOMPARE(panel.chartView(Chart::Loss)->axisX()->tickCount(), 6);
    }

    void splitBandsAreTheFedParts_data()
    {
        QTest::addColumn<StepList>("steps");
        // One rank: the parts leave 0.7 ms of the step to "other".
        QTest::newRow("one rank, other = the rest")
            << StepList{makeStep(1, 251.5, {0.0, 17.5, 4.6, 51.2, 140.0, 37.5}),
                        makeStep(2, 260.0, {3.0, 18.0, 4.0, 50.0, 150.0, 30.0}),
                        makeStep(3, 120.0, {100.0, 5.0, 1.0, 4.0, 6.0, 1.0})};
        // Maxima over ranks from different ranks: the parts add up to 300 ms > 250 ms, other is 0
        // and the top of the stack is the parts' sum, not the step.
        QTest::newRow("multi-rank maxima above the step, other clipped at 0")
            << StepList{makeStep(1, 250.0, {10.0, 20.0, 10.0, 60.0, 160.0, 40.0}),
                        makeStep(2, 249.0, {0.0, 17.0, 4.0, 50.0, 140.0, 38.0}),  // sums to exactly 249
                        makeStep(3, 100.0, {0.0, 0.0, 0.0, 90.0, 20.0, 0.0})};
    }

    void splitBandsAreTheFedParts()
    {
        QFETCH(StepList, steps);
        RunChartsPanel panel;
        panel.resize(1000, 800);
        feed(panel, steps);

        MetricChartView* view = panel.chartView(Chart::StepSplit);
        QCOMPARE(view->stackCount(), RunChartsPanel::kPhaseCount);
        QVERIFY(panel.hasSplit());
        QVERIFY(view->stackShown());
        QVERIFY(view->notice().isEmpty());
        for (int p = 0; p < RunChartsPanel::kPhaseCount; ++p) {
            const auto uppers = view->stackUpper(p)->points();
            QCOMPARE(uppers.size(), steps.size());
            QCOMPARE(view->stackArea(p)->upperSeries(), view->stackUpper(p));
            QCOMPARE(view->stackArea(p)->lowerSeries(), p == 0 ? nullptr : view->stackUpper(p - 1));
            for (qsizetype i = 0; i < steps.size(); ++i) {
                const StepRecord& s = steps[i];
                double cumulative = 0.0;
                for (int q = 0; q <= p; ++q)
                    cumulative += part(s, q);
                QCOMPARE(uppers[i].x(), static_cast<double>(s.step));
                // The upper bound is cumulative, and the band (upper − lower) is the fed part.
                QVERIFY2(std::abs(uppers[i].y() - cumulative) < 1e-9,
                         qPrintable(QStringLiteral("band %1 step %2: %3 vs %4").arg(p).arg(s.step).arg(uppers[i].y()).arg(cumulative)));
                const double below = p == 0 ? 0.0 : view->stackUpper(p - 1)->points()[i].y();
                QVERIFY(std::abs((uppers[i].y() - below) - part(s, p)) < 1e-9);
                QVERIFY(uppers[i].y() >= below);
            }
        }
        // The top of the stack is never below the step time, and is it unless the parts overrun.
        const auto top = view->stackUpper(RunChartsPanel::kPhaseCount - 1)->points();
        for (qsizetype i = 0; i < steps.size(); ++i)
            QVERIFY(top[i].y() >= steps[i].stepMs);
        // The split's legend is the view's wrapped one: every band, top band first.
        QStringList names;
        for (const auto& entry : view->wrappedLegendEntries())
            names.append(entry.text);
        QStringList expected;
        for (int p = RunChartsPanel::kPhaseCount - 1; p >= 0; --p)
            expected.append(RunChartsPanel::phaseName(static_cast<RunChartsPanel::Phase>(p)));
        QCOMPARE(names, expected);
        QCOMPARE(visibleLegendMarkers(view), 0);  // QLegend is hidden in its favour
    }

    // The split's seven legend entries sit below its plot in rows, so the plot is as wide as its
    // neighbour's (beside the plot, the legend left it ~190 px at 1400 × 900), and every entry is
    // whole inside the chart — at the main window's size and in a narrow one.
    void splitLegendLeavesThePlotItsWidth_data()
    {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("rows");
        QTest::newRow("main window 1400 x 900 (panel beside the run list)") << 865 << 2;
        QTest::newRow("narrow panel") << 660 << 3;
    }

    void splitLegendLeavesThePlotItsWidth()
    {
        QFETCH(int, width);
        QFETCH(int, rows);
        RunChartsPanel panel;
        panel.resize(width, 860);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        feed(panel, {makeStep(1, 251.5, {0.0, 17.5, 4.6, 51.2, 140.0, 37.5}),
                     makeStep(2, 250.0, {1.0, 17.5, 4.6, 51.2, 140.0, 37.5})});
        MetricChartView* split = panel.chartView(Chart::StepSplit);
        MetricChartView* stepTime = panel.chartView(Chart::StepTime);  // same grid column width
        QTRY_VERIFY(split->wrappedLegendEntries().size() == RunChartsPanel::kPhaseCount);
        const QRectF plot = split->chart()->plotArea();
        qInfo("panel %d px wide: split plot %.0f x %.0f px, step-time plot %.0f x %.0f px", width, plot.width(),
              plot.height(), stepTime->chart()->plotArea().width(), stepTime->chart()->plotArea().height());
        QVERIFY2(plot.width() >= stepTime->chart()->plotArea().width() - 4.0,
                 qPrintable(QStringLiteral("split plot %1 px, step-time plot %2 px")
                                .arg(plot.width()).arg(stepTime->chart()->plotArea().width())));
        QVERIFY2(plot.height() >= 0.6 * stepTime->chart()->plotArea().height(), qPrintable(QString::number(plot.height())));
        const QRectF chartRect(QPointF(0, 0), split->chart()->size());
        QSet<qreal> rowTops;
        const auto& entries = split->wrappedLegendEntries();
        for (qsizetype i = 0; i < entries.size(); ++i) {
            const QRectF r = entries[i].rect;
            QVERIFY2(chartRect.contains(r), qPrintable(entries[i].text));
            QVERIFY2(r.top() >= plot.bottom(), qPrintable(entries[i].text));  // below the plot
            for (qsizetype j = 0; j < i; ++j)
                QVERIFY2(!r.intersects(entries[j].rect), qPrintable(entries[i].text + QStringLiteral(" overlaps ") + entries[j].text));
            rowTops.insert(r.top());
        }
        QCOMPARE(rowTops.size(), rows);
    }

    void splitToolTipSaysWhenOtherIsClipped()
    {
        RunChartsPanel panel;
        panel.resize(1000, 800);
        feed(panel, {makeStep(1, 251.5, {0.0, 17.5, 4.6, 51.2, 140.0, 37.5}),
                     makeStep(2, 250.0, {10.0, 20.0, 10.0, 60.0, 160.0, 40.0})});
        const QString fits = panel.toolTipAt(Chart::StepSplit, 1.2);  // nearest step: 1
        QVERIFY2(fits.startsWith(QStringLiteral("Step 1\n")), qPrintable(fits));
        QVERIFY2(fits.contains(QStringLiteral("Vision: 17.5 ms")), qPrintable(fits));
        QVERIFY2(fits.contains(QStringLiteral("Backward: 140.0 ms")), qPrintable(fits));
        QVERIFY2(fits.contains(QStringLiteral("Other: 0.7 ms")), qPrintable(fits));
        QVERIFY(!fits.contains(QStringLiteral("clipped")));
        const QString clipped = panel.toolTipAt(Chart::StepSplit, 1.8);
        QVERIFY2(clipped.startsWith(QStringLiteral("Step 2\n")), qPrintable(clipped));
        QVERIFY2(clipped.contains(QStringLiteral("Other: 0.0 ms")), qPrintable(clipped));
        QVERIFY2(clipped.contains(QStringLiteral("The parts add up to 300.0 ms")), qPrintable(clipped));
        QVERIFY2(clipped.contains(QStringLiteral("clipped at 0")), qPrintable(clipped));

        // Hovering reaches the same text through the view: a point in the plot area maps to a step.
        MetricChartView* view = panel.chartView(Chart::StepSplit);
        const QRectF plot = view->chart()->plotArea();
        const QPoint inside = view->mapFromScene(view->chart()->mapToScene(plot.center()));
        QVERIFY2(view->toolTipAt(inside).startsWith(QStringLiteral("Step ")), qPrintable(view->toolTipAt(inside)));
        QVERIFY(view->toolTipAt(QPoint(1, 1)).isEmpty());  // outside the plot area
    }

    void streamWithoutSplitShowsTheNotice()
    {
        RunChartsPanel panel;
        panel.resize(1000, 800);
        panel.showRun(kRun, QStringLiteral("test"));
        MetricChartView* view = panel.chartView(Chart::StepSplit);
        QVERIFY(view->notice().isEmpty());  // no steps yet: nothing to explain

        // A foreign trainer's stream: step time only, every part 0.
        panel.setHistory(kRun, {makeStep(1, 100.0, {}), makeStep(2, 110.0, {})});
        QTRY_VERIFY(panel.drawnPoints(Chart::StepTime) == 2 && !panel.redrawPending());
        QVERIFY(!panel.hasSplit());
        QVERIFY2(view->notice().startsWith(QStringLiteral("No time split in this run's stream")), qPrintable(view->notice()));
        QVERIFY(!view->stackShown());
        for (int p = 0; p < view->stackCount(); ++p) {
            QVERIFY(!view->stackArea(p)->isVisible());
            QCOMPARE(view->stackUpper(p)->count(), 0);  // not a band of "other" = the whole step
        }
        QVERIFY(view->wrappedLegendEntries().isEmpty());
        QVERIFY(!panel.latestText().contains(QStringLiteral("time split")));
        QVERIFY(panel.toolTipAt(Chart::StepSplit, 1).contains(QStringLiteral("No time split")));

        // A run that has the split replaces it: the notice goes, the bands come.
        panel.showRun(QStringLiteral("other-run"), QStringLiteral("other"));
        QVERIFY(view->notice().isEmpty());
        panel.setHistory(QStringLiteral("other-run"), {makeStep(1, 100.0, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0})});
        QTRY_VERIFY(panel.drawnPoints(Chart::StepSplit) == 1 && !panel.redrawPending());
        QVERIFY(view->notice().isEmpty());
        QVERIFY(view->stackShown());
        QVERIFY(view->stackArea(0)->isVisible());
    }

    void mfuIsALineOnlyWithAPeakRate_data()
    {
        QTest::addColumn<double>("mfu");
        QTest::newRow("CPU: mfu 0") << 0.0;
        QTest::newRow("GPU: mfu 32.5 %") << 0.325;
    }

    void mfuIsALineOnlyWithAPeakRate()
    {
        QFETCH(double, mfu);
        RunChartsPanel panel;
        panel.resize(1000, 800);
        feed(panel, {makeStep(1, 100.0, {}, mfu), makeStep(2, 100.0, {}, mfu * 1.1), makeStep(3, 100.0, {}, mfu)});
        MetricChartView* view = panel.chartView(Chart::Throughput);
        QCOMPARE(view->rightSeriesCount(), 1);
        QCOMPARE(view->series(0)->count(), 3);  // effective tokens/s/GPU either way
        QCOMPARE(view->series(0)->points()[1].y(), 2000.0);
        if (mfu == 0.0) {
            QVERIFY(!panel.hasMfu());
            QCOMPARE(view->headerNote(), QStringLiteral("MFU n/a (no peak FLOP/s known for this device)"));
            QVERIFY(view->notice().isEmpty());  // not on the plot: above it (issue 18 item 7)
            QVERIFY(!view->rightAxisShown());
            QVERIFY(!view->axisRight()->isVisible());
            QVERIFY(!view->rightSeries(0)->isVisible());
            QCOMPARE(view->rightSeries(0)->count(), 0);  // no flat 0 line
            QVERIFY(panel.latestText().contains(QStringLiteral("MFU n/a")));
            QVERIFY(panel.toolTipAt(Chart::Throughput, 2).contains(QStringLiteral("MFU: n/a")));
        } else {
            QVERIFY(panel.hasMfu());
            QVERIFY(view->notice().isEmpty());
            QVERIFY(view->headerNote().isEmpty());
            QVERIFY(view->rightAxisShown());
            QVERIFY(view->axisRight()->isVisible());
            QVERIFY(view->rightSeries(0)->isVisible());
            const auto points = view->rightSeries(0)->points();
            QCOMPARE(points.size(), 3);
            QCOMPARE(points[0].y(), 32.5);  // percent
            QVERIFY(std::abs(points[1].y() - 35.75) < 1e-9);
            QVERIFY(view->axisRight()->max() >= 35.75);
            QVERIFY2(panel.latestText().contains(QStringLiteral("MFU 32.5 % (321.6 TFLOP/s/GPU)")), qPrintable(panel.latestText()));
            const QString tip = panel.toolTipAt(Chart::Throughput, 1);
            QVERIFY2(tip.contains(QStringLiteral("TFLOP/s/GPU: 321.6")) && tip.contains(QStringLiteral("MFU: 32.5 %")),
                     qPrintable(tip));
        }
    }

    void gradNormAndLearningRateLines()
    {
        RunChartsPanel panel;
        panel.resize(1000, 800);
        const StepList steps{makeStep(1, 100.0, {}), makeStep(2, 100.0, {}), makeStep(3, 100.0, {}), makeStep(4, 100.0, {})};
        feed(panel, steps);
        MetricChartView* view = panel.chartView(Chart::GradNorm);
        QCOMPARE(view->seriesCount(), 1);
        QCOMPARE(view->rightSeriesCount(), 1);
        QVERIFY(view->rightAxisShown());
        const auto norms = view->series(0)->points();
        const auto rates = view->rightSeries(0)->points();
        QCOMPARE(norms.size(), steps.size());
        QCOMPARE(rates.size(), steps.size());
        for (qsizetype i = 0; i < steps.size(); ++i) {
            QCOMPARE(norms[i], QPointF(static_cast<double>(steps[i].step), steps[i].gradNorm));
            QCOMPARE(rates[i], QPointF(static_cast<double>(steps[i].step), steps[i].lr));
        }
        // Each axis fits its own line: grad norm 3.25..4 on the left, lr 1e-4..4e-4 on the right.
        const auto* left = qobject_cast<QValueAxis*>(view->axisY());
        QVERIFY(left && left->max() >= 4.0 && left->max() < 10.0);
        QVERIFY(view->axisRight()->max() >= 4e-4 && view->axisRight()->max() < 1e-3);
        // The loss chart carries the router's aux loss on its right axis.
        MetricChartView* loss = panel.chartView(Chart::Loss);
        QVERIFY(loss->rightAxisShown());
        QCOMPARE(loss->rightSeries(0)->points().back().y(), steps.back().auxLoss);
        QVERIFY(panel.toolTipAt(Chart::GradNorm, 4).contains(QStringLiteral("Gradient norm: 4.0000")));
    }

    void headerShowsTheLatestSplit()
    {
        RunChartsPanel panel;
        feed(panel, {makeStep(1, 300.0, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}),
                     makeStep(2, 251.5, {0.0, 17.5, 4.6, 51.2, 140.0, 37.5})});
        const QString latest = panel.latestText();
        QVERIFY2(latest.contains(QStringLiteral("vision 17.5 · ")), qPrintable(latest));
        QVERIFY2(latest.contains(QStringLiteral("proj 4.6 · ")), qPrintable(latest));
        QVERIFY2(latest.contains(QStringLiteral("decoder 51.2 · ")), qPrintable(latest));
        QVERIFY2(latest.contains(QStringLiteral("backward 140.0 · ")), qPrintable(latest));
        QVERIFY2(latest.contains(QStringLiteral("optim 37.5 ms")), qPrintable(latest));
        QVERIFY2(latest.contains(QStringLiteral("step time 251.5 ms")), qPrintable(latest));
    }

    void recordedGpuLikeStreamDrawsEveryPart()
    {
        const StepList steps = readFixture(QStringLiteral("h200-latest-round.metrics.jsonl"));
        QCOMPARE(steps.size(), qsizetype(60));
        RunChartsPanel panel;
        panel.resize(1000, 800);
        feed(panel, steps);
        QVERIFY(panel.hasSplit());
        QVERIFY(panel.hasMfu());
        MetricChartView* split = panel.chartView(Chart::StepSplit);
        const StepRecord& s = steps[11];  // step 12
        const double vision = split->stackUpper(1)->points()[11].y() - split->stackUpper(0)->points()[11].y();
        QVERIFY(std::abs(vision - s.visionMs) < 1e-9);
        QCOMPARE(split->stackUpper(RunChartsPanel::kPhaseCount - 1)->points()[11].y(), s.stepMs);
        const auto mfu = panel.chartView(Chart::Throughput)->rightSeries(0)->points();
        QCOMPARE(mfu.size(), steps.size());
        QVERIFY(std::abs(mfu[11].y() - 100.0 * s.mfu) < 1e-9);
        QVERIFY(mfu[11].y() > 30.0 && mfu[11].y() < 35.0);
    }

    void longRunsAreDecimatedPerBand()
    {
        // 20k steps into a narrow chart: every band is decimated on its own and keeps its spike.
        RunChartsPanel panel;
        panel.resize(700, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        StepList steps;
        for (int64_t i = 1; i <= 20000; ++i)
            steps.append(makeStep(i, 250.0, {0.0, i == 12345 ? 90.0 : 17.5, 4.6, 51.2, 140.0, 37.5}));
        panel.showRun(kRun, QStringLiteral("long"));
        panel.setHistory(kRun, steps);
        QTRY_VERIFY(panel.drawnPoints(Chart::StepSplit) > 0 && !panel.redrawPending());
        MetricChartView* split = panel.chartView(Chart::StepSplit);
        const auto vision = split->stackUpper(1)->points();
        QVERIFY2(vision.size() <= 4 * split->plotColumns(), qPrintable(QString::number(vision.size())));
        double highest = 0.0;
        for (const auto& p : vision)
            highest = std::max(highest, p.y());
        QCOMPARE(highest, 90.0);  // the one slow vision step survives decimation
        QCOMPARE(vision.front().x(), 1.0);
        QCOMPARE(vision.back().x(), 20000.0);
    }
};

WB_UI_TEST_MAIN(TestRunChartsPanel)
#include "test_run_charts_panel.moc"
