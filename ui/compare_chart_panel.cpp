#include "ui/compare_chart_panel.h"

#include "core/compare/run_comparison.h"
#include "core/compare/smoothing.h"
#include "ui/metric_chart_view.h"
#include "ui/step_series_buffer.h"

#include <QAbstractAxis>
#include <QAreaSeries>
#include <QLogValueAxis>
#include <QValueAxis>
#include <QChart>
#include <QCoreApplication>
#include <QGridLayout>
#include <QPainter>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

namespace wb::ui {
namespace {

// Tableau-10, the run charts' palette; runs past ten reuse it.
const QList<QColor> kPalette = {
    QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};

constexpr int kRawAlpha = 60;  // the raw series stays visible behind the smoothed one, but faint

// Min / max of each pixel column (so spikes survive) straight from the x and y arrays: the points a chart can place (finite; > 0 on a log
// axis) are filtered in the same pass. Building a QList of all 100k points per series first, then
// decimating it, was a quarter of a 20-run redraw (two lists × 4 charts × 20 runs).
QList<QPointF> decimateColumns(const std::vector<double>& xs, const std::vector<double>& ys,
                               const std::vector<double>* also, bool logY, int columns)
{
    const size_t n = std::min(xs.size(), ys.size());
    auto usable = [&](size_t i) {
        if (!std::isfinite(xs[i]) || !std::isfinite(ys[i]))
            return false;  // a diverged loss is a gap, not a point at 0
        if (logY && (ys[i] <= 0.0 || (also && !((*also)[i] > 0.0))))
            return false;  // no place on a log axis (raw and smoothed leave out the same steps)
        return true;
    };
    size_t firstUsable = 0, lastUsable = n;
    while (firstUsable < n && !usable(firstUsable))
        ++firstUsable;
    while (lastUsable > firstUsable && !usable(lastUsable - 1))
        --lastUsable;
    QList<QPointF> out;
    if (firstUsable >= lastUsable)
        return out;
    const double xMin = xs[firstUsable], span = xs[lastUsable - 1] - xMin;
    const bool decimate = columns > 0 && span > 0.0 && lastUsable - firstUsable > 4 * static_cast<size_t>(columns);
    out.reserve(decimate ? 4 * columns : static_cast<qsizetype>(lastUsable - firstUsable));
    if (!decimate) {
        for (size_t i = firstUsable; i < lastUsable; ++i)
            if (usable(i))
                out.append(QPointF(xs[i], ys[i]));
        return out;
    }
    int column = -1;
    size_t first = 0, lo = 0, hi = 0, last = 0;
    // Min and max of the column, in step order: the spikes survive and the line's extent per
    // pixel column is exact; first/last add nothing a 1-px column can show but paint time
    // (QtCharts' paint is linear in points: 4 → 2 per column halved it).
    auto emitColumn = [&] {
        (void)first;
        (void)last;
        const size_t a = std::min(lo, hi), b = std::max(lo, hi);
        out.append(QPointF(xs[a], ys[a]));
        if (b != a)
            out.append(QPointF(xs[b], ys[b]));
    };
    for (size_t i = firstUsable; i < lastUsable; ++i) {
        if (!usable(i))
            continue;
        const int c = std::min(columns - 1, static_cast<int>((xs[i] - xMin) / span * columns));
        if (c != column) {
            if (column >= 0)
                emitColumn();
            column = c;
            first = lo = hi = last = i;
            continue;
        }
        last = i;
        if (ys[i] < ys[lo])
            lo = i;
        if (ys[i] > ys[hi])
            hi = i;
    }
    emitColumn();
    return out;
}

}  // namespace

CompareChartPanel::CompareChartPanel(QWidget* parent) : QWidget(parent)
{
    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(StepSeriesBuffer::kDefaultCoalesceInterval);
    connect(&m_redrawTimer, &QTimer::timeout, this, &CompareChartPanel::redraw);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(6);
    rebuildCharts();
}

void CompareChartPanel::setComparison(const core::Comparison* comparison)
{
    m_comparison = comparison;
    rebuildCharts();
    redraw();  // now, not coalesced: the caller (and a test) expects the charts to match at once
}

void CompareChartPanel::setXAxis(XAxis axis)
{
    if (axis == m_xAxis)
        return;
    m_xAxis = axis;
    redraw();
}

void CompareChartPanel::setSmoothing(double weight)
{
    m_smoothing = std::clamp(weight, 0.0, 0.99);
    m_redrawTimer.start();  // a slider drag sends many values: draw the last one
}

void CompareChartPanel::setLogScale(bool on)
{
    if (on == m_logScale)
        return;
    m_logScale = on;
    for (auto* chart : m_charts)
        chart->setLogScale(on);
    redraw();
}

void CompareChartPanel::setShadeSteadyWindow(bool on)
{
    if (on == m_shade)
        return;
    m_shade = on;
    redraw();
}

core::ChartOptions CompareChartPanel::chartOptions() const
{
    core::ChartOptions options;
    options.xAxis = m_xAxis == XAxis::Step       ? core::ChartXAxis::Step
                    : m_xAxis == XAxis::WallTime ? core::ChartXAxis::WallTime
                                                 : core::ChartXAxis::EffectiveTokens;
    options.smoothing = m_smoothing;
    options.logY = m_logScale;
    options.shadeSteadyWindow = m_shade;
    return options;
}

qsizetype CompareChartPanel::shadedBands(Chart chart) const
{
    const int index = static_cast<int>(chart);
    return index < m_bands.size() ? m_bands[index].size() : 0;
}

qsizetype CompareChartPanel::drawnPoints() const
{
    qsizetype total = 0;
    for (auto* chart : m_charts)
        for (int i = 0; i < chart->seriesCount(); ++i)
            total += chart->series(i)->count();
    return total;
}

void CompareChartPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    m_redrawTimer.start();  // the decimation target changed
}

