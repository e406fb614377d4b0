#include "ui/step_series_buffer.h"

#include <QMutexLocker>

#include <algorithm>
#include <array>
#include <cassert>

namespace wb::ui {

namespace {

// Appends the first, minimum, maximum and last point of [begin, end) to `out`, in x order, each
// once (M4): what both the per-column decimation and the block summaries keep. `pointAt(i)` gives
// point i (from a QList of points, or from the shared x and one y column). Ties keep the first.
template <typename PointAt>
void appendFirstMinMaxLast(const PointAt& pointAt, qsizetype begin, qsizetype end, QList<QPointF>& out)
{
    qsizetype lo = begin, hi = begin;
    double loY = pointAt(begin).y(), hiY = loY;
    for (qsizetype i = begin + 1; i < end; ++i) {
        const double y = pointAt(i).y();
        if (y < loY) {
            lo = i;
            loY = y;
        }
        if (y > hiY) {
            hi = i;
            hiY = y;
        }
    }
    std::array<qsizetype, 4> picks{begin, lo, hi, end - 1};
    std::sort(picks.begin(), picks.end());
    qsizetype previous = -1;
    for (qsizetype index : picks) {
        if (index != previous)
            out.append(pointAt(index));
        previous = index;
    }
}

}  // namespace

StepSeriesBuffer::StepSeriesBuffer(int seriesCount, QObject* parent)
    : QObject(parent), m_seriesCount(std::max(seriesCount, 0)), m_y(static_cast<size_t>(m_seriesCount)),
      m_blocks(static_cast<size_t>(m_seriesCount))
{
    m_timer.setSingleShot(true);
    m_timer.setInterval(kDefaultCoalesceInterval);
    connect(&m_timer, &QTimer::timeout, this, &StepSeriesBuffer::flush);
}

void StepSeriesBuffer::appendRow(double x, std::span<const double> values)
{
    appendRows(std::span<const double>(&x, 1), values);
}

void StepSeriesBuffer::appendRows(std::span<const double> xs, std::span<const double> values)
{
    assert(values.size() == xs.size() * static_cast<size_t>(m_seriesCount));
    if (xs.empty())
        return;
    {
        QMutexLocker lock(&m_mutex);
        assert(m_x.empty() || xs.front() > m_x.back());
        const auto done = static_cast<qsizetype>(m_x.size()) / kBlockPoints * kBlockPoints;  // open block's start
        m_x.insert(m_x.end(), xs.begin(), xs.end());
        // Column by column (a strided read of the rows): each deque grows in one pass.
        const size_t stride = static_cast<size_t>(m_seriesCount);
        for (size_t s = 0; s < stride; ++s) {
            auto& column = m_y[s];
            for (size_t row = 0; row < xs.size(); ++row)
                column.push_back(values[row * stride + s]);
        }
        summarizeBlocks(done);
    }
    scheduleUpdate();
}

void StepSeriesBuffer::clear()
{
    {
        QMutexLocker lock(&m_mutex);
        // Memory goes back on a run switch: a deque's clear() frees its chunks, while Qt 6's
        // QList::clear() keeps the capacity, so the summaries are replaced by empty lists.
        m_x.clear();
        for (auto& column : m_y)
            column.clear();
        for (auto& b : m_blocks)
            b = QList<QPointF>();
    }
    scheduleUpdate();
}

qsizetype StepSeriesBuffer::rowCount() const
{
    QMutexLocker lock(&m_mutex);
    return static_cast<qsizetype>(m_x.size());
}

QList<QPointF> StepSeriesBuffer::points(int series) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    const auto& column = m_y[static_cast<size_t>(series)];
    QList<QPointF> out;
    out.reserve(static_cast<qsizetype>(m_x.size()));
    for (size_t i = 0; i < m_x.size(); ++i)
        out.append({m_x[i], column[i]});
    return out;
}

std::optional<QPointF> StepSeriesBuffer::nearest(int series, double x) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    if (m_x.empty())
        return std::nullopt;
    const auto& column = m_y[static_cast<size_t>(series)];
    const auto after = std::lower_bound(m_x.begin(), m_x.end(), x);
    size_t row = 0;
    if (after == m_x.end()) {
        row = m_x.size() - 1;
    } else if (after != m_x.begin()) {
        const auto before = after - 1;
        row = static_cast<size_t>((x - *before <= *after - x ? before : after) - m_x.begin());
    }
    return QPointF(m_x[row], column[row]);
}

