#include "ui/metric_chart_view.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace wb::ui {
namespace {

constexpr int kTickCount = 6;

/// printf format with just enough decimals to tell neighbouring ticks apart.
QString labelFormatFor(double tickInterval)
{
    int decimals = 0;
    if (tickInterval > 0.0 && std::isfinite(tickInterval)) {
        decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(tickInterval))), 0, 6);
        // A 2.5 × 10^k step needs one more digit than its magnitude says (0, 2.5, 5, 7.5).
        const double scaled = tickInterval * std::pow(10.0, decimals);
        if (std::abs(scaled - std::round(scaled)) > 1e-6 && decimals < 6)
            ++decimals;
    }
    return QStringLiteral("%.%1f").arg(decimals);
}

/// Widens [lo, hi] to round tick values: the smallest 1-2-2.5-5 step that covers the range in at
/// most kMaxIntervals intervals. Returns the number of ticks.
int niceRange(double& lo, double& hi)
{
    constexpr int kMaxIntervals = 6;
    const double raw = (hi - lo) / kMaxIntervals;
    if (!(raw > 0.0) || !std::isfinite(raw))
        return kMaxIntervals + 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double decade : {1.0, 10.0, 100.0}) {
        for (double m : {1.0, 2.0, 2.5, 5.0}) {
            const double step = m * decade * magnitude;
            const double niceLo = std::floor(lo / step + 1e-9) * step;
            const double niceHi = std::ceil(hi / step - 1e-9) * step;
            const int intervals = static_cast<int>(std::lround((niceHi - niceLo) / step));
            if (intervals <= kMaxIntervals) {
                lo = niceLo;
                hi = niceHi;
                return std::max(intervals, 1) + 1;
            }
        }
    }
    return kMaxIntervals + 1;
}

}  // namespace

MetricChartView::MetricChartView(const QString& title, const QString& yTitle,
                                 const QList<MetricSeriesSpec>& series, bool yFromZero, QWidget* parent)
    : QChartView(parent), m_yFromZero(yFromZero)
{
    auto* chart = new QChart;
    chart->setTitle(title);
    QFont titleFont = chart->titleFont();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.15);
    chart->setTitleFont(titleFont);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->legend()->setVisible(true);

    m_axisX = new QValueAxis;
    m_axisX->setTitleText(tr("Step"));
    m_axisX->setLabelFormat(QStringLiteral("%.0f"));
    m_axisX->setTickCount(kTickCount);
    m_axisX->setRange(0, 10);
    m_axisY = new QValueAxis;
    m_axisY->setTitleText(yTitle);
    m_axisY->setTickCount(kTickCount);
    m_axisY->setRange(0, 1);
    chart->addAxis(m_axisX, Qt::AlignBottom);
    chart->addAxis(m_axisY, Qt::AlignLeft);

    // Both y axes live in the chart; the series are attached to one, the other is hidden.
    m_logAxisY = new QLogValueAxis;
    m_logAxisY->setTitleText(yTitle);
    m_logAxisY->setBase(10.0);
    m_logAxisY->setLabelFormat(QStringLiteral("%g"));
    m_logAxisY->setMinorTickCount(8);
    m_logAxisY->setRange(1.0, 10.0);
    m_logAxisY->setVisible(false);
    chart->addAxis(m_logAxisY, Qt::AlignLeft);
    setChart(chart);
    setSeriesSpecs(series);
    setRenderHint(QPainter::Antialiasing);
    setMinimumSize(320, 220);
}

void MetricChartView::setSeriesSpecs(const QList<MetricSeriesSpec>& series)
{
    for (auto* s : m_series) {
        chart()->removeSeries(s);
        delete s;
    }
    m_series.clear();
    for (const auto& spec : series) {
        auto* line = new QLineSeries;
        line->setName(spec.name);
        QPen pen(spec.color);
        pen.setWidthF(1.8);
        pen.setStyle(spec.style);
        line->setPen(pen);
        chart()->addSeries(line);
        line->attachAxis(m_axisX);
        line->attachAxis(axisY());
        m_series.append(line);
    }
}

