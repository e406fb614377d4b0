#include "ui/metric_chart_view.h"

#include <QAreaSeries>
#include <QBrush>
#include <QChart>
#include <QFontMetricsF>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPen>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace wb::ui {
namespace {

constexpr int kTickCount = 6;
constexpr qreal kLineWidth = 1.8;  // px, for lines with fewer points than 2 per pixel column

/// printf format with just enough decimals to tell neighbouring ticks apart; an exponent for
/// axes whose values all lie below 0.01 in magnitude (learning rates: 3e-4, not 0.000300).
QString labelFormatFor(double tickInterval, double largestMagnitude)
{
    if (largestMagnitude > 0.0 && largestMagnitude < 1e-2)
        return QStringLiteral("%.1e");
    int decimals = 0;
    if (tickInterval > 0.0 && std::isfinite(tickInterval)) {
        decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(tickInterval))), 0, 6);
        // A 2.5 × 10^k step needs one more digit than its magnitude says (0, 2.5, 5, 7.5).
        const double scaled = tickInterval * std::pow(10.0, decimals);
        if (std::abs(scaled - std::round(scaled)) > 1e-6 && decimals < 6)
            ++decimals;
    }
    // Single-digit labels ("0".."8") leave QtCharts too narrow an axis for its title, which it then
    // elides to "…" when the title is set in a taller fallback font (Chinese: 损失, 梯度范数). One
    // decimal keeps the axis wide enough in every language.
    if (decimals == 0 && largestMagnitude < 10.0)
        decimals = 1;
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

/// Fits a linear axis to [yMin, yMax]: from 0 for `fromZero` quantities, else hugging the data
/// with 5 % padding; round ticks either way.
void fitValueAxis(QValueAxis* axis, double yMin, double yMax, bool fromZero)
{
    if (fromZero)
        yMin = std::min(0.0, yMin);
    double span = yMax - yMin;
    if (span <= 0.0)
        span = std::max(std::abs(yMax) * 0.1, 1e-3);
    double lo = fromZero ? yMin : yMin - 0.05 * span;
    // The padding never takes a quantity that is not negative below 0 (a loss axis at -0.5).
    if (yMin >= 0.0)
        lo = std::max(lo, 0.0);
    double hi = yMax + 0.05 * span;
    if (fromZero && yMax == 0.0 && yMin == 0.0)
        hi = 1.0;  // an all-zero line: an axis 0..1, not 0..0.001
    const int ticks = niceRange(lo, hi);
    axis->setTickCount(ticks);
    axis->setRange(lo, hi);
    // Only on a change: QValueAxis emits labelFormatChanged on every set, and that invalidates the
    // chart's layout — a second paint of the whole chart after every redraw (bench_live_chart).
    const QString format = labelFormatFor((hi - lo) / (ticks - 1), std::max(std::abs(lo), std::abs(hi)));
    if (axis->labelFormat() != format)
        axis->setLabelFormat(format);
}

/// Widens [yMin, yMax] by the finite y values of `points`.
void extendRange(const QList<QPointF>& points, double& yMin, double& yMax, double* yPositiveMin = nullptr)
{
    for (const auto& p : points) {
        if (!std::isfinite(p.y()))
            continue;
        yMin = std::min(yMin, p.y());
        yMax = std::max(yMax, p.y());
        if (yPositiveMin && p.y() > 0.0)
            *yPositiveMin = std::min(*yPositiveMin, p.y());
    }
}

void setLegendShown(QChart* chart, QAbstractSeries* series, bool shown)
{
    for (auto* marker : chart->legend()->markers(series))
        marker->setVisible(shown);
}

