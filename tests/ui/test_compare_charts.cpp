// CompareChartPanel on its own, offscreen, with runs built in memory: a one-step spike in 100k
// steps survives decimation and is painted where QtCharts maps it (linear and log axes); the
// lines are computed off the GUI thread, coalesced, and stale results are dropped; hovering a line
// shows the run and the point; clicking a run's legend entry hides and shows it.
#include "ui/compare_chart_panel.h"
#include "ui/compare_lines_item.h"
#include "ui/metric_chart_view.h"
#include "ui_test_main.h"

#include "core/compare/run_comparison.h"

#include <QChart>
#include <QGraphicsTextItem>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSignalSpy>
#include <QTest>
#include <QToolTip>

#include <cmath>
#include <memory>

using wb::ui::CompareChartPanel;
using Chart = wb::ui::CompareChartPanel::Chart;

namespace {

constexpr int64_t kSteps = 100'000;
constexpr int64_t kSpikeStep = 61'234;
constexpr double kSpikeMs = 400.0;

wb::core::ComparedRun makeRun(const std::string& name, double stepMs, bool spike)
{
    wb::core::ComparedRun run;
    run.summary.id = name;
    run.summary.name = name;
    wb::core::StepSeries s;
    for (int64_t i = 1; i <= kSteps; ++i) {
        const double jitter = 0.02 * stepMs * std::sin(static_cast<double>(i) * 0.37);
        s.step.push_back(i);
        s.time.push_back(static_cast<double>(i) * stepMs / 1000.0);
        s.stepMs.push_back(spike && i == kSpikeStep ? kSpikeMs : stepMs + jitter);
        s.images.push_back(8);
        s.imageTokens.push_back(1024);
        s.textTokens.push_back(3072);
        s.effectiveTokens.push_back(4096);
        s.loss.push_back(3.0 / std::sqrt(static_cast<double>(i)));
        s.memReservedGib.push_back(12);
        s.memPeakGib.push_back(10);
        s.tflopsPerGpu.push_back(50);
        s.mfu.push_back(0.5);
    }
    run.setSteps(std::move(s));
    return run;
}

std::shared_ptr<const wb::core::Comparison> twoRuns()
{
    std::vector<wb::core::ComparedRun> runs{makeRun("spiky", 100.0, true), makeRun("steady", 60.0, false)};
    auto built = wb::core::buildComparison(std::move(runs), 0, std::nullopt);
    return built ? std::make_shared<const wb::core::Comparison>(std::move(*built)) : nullptr;
}

// `panel` shown at 1200 × 800 with `comparison`, its lines computed on the worker (false when the
// window is not exposed or the lines do not arrive within 5 s).
bool showComputed(CompareChartPanel& panel, const std::shared_ptr<const wb::core::Comparison>& comparison)
{
    panel.resize(1200, 800);
    panel.show();
    if (!QTest::qWaitForWindowExposed(&panel))
        return false;
    panel.setComparison(comparison);
    return QTest::qWaitFor([&] { return panel.isUpToDate(); });
}

/// Where QtCharts itself puts `value` on `chart` (through the run's legend series and its axes).
QPointF chartPosition(wb::ui::MetricChartView* view, int run, QPointF value)
{
    return view->chart()->mapToPosition(value, view->series(run));
}

}  // namespace