MetricChartView* CompareChartPanel::makeView(int chartIndex, QWidget* parent) const
{
    QList<MetricSeriesSpec> specs;
    if (m_comparison) {
        for (size_t i = 0; i < m_comparison->runs.size(); ++i) {
            QColor color = kPalette[static_cast<int>(i) % kPalette.size()];
            const QString label = QString::fromStdString(m_comparison->runs[i].label());
            QColor faint = color;
            faint.setAlpha(kRawAlpha);
            specs.append({label + tr(" (raw)"), faint});
            specs.append({label, color});
        }
    }
    const struct {
        QString title, yTitle, name;
        bool fromZero;
    } kCharts[] = {
        {tr("Step time"), tr("Step time (ms)"), QStringLiteral("compareStepTimeChart"), true},
        {tr("Throughput"), tr("Effective tokens/s/GPU"), QStringLiteral("compareThroughputChart"), true},
        {tr("Loss"), tr("Loss"), QStringLiteral("compareLossChart"), false},
        {tr("Peak memory per GPU"), tr("Memory (GiB)"), QStringLiteral("compareMemoryChart"), true},
    };
    const auto& c = kCharts[chartIndex];
    auto* view = new MetricChartView(c.title, c.yTitle, specs, c.fromZero, parent);
    view->setObjectName(c.name);
    for (int s = 0; s < view->seriesCount(); s += 2) {
        QPen pen = view->series(s)->pen();
        pen.setWidthF(1.0);
        view->series(s)->setPen(pen);
        for (auto* marker : view->chart()->legend()->markers(view->series(s)))
            marker->setVisible(false);  // one legend entry per run
    }
    view->setLogScale(m_logScale);
    return view;
}

void CompareChartPanel::rebuildCharts()
{
    // The series set depends on the runs, and MetricChartView fixes its series at construction.
    qDeleteAll(m_charts);  // the bands are series of these charts: deleted with them
    m_charts.clear();
    m_bands.clear();
    auto* grid = static_cast<QGridLayout*>(layout());
    for (int index = 0; index < static_cast<int>(Chart::ChartCount); ++index) {
        auto* view = makeView(index, this);
        grid->addWidget(view, index / 2, index % 2);
        m_charts.append(view);
        m_bands.append(QList<QAreaSeries*>());
    }
}

void CompareChartPanel::redraw()
{
    m_redrawTimer.stop();
    const auto xs = runXValues();
    for (int c = 0; c < m_charts.size(); ++c)
        fillChart(m_charts[c], c, m_bands[c], xs);
}

std::vector<std::vector<double>> CompareChartPanel::runXValues() const
{
    std::vector<std::vector<double>> xs;
    if (m_comparison)
        for (const auto& run : m_comparison->runs)
            xs.push_back(core::chartXValues(run.steps(), static_cast<core::ChartXAxis>(m_xAxis)));
    return xs;
}