QAbstractAxis* MetricChartView::axisY() const
{
    return m_logScale ? static_cast<QAbstractAxis*>(m_logAxisY) : static_cast<QAbstractAxis*>(m_axisY);
}

void MetricChartView::setLogScale(bool on)
{
    if (on == m_logScale)
        return;
    QAbstractAxis* from = axisY();
    QAbstractAxis* to = on ? static_cast<QAbstractAxis*>(m_logAxisY) : static_cast<QAbstractAxis*>(m_axisY);
    for (auto* s : m_series)
        s->detachAxis(from);
    from->setVisible(false);
    to->setVisible(true);
    for (auto* s : m_series)
        s->attachAxis(to);
    m_logScale = on;
}

void MetricChartView::setPoints(int index, const QList<QPointF>& points)
{
    m_series.at(index)->replace(points);  // one repaint for the whole list, not one per point
}

void MetricChartView::clearPoints()
{
    for (auto* s : m_series)
        s->clear();
    m_axisX->setRange(0, 10);
    m_axisY->setRange(0, 1);
    m_axisY->setLabelFormat(QStringLiteral("%.1f"));
}

void MetricChartView::rescale()
{
    double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin;
    double yMin = xMin, yMax = -xMin, yPositiveMin = xMin;
    for (const auto* s : m_series) {
        const auto points = s->points();
        if (points.isEmpty())
            continue;
        xMin = std::min(xMin, points.front().x());
        xMax = std::max(xMax, points.back().x());
        for (const auto& p : points) {
            if (!std::isfinite(p.y()))
                continue;
            yMin = std::min(yMin, p.y());
            yMax = std::max(yMax, p.y());
            if (p.y() > 0.0)
                yPositiveMin = std::min(yPositiveMin, p.y());
        }
    }
    fitAxes(xMin, xMax, yMin, yMax, yPositiveMin);
}

void MetricChartView::fitAxes(double xMin, double xMax, double yMin, double yMax, double yPositiveMin)
{
    if (!std::isfinite(xMin) || !std::isfinite(xMax) || !std::isfinite(yMin) || !std::isfinite(yMax))
        return;
    if (m_logScale) {
        // Whole decades around the positive values (the caller leaves out y <= 0).
        const double positiveMin = std::isfinite(yPositiveMin) && yPositiveMin > 0.0 ? yPositiveMin : 1.0;
        double lo = std::pow(10.0, std::floor(std::log10(positiveMin)));
        double hi = std::pow(10.0, std::ceil(std::log10(std::max(yMax, positiveMin))));
        if (hi <= lo)
            hi = lo * 10.0;
        m_logAxisY->setRange(lo, hi);
    }

    // x: from the first step to the planned last one when known, so the line grows across a fixed
    // axis instead of the axis jumping on every step; at least 10 steps wide either way.
    xMin = std::floor(xMin);
    xMax = std::max({std::ceil(xMax), xMin + 10.0, m_xExtent});
    m_axisX->setTickCount(niceRange(xMin, xMax));
    m_axisX->setRange(std::max(0.0, xMin), xMax);

    if (m_logScale)
        return;
    if (m_yFromZero)
        yMin = std::min(0.0, yMin);
    double span = yMax - yMin;
    if (span <= 0.0)
        span = std::max(std::abs(yMax) * 0.1, 1e-3);
    double lo = m_yFromZero ? yMin : yMin - 0.05 * span;
    double hi = yMax + 0.05 * span;
    const int ticks = niceRange(lo, hi);
    m_axisY->setTickCount(ticks);
    m_axisY->setRange(lo, hi);
    m_axisY->setLabelFormat(labelFormatFor((hi - lo) / (ticks - 1)));
}

void MetricChartView::setXExtent(double lastStep)
{
    m_xExtent = lastStep;
}

int MetricChartView::plotColumns() const
{
    const int w = static_cast<int>(chart()->plotArea().width());
    return w > 0 ? w : 600;
}

}  // namespace wb::ui