class TestCompareCharts : public QObject {
    Q_OBJECT

private:
    void checkSpikePainted(CompareChartPanel& panel)
    {
        auto* view = panel.chartView(Chart::StepTime);
        const auto* lines = panel.lines(Chart::StepTime);
        QVERIFY(lines);
        const auto& raw = lines->runs[0].raw;
        // Decimated: a 100k-step run is two points per pixel column (+ its ends), not 100k.
        const int columns = panel.shownRequest().columns[0];
        QVERIFY(std::abs(columns - view->plotColumns()) <= std::max(8, view->plotColumns() / 10));
        QVERIFY2(raw.size() <= 2 * static_cast<size_t>(columns) + 2, qPrintable(QString::number(raw.size())));
        const auto at = std::find(raw.y.begin(), raw.y.end(), kSpikeMs);
        QVERIFY2(at != raw.y.end(), "the one-step spike was decimated away");
        const size_t index = static_cast<size_t>(at - raw.y.begin());
        QCOMPARE(raw.x[index], static_cast<double>(kSpikeStep));
        // Painted where QtCharts maps the value (the item's own mapping agrees with the axes).
        const QPointF painted = panel.runItem(Chart::StepTime, 0)->polygon(true)[static_cast<qsizetype>(index)];
        const QPointF expected = chartPosition(view, 0, QPointF(kSpikeStep, kSpikeMs));
        QVERIFY2(QLineF(painted, expected).length() < 0.5,
                 qPrintable(QStringLiteral("painted (%1, %2), QtCharts (%3, %4)")
                                .arg(painted.x()).arg(painted.y()).arg(expected.x()).arg(expected.y())));
        QVERIFY(view->chart()->plotArea().contains(painted));
        // And visible in the pixels: the spike's column has the run's colour well above the line.
        const QImage image = view->grab().toImage();
        const QPoint top = view->mapFromScene(view->chart()->mapToScene(painted));
        const QPoint base = view->mapFromScene(view->chart()->mapToScene(chartPosition(view, 0, QPointF(kSpikeStep, 100.0))));
        int coloured = 0;
        const qreal dpr = image.devicePixelRatio();
        for (int y = top.y() + 4; y < base.y() - 4; ++y)
            for (int dx = -1; dx <= 1; ++dx) {
                const QColor c = image.pixelColor(QPoint(top.x() + dx, y) * dpr);
                coloured += c.blue() > c.red() + 8;  // run 0 is blue (#1f77b4), faint on white
            }
        QVERIFY2(coloured >= (base.y() - top.y() - 8) / 2, qPrintable(QString::number(coloured)));
    }

private slots:
    void spikeSurvivesAndIsPaintedWhereQtChartsMapsIt()
    {
        auto comparison = twoRuns();
        QVERIFY(comparison);
        CompareChartPanel panel;
        QVERIFY(showComputed(panel, comparison));  // no precomputed lines: computed on a worker
        QVERIFY(panel.lines(Chart::StepTime));
        checkSpikePainted(panel);

        // Log scale: the spike is still there, on a log axis, where QLogValueAxis puts it.
        panel.setLogScale(true);
        QTRY_VERIFY(panel.isUpToDate());
        QVERIFY(qobject_cast<QLogValueAxis*>(panel.chartView(Chart::StepTime)->axisY()));
        QVERIFY(panel.lines(Chart::StepTime)->bounds.yMax >= kSpikeMs);
        checkSpikePainted(panel);

        // A resize re-maps at once and re-decimates (off the GUI thread) for the new width.
        const size_t wideRaw = panel.lines(Chart::StepTime)->runs[0].raw.size();
        panel.resize(700, 600);
        QTRY_VERIFY(panel.lines(Chart::StepTime)->runs[0].raw.size() < wideRaw * 3 / 4);
        QTRY_VERIFY(panel.isUpToDate());
        checkSpikePainted(panel);
    }

