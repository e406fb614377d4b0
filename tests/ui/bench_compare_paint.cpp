// Benchmark (not a test; not registered with ctest): the paint of the compare charts, three ways,
// on the same decimated lines of N in-memory runs × M steps (no store): (a) CompareChartPanel's
// items — one CompareLinesItem per run, segments drawn with QPainter; (b) QtCharts QLineSeries,
// raw + smoothed per run (what the view used before); (c) the same with QLineSeries::setUseOpenGL
// (QtCharts draws the lines in a QOpenGLWidget over the chart; needs a GL context). Each is timed
// two ways: the lines handed to the charts plus the paint that follows (what a new comparison
// costs the GUI thread), and QWidget::grab() of the filled views (a repaint, GL included).
// Usage: QT_QPA_PLATFORM=offscreen bench_compare_paint [runs=20] [steps=100000]
//        xvfb-run -s "-screen 0 1920x1200x24" bench_compare_paint ...   (the xcb platform)
#include "ui/compare_chart_panel.h"
#include "ui/metric_chart_view.h"

#include "core/compare/run_comparison.h"

#include <QApplication>
#include <QChart>
#include <QElapsedTimer>
#include <QGridLayout>
#include <QLineSeries>
#include <QOpenGLContext>
#include <QPen>
#include <QTest>

#include <cmath>
#include <cstdio>
#include <memory>