// The columns of a legend whose entries (`widths`, px) go row by row within `available` px: as
// many as fit, then balanced over the rows that takes (4 + 3, not 5 + 2). `columnWidths` gets each
// column's width (its widest entry). At least one column, even when one entry is too wide.
int legendColumns(const QList<qreal>& widths, qreal available, qreal gap, QList<qreal>& columnWidths)
{
    const auto n = static_cast<int>(widths.size());
    auto totalWidth = [&](int columns) {
        columnWidths = QList<qreal>(columns, 0.0);
        for (int i = 0; i < n; ++i)
            columnWidths[i % columns] = std::max(columnWidths[i % columns], widths[i]);
        qreal sum = gap * (columns - 1);
        for (qreal w : columnWidths)
            sum += w;
        return sum;
    };
    int columns = std::max(n, 1);
    while (columns > 1 && totalWidth(columns) > available)
        --columns;
    const int rows = std::max(1, (n + columns - 1) / columns);
    columns = std::max(1, (n + rows - 1) / rows);
    totalWidth(columns);
    return columns;
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
    replaceLines(m_series, series, axisY());
}

void MetricChartView::replaceLines(QList<QLineSeries*>& lines, const QList<MetricSeriesSpec>& specs, QAbstractAxis* yAxis)
{
    for (auto* s : lines) {
        chart()->removeSeries(s);
        delete s;
    }
    lines.clear();
    for (const auto& spec : specs) {
        auto* line = new QLineSeries;
        line->setName(spec.name);
        QPen pen(spec.color);
        pen.setWidthF(kLineWidth);
        pen.setStyle(spec.style);
        line->setPen(pen);
        chart()->addSeries(line);
        line->attachAxis(m_axisX);
        line->attachAxis(yAxis);
        lines.append(line);
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
    setLinePoints(m_series.at(index), points);
}

void MetricChartView::setLinePoints(QLineSeries* line, const QList<QPointF>& points)
{
    // A decimated line (up to 4 points per pixel column) is a zigzag that fills its columns
    // whatever the pen: drawn 1 px wide it looks the same and takes the raster engine's fast
    // cosmetic path; a 1.8 px pen goes through the general stroker (joins per segment), which cost
    // half the live charts' paint time at 100k steps (bench_live_chart).
    const qreal width = points.size() > 2 * plotColumns() ? 1.0 : kLineWidth;
    if (line->pen().widthF() != width) {
        QPen pen = line->pen();
        pen.setWidthF(width);
        line->setPen(pen);
    }
    line->replace(points);  // one repaint for the whole list, not one per point
}

void MetricChartView::setRightAxis(const QString& yTitle, const QList<MetricSeriesSpec>& series, bool yFromZero)
{
    if (!m_axisRight) {
        m_axisRight = new QValueAxis;
        m_axisRight->setTickCount(kTickCount);
        m_axisRight->setRange(0, 1);
        m_axisRight->setGridLineVisible(false);  // the left axis' grid is enough; two grids read as noise
        chart()->addAxis(m_axisRight, Qt::AlignRight);
    }
    m_axisRight->setTitleText(yTitle);
    m_rightFromZero = yFromZero;
    replaceLines(m_rightSeries, series, m_axisRight);
    const bool shown = m_rightShown;  // apply the current state to the new lines
    m_rightShown = !shown;
    setRightAxisShown(shown);
}

void MetricChartView::setRightPoints(int index, const QList<QPointF>& points)
{
    setLinePoints(m_rightSeries.at(index), points);
}

void MetricChartView::setRightAxisShown(bool shown)
{
    if (shown == m_rightShown || !m_axisRight)
        return;
    m_rightShown = shown;
    m_axisRight->setVisible(shown);
    for (auto* s : m_rightSeries) {
        s->setVisible(shown);
        setLegendShown(chart(), s, shown);
    }
    layoutWrappedLegend();
}

void MetricChartView::setStackSpecs(const QList<MetricSeriesSpec>& bands)
{
    for (auto* area : m_stackAreas) {
        chart()->removeSeries(area);
        delete area;
    }
    qDeleteAll(m_stackUppers);
    m_stackAreas.clear();
    m_stackUppers.clear();
    QLineSeries* lower = nullptr;
    for (const auto& spec : bands) {
        // The line series are the areas' data only (not added to the chart); the view owns them
        // because band k+1 borrows band k's upper line as its lower one. (A copy per band would
        // not save work: an area keeps its own geometry of each line, updated by that line's
        // signals, so a silently replaced copy would leave the band drawn against stale points.)
        auto* upper = new QLineSeries(this);
        auto* area = new QAreaSeries(upper, lower);
        area->setName(spec.name);
        QColor fill = spec.color;
        fill.setAlphaF(0.85);
        area->setBrush(fill);
        area->setPen(Qt::NoPen);  // outlines of 7 bands × 1000s of points are noise, not information
        m_stackAreas.append(area);
        m_stackUppers.append(upper);
        lower = upper;
    }
    // Added top band first, so that the legend lists them in the order the chart stacks them.
    for (auto it = m_stackAreas.rbegin(); it != m_stackAreas.rend(); ++it) {
        chart()->addSeries(*it);
        (*it)->attachAxis(m_axisX);
        (*it)->attachAxis(axisY());
    }
    const bool shown = m_stackShown;  // apply the current state to the new bands
    m_stackShown = !shown;
    setStackShown(shown);
}

void MetricChartView::setStackPoints(const QList<QList<QPointF>>& uppers)
{
    for (qsizetype band = 0; band < m_stackUppers.size(); ++band)
        m_stackUppers[band]->replace(band < uppers.size() ? uppers[band] : QList<QPointF>());
}

void MetricChartView::setStackShown(bool shown)
{
    if (shown == m_stackShown)
        return;
    m_stackShown = shown;
    for (auto* area : m_stackAreas) {
        area->setVisible(shown);
        setLegendShown(chart(), area, shown);
    }
    layoutWrappedLegend();
}

void MetricChartView::setWrappedLegend(bool on)
{
    if (on == m_wrappedLegend)
        return;
    m_wrappedLegend = on;
    chart()->legend()->setVisible(!on);
    if (on) {
        // The chart's size is the view's; a resize is when the rows may change.
        connect(chart(), &QGraphicsWidget::geometryChanged, this, &MetricChartView::layoutWrappedLegend,
                Qt::UniqueConnection);
    } else {
        delete m_legendBox;
        m_legendBox = nullptr;
        m_legendEntries.clear();
        chart()->setMargins(QMargins(4, 4, 4, 4));
    }
    layoutWrappedLegend();
}

void MetricChartView::layoutWrappedLegend()
{
    if (!m_wrappedLegend)
        return;
    struct Entry {
        QString text;
        QColor color;
    };
    QList<Entry> entries;
    for (auto it = m_stackAreas.rbegin(); it != m_stackAreas.rend(); ++it)  // as the bands stack
        if ((*it)->isVisible())
            entries.append({(*it)->name(), (*it)->brush().color()});
    for (const auto* lines : {&m_series, &m_rightSeries})
        for (auto* line : *lines)
            if (line->isVisible())
                entries.append({line->name(), line->pen().color()});

    delete m_legendBox;  // rebuilt whole: a handful of items, on resize or a visibility change only
    m_legendBox = new QGraphicsRectItem(chart());
    m_legendBox->setPen(Qt::NoPen);
    m_legendEntries.clear();
    const QFont font = chart()->legend()->font();
    const QFontMetricsF metrics(font);
    const qreal swatch = std::round(metrics.height() * 0.6);
    const qreal textGap = 4.0, columnGap = 14.0, rowHeight = std::ceil(metrics.height()) + 2.0;
    const qreal available = chart()->size().width() - 24.0;
    QList<qreal> widths;
    for (const auto& e : entries)
        widths.append(swatch + textGap + metrics.horizontalAdvance(e.text));
    const auto n = static_cast<int>(entries.size());
    QList<qreal> columnWidths;
    const int columns = legendColumns(widths, available, columnGap, columnWidths);
    qreal total = columnGap * (columns - 1);
    for (qreal w : columnWidths)
        total += w;
    const int rows = (n + columns - 1) / columns;
    const qreal height = rows * rowHeight;
    const int bottomMargin = 4 + static_cast<int>(std::ceil(height));
    if (chart()->margins().bottom() != bottomMargin)
        chart()->setMargins(QMargins(4, 4, 4, bottomMargin));  // the plot makes room for the rows

    const QSizeF size = chart()->size();
    const qreal top = size.height() - height - 10.0;  // above the chart's frame inset
    qreal x = std::max(0.0, (size.width() - total) / 2);
    const qreal left = x;
    for (int i = 0; i < n; ++i) {
        const int column = i % columns;
        if (column == 0)
            x = left;
        const qreal y = top + (i / columns) * rowHeight;
        auto* mark = new QGraphicsRectItem(0, 0, swatch, swatch, m_legendBox);
        mark->setPos(x, y + (rowHeight - swatch) / 2);
        mark->setBrush(entries[i].color);
        mark->setPen(QPen(entries[i].color.darker(130)));
        auto* label = new QGraphicsSimpleTextItem(entries[i].text, m_legendBox);
        label->setFont(font);
        label->setBrush(chart()->legend()->labelColor());
        label->setPos(x + swatch + textGap, y + (rowHeight - metrics.height()) / 2);
        m_legendEntries.append({entries[i].text, QRectF(x, y, widths[i], rowHeight)});
        x += columnWidths[column] + columnGap;
    }
}

void MetricChartView::setNotice(const QString& text, Qt::Alignment where)
{
    m_noticeText = text;
    m_noticeAlignment = where;
    if (text.isEmpty()) {
        if (m_noticeBox)
            m_noticeBox->setVisible(false);
        return;
    }
    if (!m_noticeBox) {
        m_noticeBox = new QGraphicsRectItem(chart());
        m_noticeBox->setBrush(QColor(255, 255, 255, 230));
        m_noticeBox->setPen(QPen(QColor(0xbb, 0xbb, 0xbb)));
        m_noticeBox->setZValue(1000);  // above the series and the grid
        m_noticeLabel = new QGraphicsSimpleTextItem(m_noticeBox);
        m_noticeLabel->setBrush(QColor(0x55, 0x55, 0x55));
        QFont font = m_noticeLabel->font();
        font.setPointSizeF(font.pointSizeF() * 0.85);
        m_noticeLabel->setFont(font);
        connect(chart(), &QChart::plotAreaChanged, this, [this] { placeNotice(); });
    }
    m_noticeLabel->setText(text);
    m_noticeBox->setVisible(true);
    placeNotice();
}

void MetricChartView::setHeaderNote(const QString& text)
{
    if (!m_headerNote) {
        if (text.isEmpty())
            return;
        m_headerNote = new QGraphicsSimpleTextItem(chart());
        m_headerNote->setBrush(QColor(0x77, 0x77, 0x77));
        QFont font = m_headerNote->font();
        font.setPointSizeF(font.pointSizeF() * 0.8);
        m_headerNote->setFont(font);
        const auto place = [this] {
            const QRectF plot = chart()->plotArea();
            const QRectF box = m_headerNote->boundingRect();
            m_headerNote->setPos(plot.right() - box.width(), chart()->size().height() - box.height() - 4.0);
        };
        connect(chart(), &QChart::plotAreaChanged, this, place);
    }
    m_headerNote->setText(text);
    m_headerNote->setVisible(!text.isEmpty());
    const QRectF plot = chart()->plotArea();
    const QRectF box = m_headerNote->boundingRect();
    m_headerNote->setPos(plot.right() - box.width(), chart()->size().height() - box.height() - 4.0);
}

QString MetricChartView::headerNote() const
{
    return m_headerNote && m_headerNote->isVisible() ? m_headerNote->text() : QString();
}

void MetricChartView::placeNotice()
{
    if (!m_noticeBox || m_noticeText.isEmpty())
        return;
    constexpr qreal kPad = 4.0;
    const QRectF plot = chart()->plotArea();
    const QRectF text = m_noticeLabel->boundingRect();
    const QSizeF box(text.width() + 2 * kPad, text.height() + 2 * kPad);
    QPointF at(plot.center().x() - box.width() / 2, plot.center().y() - box.height() / 2);
    if (m_noticeAlignment & Qt::AlignLeft)
        at.setX(plot.left() + kPad);
    else if (m_noticeAlignment & Qt::AlignRight)
        at.setX(plot.right() - box.width() - kPad);
    if (m_noticeAlignment & Qt::AlignTop)
        at.setY(plot.top() + kPad);
    else if (m_noticeAlignment & Qt::AlignBottom)
        at.setY(plot.bottom() - box.height() - kPad);
    m_noticeBox->setRect(QRectF(QPointF(0, 0), box));
    m_noticeBox->setPos(at);
    m_noticeLabel->setPos(kPad, kPad);
}

void MetricChartView::setToolTipProvider(std::function<QString(double)> provider)
{
    m_toolTipProvider = std::move(provider);
}

QString MetricChartView::toolTipAt(QPoint pos) const
{
    if (!m_toolTipProvider)
        return {};
    const QPointF at = chart()->mapFromScene(mapToScene(pos));
    const QRectF plot = chart()->plotArea();
    if (!plot.contains(at) || plot.width() <= 0.0)
        return {};
    // The x axis is linear: map the pixel column to a step without asking a series (the stacked
    // chart has none of its own attached to the axis when hidden).
    const double step = m_axisX->min() + (at.x() - plot.left()) / plot.width() * (m_axisX->max() - m_axisX->min());
    return m_toolTipProvider(step);
}

void MetricChartView::mouseMoveEvent(QMouseEvent* event)
{
    if (m_toolTipProvider) {
        const QString text = toolTipAt(event->position().toPoint());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, viewport());
    }
    QChartView::mouseMoveEvent(event);
}

