#include "ui/compare_lines_item.h"

#include <QPainter>
#include <QPen>

#include <algorithm>
#include <cmath>

namespace wb::ui {

double PlotMapping::mapX(double x) const
{
    return plot.left() + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.0) * plot.width();
}

QPointF PlotMapping::map(double x, double y) const
{
    double fy = 0.0;
    if (logY) {
        // QLogValueAxis places log10(y) linearly between log10(min) and log10(max).
        const double l0 = std::log10(y0), l1 = std::log10(y1);
        fy = l1 > l0 ? (std::log10(y) - l0) / (l1 - l0) : 0.0;
    } else {
        fy = y1 > y0 ? (y - y0) / (y1 - y0) : 0.0;
    }
    return {mapX(x), plot.bottom() - fy * plot.height()};
}

CompareLinesItem::CompareLinesItem(QColor color, int rawAlpha, QGraphicsItem* parent)
    : QGraphicsItem(parent), m_color(color), m_rawAlpha(rawAlpha)
{
}

void CompareLinesItem::setLines(std::shared_ptr<const core::ChartSet> set, int chart, int run)
{
    m_set = std::move(set);
    m_chart = chart;
    m_run = run;
    m_mapped = false;
    update();
}

void CompareLinesItem::setMapping(const PlotMapping& mapping)
{
    if (mapping == m_mapping)
        return;
    prepareGeometryChange();
    m_mapping = mapping;
    m_mapped = false;
}

const core::ChartRunLines* CompareLinesItem::lines() const
{
    if (!m_set)
        return nullptr;
    const auto& runs = m_set->charts[static_cast<size_t>(m_chart)].runs;
    return static_cast<size_t>(m_run) < runs.size() ? &runs[static_cast<size_t>(m_run)] : nullptr;
}

void CompareLinesItem::ensureMapped() const
{
    if (m_mapped)
        return;
    m_mapped = true;
    const core::ChartRunLines* l = lines();
    auto mapLine = [this](const core::ChartLine& line, QPolygonF& out) {
        out.resize(static_cast<qsizetype>(line.size()));
        for (size_t i = 0; i < line.size(); ++i)
            out[static_cast<qsizetype>(i)] = m_mapping.map(line.x[i], line.y[i]);
    };
    if (l) {
        mapLine(l->raw, m_raw);
        mapLine(l->smooth, m_smooth);
    } else {
        m_raw.clear();
        m_smooth.clear();
    }
}

const QPolygonF& CompareLinesItem::polygon(bool raw) const
{
    ensureMapped();
    return raw ? m_raw : m_smooth;
}

std::optional<CompareLinesItem::Hit> CompareLinesItem::nearest(QPointF pos, double radius) const
{
    ensureMapped();
    std::optional<Hit> best;
    const double r2 = radius * radius;
    auto scan = [&](const QPolygonF& polygon, bool raw) {
        for (qsizetype i = 0; i < polygon.size(); ++i) {
            const double dx = polygon[i].x() - pos.x();
            if (dx * dx > r2)
                continue;
            const double dy = polygon[i].y() - pos.y();
            const double d2 = dx * dx + dy * dy;
            if (d2 <= r2 && (!best || d2 < best->distance * best->distance))
                best = Hit{static_cast<size_t>(i), raw, std::sqrt(d2)};
        }
    };
    scan(m_smooth, false);  // the smoothed line wins a tie: it is the one on top
    scan(m_raw, true);
    return best;
}

QRectF CompareLinesItem::boundingRect() const
{
    return m_mapping.plot.adjusted(-2, -2, 2, 2);  // half the pen width around the plot area
}

void CompareLinesItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*)
{
    // Segment by segment, as QtCharts' own line item does: QPainter::drawPolyline strokes the whole
    // polyline as one path (joins, self-overlaps) — measured 634 vs 72 CPU-ms for the first paint
    // of 20 runs × 4 charts, and 5.4 vs 1.3 s for the 2× PNG export (docs/compare.md).
    ensureMapped();
    painter->save();
    painter->setClipRect(m_mapping.plot);  // a point outside the axis range is cut at the frame
    auto drawSegments = [painter](const QPolygonF& line) {
        for (qsizetype i = 1; i < line.size(); ++i)
            painter->drawLine(line[i - 1], line[i]);
    };
    if (!m_raw.isEmpty()) {
        QColor faint = m_color;
        faint.setAlpha(m_rawAlpha);
        painter->setPen(QPen(faint, 1.0));
        drawSegments(m_raw);
    }
    if (!m_smooth.isEmpty()) {
        painter->setPen(QPen(m_color, 1.8));
        drawSegments(m_smooth);
    }
    painter->restore();
}

CompareBandsItem::CompareBandsItem(QGraphicsItem* parent) : QGraphicsItem(parent) {}

void CompareBandsItem::setBands(std::vector<Band> bands)
{
    m_bands = std::move(bands);
    update();
}

void CompareBandsItem::setMapping(const PlotMapping& mapping)
{
    if (mapping == m_mapping)
        return;
    prepareGeometryChange();
    m_mapping = mapping;
}

QRectF CompareBandsItem::boundingRect() const
{
    return m_mapping.plot;
}

void CompareBandsItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*)
{
    const QRectF plot = m_mapping.plot;
    for (const Band& band : m_bands) {
        const double a = std::clamp(m_mapping.mapX(band.from), plot.left(), plot.right());
        const double b = std::clamp(m_mapping.mapX(band.to), plot.left(), plot.right());
        painter->fillRect(QRectF(a, plot.top(), std::max(b - a, 1.0), plot.height()), band.color);
    }
}

}  // namespace wb::ui