namespace {

const QList<QColor> kPalette = {
    QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};

std::shared_ptr<const wb::core::Comparison> makeComparison(int runCount, int64_t steps)
{
    std::vector<wb::core::ComparedRun> runs;
    for (int r = 0; r < runCount; ++r) {
        wb::core::ComparedRun run;
        run.summary.id = run.summary.name = "run-" + std::to_string(r);
        wb::core::StepSeries s;
        const double stepMs = 100.0 + r;
        for (int64_t i = 1; i <= steps; ++i) {
            const double noise = std::sin(static_cast<double>(i * (r + 3)) * 0.7) * 0.03;  // ±3 % jitter
            s.step.push_back(i);
            s.time.push_back(static_cast<double>(i) * stepMs / 1000.0);
            s.stepMs.push_back(stepMs * (1.0 + noise) * (i < 20 ? 4.0 : 1.0));
            s.images.push_back(8);
            s.imageTokens.push_back(1024);
            s.textTokens.push_back(3072);
            s.effectiveTokens.push_back(4096);
            s.loss.push_back(3.0 / std::sqrt(static_cast<double>(i)) * (1.0 + noise));
            s.memReservedGib.push_back(12);
            s.memPeakGib.push_back(10 + 0.1 * r + noise);
            s.tflopsPerGpu.push_back(50);
            s.mfu.push_back(0.5);
        }
        run.setSteps(std::move(s));
        runs.push_back(std::move(run));
    }
    auto built = wb::core::buildComparison(std::move(runs), 0, std::nullopt);
    return built ? std::make_shared<const wb::core::Comparison>(std::move(*built)) : nullptr;
}

template <typename Views>
double bestGrabMs(const Views& views)
{
    double best = 1e18;
    for (int k = 0; k < 5; ++k) {
        QElapsedTimer t;
        t.start();
        for (auto* v : views)
            (void)v->grab();
        best = std::min(best, t.nsecsElapsed() / 1e6);
    }
    return best;
}

struct Timing {
    double fillAndPaintMs = 1e18;  ///< points handed over + the paint that follows, best of 3
    double repaintMs = 0.0;        ///< grab of the filled charts, best of 5
};

/// Four QtCharts charts with raw + smoothed QLineSeries per run, filled from the same lines.
Timing seriesPaint(const wb::core::ChartSet& set, size_t runCount, bool openGl, QSize size, bool* glOk)
{
    QWidget window;
    auto* grid = new QGridLayout(&window);
    QList<wb::ui::MetricChartView*> views;
    for (int c = 0; c < 4; ++c) {
        QList<wb::ui::MetricSeriesSpec> specs;
        for (size_t r = 0; r < runCount; ++r) {
            QColor faint = kPalette[static_cast<int>(r % 10)];
            faint.setAlpha(60);
            specs.append({QStringLiteral("raw"), faint});
            specs.append({QStringLiteral("run"), kPalette[static_cast<int>(r % 10)]});
        }
        auto* view = new wb::ui::MetricChartView(QStringLiteral("chart"), QStringLiteral("y"), specs, true, &window);
        grid->addWidget(view, c / 2, c % 2);
        views.append(view);
    }
    window.resize(size);
    window.show();
    (void)QTest::qWaitForWindowExposed(&window);
    QApplication::processEvents();
    Timing timing;
    for (int k = 0; k < 3; ++k) {
        for (auto* view : views)
            view->clearPoints();
        QApplication::processEvents();
        QElapsedTimer t;
        t.start();
        for (int c = 0; c < 4; ++c) {
        auto* view = views[c];
        for (size_t r = 0; r < runCount; ++r) {
            const auto& lines = set.charts[static_cast<size_t>(c)].runs[r];
            auto toList = [](const wb::core::ChartLine& line) {
                QList<QPointF> points;
                points.reserve(static_cast<qsizetype>(line.size()));
                for (size_t i = 0; i < line.size(); ++i)
                    points.append(QPointF(line.x[i], line.y[i]));
                return points;
            };
            view->series(static_cast<int>(2 * r))->setUseOpenGL(openGl);
            view->series(static_cast<int>(2 * r + 1))->setUseOpenGL(openGl);
            QPen pen = view->series(static_cast<int>(2 * r))->pen();
            pen.setWidthF(1.0);
            view->series(static_cast<int>(2 * r))->setPen(pen);
            view->setPoints(static_cast<int>(2 * r), toList(lines.raw));
            view->setPoints(static_cast<int>(2 * r + 1), toList(lines.smooth));
        }
        view->rescale();
        }
        QApplication::processEvents();  // the paint
        timing.fillAndPaintMs = std::min(timing.fillAndPaintMs, t.nsecsElapsed() / 1e6);
    }
    *glOk = openGl && !views.front()->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly).isEmpty();
    timing.repaintMs = bestGrabMs(views);
    return timing;
}

}  // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const int runCount = argc > 1 ? std::atoi(argv[1]) : 20;
    const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 100000;
    const QSize size(1100, 620);  // the compare view's chart area at 1600 × 1000
    auto comparison = makeComparison(runCount, steps);
    if (!comparison)
        return 1;

    wb::ui::CompareChartPanel panel;
    panel.resize(size);
    panel.show();
    (void)QTest::qWaitForWindowExposed(&panel);
    panel.setComparison(comparison);
    while (!panel.isUpToDate())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents);
    QApplication::processEvents();
    QList<wb::ui::MetricChartView*> views;
    for (int c = 0; c < 4; ++c)
        views.append(panel.chartView(static_cast<wb::ui::CompareChartPanel::Chart>(c)));
    // Lines for the panel's plot widths (what the loading thread hands over), then: hand-over + paint.
    const auto set = std::make_shared<const wb::core::ChartSet>(wb::core::computeChartSet(*comparison, panel.currentRequest()));
    double itemsFill = 1e18;
    for (int k = 0; k < 3; ++k) {
        panel.setComparison(nullptr);
        QApplication::processEvents();
        QElapsedTimer t;
        t.start();
        panel.setComparison(comparison, set);
        QApplication::processEvents();
        itemsFill = std::min(itemsFill, t.nsecsElapsed() / 1e6);
    }
    const double items = bestGrabMs(views);
    panel.setLogScale(true);
    while (!panel.isUpToDate())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents);
    QApplication::processEvents();
    const double itemsLog = bestGrabMs(views);
    panel.setLogScale(false);
    while (!panel.isUpToDate())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents);
    bool glOk = false;
    const Timing series = seriesPaint(*set, comparison->runs.size(), false, size, &glOk);

    std::printf("platform %s; %d runs × %lld steps; %zu points (raw + smoothed, 4 charts)\n\n",
                qPrintable(QApplication::platformName()), runCount, static_cast<long long>(steps), set->points());
    std::printf("| 4 charts | lines handed over + paint, ms (best of 3) | repaint (grab), ms (best of 5) |\n|---|---|---|\n");
    std::printf("| CompareLinesItem per run (segments) | %.1f | %.1f |\n", itemsFill, items);
    std::printf("| CompareLinesItem per run, log y | | %.1f |\n", itemsLog);
    std::printf("| QLineSeries raw + smoothed per run | %.1f | %.1f |\n", series.fillAndPaintMs, series.repaintMs);
    std::fflush(stdout);
    // QtCharts' OpenGL lines need a GL context; without one (the offscreen platform) the grab of
    // such a chart crashed in QtCharts 6.4, so it is only tried when a context can be made.
    QOpenGLContext context;
    if (!context.create()) {
        std::printf("| QLineSeries + setUseOpenGL(true) | no OpenGL context on this platform | |\n");
        return 0;
    }
    const Timing seriesGl = seriesPaint(*set, comparison->runs.size(), true, size, &glOk);
    std::printf("| QLineSeries + setUseOpenGL(true)%s | %.1f | %.1f |\n", glOk ? "" : " (no GL widget: fell back)",
                seriesGl.fillAndPaintMs, seriesGl.repaintMs);
    return 0;
}