void MetricChartView::leaveEvent(QEvent* event)
{
    if (m_toolTipProvider)
        QToolTip::hideText();
    QChartView::leaveEvent(event);
}

void MetricChartView::clearPoints()
{
    for (auto* s : m_series)
        s->clear();
    for (auto* s : m_rightSeries)
        s->clear();
    setStackPoints({});
    // No steps yet: round ticks (0, 2, ..., 10 and 0.0, 0.2, ..., 1.0), not the last run's count.
    m_axisX->setRange(0, 10);
    m_axisX->setTickCount(6);
    m_axisY->setRange(0, 1);
    m_axisY->setTickCount(6);
    m_axisY->setLabelFormat(QStringLiteral("%.1f"));
    if (m_axisRight) {
        m_axisRight->setRange(0, 1);
        m_axisRight->setTickCount(6);
        m_axisRight->setLabelFormat(QStringLiteral("%.1f"));
    }
}

void MetricChartView::rescale()
{
    QList<QList<QPointF>> left, right;
    for (const auto* s : m_series)
        left.append(s->points());  // implicitly shared copies
    if (m_stackShown)
        for (const auto* s : m_stackUppers)
            left.append(s->points());
    for (const auto* s : m_rightSeries)
        right.append(s->points());
    fitTo(left, right);
}