void StepSeriesBuffer::summarizeBlocks(qsizetype from)
{
    const auto rows = static_cast<qsizetype>(m_x.size());
    for (size_t s = 0; s < m_y.size(); ++s) {
        const auto& column = m_y[s];
        const auto pointAt = [&](qsizetype i) {
            return QPointF(m_x[static_cast<size_t>(i)], column[static_cast<size_t>(i)]);
        };
        for (qsizetype begin = from; begin + kBlockPoints <= rows; begin += kBlockPoints)
            appendFirstMinMaxLast(pointAt, begin, begin + kBlockPoints, m_blocks[s]);
    }
}

QList<QPointF> StepSeriesBuffer::decimated(int series, int columns) const
{
    assert(series >= 0 && series < seriesCount());
    QList<QPointF> reduced;
    {
        QMutexLocker lock(&m_mutex);
        const auto rows = static_cast<qsizetype>(m_x.size());
        const auto& column = m_y[static_cast<size_t>(series)];
        const bool fits = columns <= 0 || rows <= 4 * static_cast<qsizetype>(columns);
        // A series that fits comes back whole; otherwise the completed blocks' summaries, then the
        // open block point by point.
        const qsizetype from = fits ? 0 : rows / kBlockPoints * kBlockPoints;
        const auto& blocks = m_blocks[static_cast<size_t>(series)];
        reduced.reserve((fits ? 0 : blocks.size()) + (rows - from));
        if (!fits)
            reduced.append(blocks);
        for (qsizetype i = from; i < rows; ++i)
            reduced.append({m_x[static_cast<size_t>(i)], column[static_cast<size_t>(i)]});
        if (fits)
            return reduced;
    }
    return decimate(reduced, columns);
}

void StepSeriesBuffer::setCoalesceInterval(std::chrono::milliseconds interval)
{
    m_timer.setInterval(interval);
}

void StepSeriesBuffer::scheduleUpdate()
{
    {
        QMutexLocker lock(&m_mutex);
        if (m_dirty)
            return;  // a flush is already pending: this change rides along with it
        m_dirty = true;
    }
    // The timer belongs to the owner thread; from another thread this hops over via the queue.
    QMetaObject::invokeMethod(
        this, [this] {
            if (!m_timer.isActive())
                m_timer.start();
        },
        Qt::AutoConnection);
}

void StepSeriesBuffer::flush()
{
    {
        QMutexLocker lock(&m_mutex);
        m_dirty = false;
    }
    emit updated();
}

QList<QPointF> StepSeriesBuffer::decimate(const QList<QPointF>& points, int columns)
{
    if (columns <= 0 || points.size() <= 4 * static_cast<qsizetype>(columns))
        return points;

    const double xMin = points.front().x();
    const double xMax = points.back().x();
    const double span = xMax - xMin;
    if (!(span > 0.0))
        return {points.front(), points.back()};

    QList<QPointF> out;
    out.reserve(4 * columns);
    qsizetype first = 0;  // first index of the current column
    // Each column's end by binary search (x is sorted and the column of x never decreases), then
    // one min / max scan of its y values: the live charts decimate 7 series of up to a million
    // points on every redraw, and a division per point was most of that (≈ 75 ms per redraw at
    // 1M points; bench_live_chart). The column formula is the same as before, so is the result.
    auto columnOf = [&](const QPointF& p) {
        return std::min(columns - 1, static_cast<int>((p.x() - xMin) / span * columns));
    };
    while (first < points.size()) {
        const int c = columnOf(points[first]);
        const auto end = std::partition_point(points.begin() + first + 1, points.end(),
                                              [&](const QPointF& p) { return columnOf(p) <= c; });
        const qsizetype last = end - points.begin();
        appendFirstMinMaxLast([&](qsizetype i) { return points[i]; }, first, last, out);
        first = last;
    }
    return out;
}

}  // namespace wb::ui