void CompareChartPanel::fillChart(MetricChartView* view, int c, QList<QAreaSeries*>& bands,
                                  const std::vector<std::vector<double>>& runXs) const
{
    for (auto* axis : view->chart()->axes(Qt::Horizontal))
        axis->setTitleText(tr(core::chartXAxisTitle(static_cast<core::ChartXAxis>(m_xAxis))));
    if (!m_comparison) {
        view->clearPoints();
        shadeWindows(view, bands, runXs);
        return;
    }
    const int columns = view->plotColumns();
    const auto metric = static_cast<core::ChartMetric>(c);
    for (size_t r = 0; r < m_comparison->runs.size(); ++r) {
        const core::ComparedRun& run = m_comparison->runs[r];
        const std::vector<double> ys = core::chartMetricValues(metric, run.steps(), run.worldSize());
        const std::vector<double>& xs = runXs[r];
        const int rawIndex = static_cast<int>(2 * r);
        view->series(rawIndex)->setVisible(m_smoothing > 0.0);
        if (m_smoothing > 0.0) {
            const std::vector<double> smooth = core::emaDebiased(ys, m_smoothing);
            view->setPoints(rawIndex, decimateColumns(xs, ys, &smooth, m_logScale, columns));
            view->setPoints(rawIndex + 1, decimateColumns(xs, smooth, &ys, m_logScale, columns));
        } else {
            view->setPoints(rawIndex, {});
            view->setPoints(rawIndex + 1, decimateColumns(xs, ys, nullptr, m_logScale, columns));
        }
    }
    view->rescale();
    shadeWindows(view, bands, runXs);
}

QImage CompareChartPanel::renderChart(Chart chart, QSize size, qreal devicePixelRatio) const
{
    // A fresh view at the export size (the on-screen one may be small): laid out offscreen, filled
    // like the visible chart (decimated to its own width), then grabbed.
    std::unique_ptr<MetricChartView> view(makeView(static_cast<int>(chart), nullptr));
    view->setAttribute(Qt::WA_DontShowOnScreen);
    view->resize(size);
    view->show();
    QCoreApplication::sendPostedEvents();
    QList<QAreaSeries*> bands;
    fillChart(view.get(), static_cast<int>(chart), bands, runXValues());
    QCoreApplication::sendPostedEvents();
    // QGraphicsView::render scales the view's rect onto the whole target: the higher resolution
    // comes out as vectors drawn larger, not as a blown-up bitmap.
    QImage image(size * devicePixelRatio, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    view->render(&painter, QRectF(image.rect()), view->viewport()->rect());
    painter.end();
    image.setDevicePixelRatio(devicePixelRatio);
    return image;
}
void CompareChartPanel::shadeWindows(MetricChartView* view, QList<QAreaSeries*>& bands,
                                     const std::vector<std::vector<double>>& runXs) const
{
    // Bands are area series between the y axis' ends, attached to the chart's current axes; they
    // are rebuilt after every rescale (the y range moved) and kept out of the legend.
    for (auto* band : bands) {
        view->chart()->removeSeries(band);
        delete band;
    }
    bands.clear();
    if (!m_comparison || !m_shade)
        return;
    double yLo = 0.0, yHi = 1.0;
    if (auto* log = qobject_cast<QLogValueAxis*>(view->axisY())) {
        yLo = log->min();
        yHi = log->max();
    } else if (auto* linear = qobject_cast<QValueAxis*>(view->axisY())) {
        yLo = linear->min();
        yHi = linear->max();
    }
    const size_t runCount = m_comparison->runs.size();
    const int alpha = std::max(14, static_cast<int>(40 / std::max<size_t>(runCount, 1)));
    for (size_t r = 0; r < runCount; ++r) {
        const core::ComparedRun& run = m_comparison->runs[r];
        if (run.window.size() == 0)
            continue;
        const double a = runXs[r][run.window.begin], b = runXs[r][run.window.end - 1];
        auto* upper = new QLineSeries;
        auto* lower = new QLineSeries;
        upper->append(a, yHi);
        upper->append(b, yHi);
        lower->append(a, yLo);
        lower->append(b, yLo);
        auto* band = new QAreaSeries(upper, lower);
        upper->setParent(band);
        lower->setParent(band);
        QColor color = kPalette[static_cast<int>(r) % kPalette.size()];
        color.setAlpha(alpha);
        band->setBrush(color);
        band->setPen(Qt::NoPen);
        band->setName(QString::fromStdString(run.label()) + tr(" steady window"));
        view->chart()->addSeries(band);
        band->attachAxis(view->axisX());
        band->attachAxis(view->axisY());
        for (auto* marker : view->chart()->legend()->markers(band))
            marker->setVisible(false);
        bands.append(band);
    }
}

}  // namespace wb::ui