void MetricChartView::setAllPoints(const SeriesPoints& points)
{
    // Axes first, series second: a series maps all its points into the plot whenever its points
    // or its axes' ranges change, so setting the points and then rescaling maps them twice each
    // time a range moves (on a run's first draw, always).
    QList<QList<QPointF>> left = points.left;
    if (m_stackShown)
        left += points.stack;
    fitTo(left, m_rightShown ? points.right : QList<QList<QPointF>>());
    for (qsizetype i = 0; i < m_series.size(); ++i)
        setLinePoints(m_series[i], points.left.value(i));
    for (qsizetype i = 0; i < m_rightSeries.size(); ++i)
        setLinePoints(m_rightSeries[i], points.right.value(i));
    setStackPoints(points.stack);
}

void MetricChartView::fitTo(const QList<QList<QPointF>>& left, const QList<QList<QPointF>>& right)
{
    double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin;
    double yMin = xMin, yMax = -xMin, yPositiveMin = xMin;
    for (const auto& points : left) {
        if (points.isEmpty())
            continue;
        xMin = std::min(xMin, points.front().x());
        xMax = std::max(xMax, points.back().x());
        extendRange(points, yMin, yMax, &yPositiveMin);
    }
    fitAxes(xMin, xMax, yMin, yMax, yPositiveMin);

    if (!m_axisRight || !m_rightShown)
        return;
    double rMin = std::numeric_limits<double>::infinity(), rMax = -rMin;
    for (const auto& points : right)
        extendRange(points, rMin, rMax);
    if (std::isfinite(rMin) && std::isfinite(rMax))
        fitValueAxis(m_axisRight, rMin, rMax, m_rightFromZero);
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
    fitValueAxis(m_axisY, yMin, yMax, m_yFromZero);
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