    void staleResultsAreDroppedAndRequestsCoalesced()
    {
        auto comparison = twoRuns();
        CompareChartPanel panel;
        panel.resize(1000, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QList<wb::core::ChartLinesRequest> shown;
        connect(&panel, &CompareChartPanel::linesShown, this, [&] { shown.append(panel.shownRequest()); });
        panel.setComparison(comparison);
        panel.setXAxis(CompareChartPanel::XAxis::WallTime);  // while the first computation runs
        panel.setLogScale(true);
        panel.setXAxis(CompareChartPanel::XAxis::EffectiveTokens);
        QTRY_VERIFY(panel.isUpToDate());
        // Only lines for the last settings were shown: the stale ones were dropped unseen. (A
        // second set may follow when the new axis labels narrowed the plot area.)
        QVERIFY(!shown.isEmpty());
        for (const auto& request : shown) {
            QCOMPARE(request.xAxis, wb::core::ChartXAxis::EffectiveTokens);
            QVERIFY(request.logY);
        }
        QCOMPARE(panel.lines(Chart::Loss)->runs[1].smooth.x.back(), 4096.0 * kSteps);
        // Shading needs no computation: it is immediate.
        QCOMPARE(panel.shadedBands(Chart::StepTime), qsizetype(2));
        panel.setShadeSteadyWindow(false);
        QCOMPARE(panel.shadedBands(Chart::StepTime), qsizetype(0));
        QVERIFY(panel.isUpToDate());
        // Dropping the comparison while lines are computed: nothing arrives for it.
        panel.setSmoothing(0.3);
        panel.setComparison(nullptr);
        QTest::qWait(300);
        QCOMPARE(panel.lines(Chart::StepTime), nullptr);
        QCOMPARE(panel.drawnPoints(), qsizetype(0));
    }

    void hoverShowsTheNearestPoint()
    {
        auto comparison = twoRuns();
        CompareChartPanel panel;
        QVERIFY(showComputed(panel, comparison));
        auto* view = panel.chartView(Chart::StepTime);
        // A point of the "steady" run's smoothed line, in viewport coordinates.
        const auto* item = panel.runItem(Chart::StepTime, 1);
        const QPolygonF& smooth = item->polygon(false);
        const QPointF onLine = smooth[smooth.size() / 2];
        const QPoint pos = view->mapFromScene(view->chart()->mapToScene(onLine));
        const QString text = panel.toolTipAt(Chart::StepTime, pos);
        QVERIFY2(text.startsWith(QStringLiteral("steady\n")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Step: ")) && text.contains(QStringLiteral("Step time (ms): 6")),
                 qPrintable(text));
        // Far from every line (the top left of the plot area): nothing.
        const QPoint empty = view->mapFromScene(view->chart()->mapToScene(view->chart()->plotArea().topLeft() + QPointF(3, 3)));
        QVERIFY(panel.toolTipAt(Chart::StepTime, empty).isEmpty());
        // Through a real mouse move on the viewport: the tooltip shows it.
        QTest::mouseMove(view->viewport(), pos);
        QTRY_VERIFY(QToolTip::isVisible());
        QCOMPARE(QToolTip::text(), text);
    }

    void legendClickHidesAndShowsARun()
    {
        auto comparison = twoRuns();
        CompareChartPanel panel;
        QVERIFY(showComputed(panel, comparison));
        auto* view = panel.chartView(Chart::Loss);
        QCOMPARE(view->chart()->legend()->markers().size(), 2);  // one entry per run
        QCOMPARE(panel.shadedBands(Chart::Loss), qsizetype(2));
        const QPolygonF& spiky = panel.runItem(Chart::Loss, 0)->polygon(false);
        const QPoint onSpiky = view->mapFromScene(view->chart()->mapToScene(spiky[spiky.size() / 3]));
        QVERIFY(panel.toolTipAt(Chart::Loss, onSpiky).startsWith(QStringLiteral("spiky")) ||
                panel.toolTipAt(Chart::Loss, onSpiky).startsWith(QStringLiteral("steady")));  // same loss curve

        // Click the legend entry "spiky" (its label, where a user clicks).
        QGraphicsTextItem* label = nullptr;
        for (QGraphicsItem* it : view->scene()->items())
            if (auto* text = dynamic_cast<QGraphicsTextItem*>(it); text && text->toPlainText() == QStringLiteral("spiky"))
                label = text;
        QVERIFY(label);
        const QPoint click = view->mapFromScene(label->sceneBoundingRect().center());
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, click);
        QVERIFY(!panel.isRunVisible(0));
        for (int c = 0; c < int(Chart::ChartCount); ++c) {  // hidden on every chart
            QVERIFY(!panel.runItem(static_cast<Chart>(c), 0)->isVisible());
            QVERIFY(panel.runItem(static_cast<Chart>(c), 1)->isVisible());
            QCOMPARE(panel.shadedBands(static_cast<Chart>(c)), qsizetype(1));
        }
        const QString hidden = panel.toolTipAt(Chart::Loss, onSpiky);
        QVERIFY2(!hidden.startsWith(QStringLiteral("spiky")), qPrintable(hidden));  // no hover on a hidden run
        // Its legend entry fades, and a second click brings the run back.
        auto* marker = view->chart()->legend()->markers(view->series(0)).first();
        QVERIFY(marker->labelBrush().color().alpha() < 255);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, click);
        QVERIFY(panel.isRunVisible(0));
        QVERIFY(panel.runItem(Chart::Loss, 0)->isVisible());
        QCOMPARE(panel.shadedBands(Chart::Loss), qsizetype(2));
        QCOMPARE(marker->labelBrush().color().alpha(), 255);
    }
};

WB_UI_TEST_MAIN(TestCompareCharts)
#include "test_compare_charts.moc"
