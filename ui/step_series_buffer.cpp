#include "ui/step_series_buffer.h"

#include <QMutexLocker>

#include <algorithm>
#include <array>
#include <cassert>

namespace wb::ui {

StepSeriesBuffer::StepSeriesBuffer(int seriesCount, QObject* parent)
    : QObject(parent), m_series(static_cast<size_t>(std::max(seriesCount, 0))),
      m_blocks(static_cast<size_t>(std::max(seriesCount, 0)))
{
    m_timer.setSingleShot(true);
    m_timer.setInterval(kDefaultCoalesceInterval);
    connect(&m_timer, &QTimer::timeout, this, &StepSeriesBuffer::flush);
}

void StepSeriesBuffer::append(int series, QPointF point)
{
    assert(series >= 0 && series < seriesCount());
    {
        QMutexLocker lock(&m_mutex);
        auto& points = m_series[static_cast<size_t>(series)];
        points.append(point);
        if (points.size() % kBlockPoints == 0)
            summarizeBlocks(points, points.size() - kBlockPoints, m_blocks[static_cast<size_t>(series)]);
    }
    scheduleUpdate();
}

void StepSeriesBuffer::append(int series, const QList<QPointF>& points)
{
    assert(series >= 0 && series < seriesCount());
    if (points.isEmpty())
        return;
    {
        QMutexLocker lock(&m_mutex);
        auto& stored = m_series[static_cast<size_t>(series)];
        const qsizetype done = stored.size() / kBlockPoints * kBlockPoints;  // first point of the open block
        stored.append(points);
        summarizeBlocks(stored, done, m_blocks[static_cast<size_t>(series)]);
    }
    scheduleUpdate();
}

void StepSeriesBuffer::clear()
{
    {
        QMutexLocker lock(&m_mutex);
        for (auto& s : m_series)
            s.clear();
        for (auto& b : m_blocks)
            b.clear();
    }
    scheduleUpdate();
}

QList<QPointF> StepSeriesBuffer::points(int series) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    return m_series[static_cast<size_t>(series)];  // implicitly shared: the copy is O(1) here,
                                                    // the next append detaches it
}

std::optional<QPointF> StepSeriesBuffer::nearest(int series, double x) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    const auto& points = m_series[static_cast<size_t>(series)];
    if (points.isEmpty())
        return std::nullopt;
    const auto after = std::lower_bound(points.begin(), points.end(), x,
                                        [](const QPointF& p, double value) { return p.x() < value; });
    if (after == points.begin())
        return points.front();
    if (after == points.end())
        return points.back();
    const auto before = after - 1;
    return x - before->x() <= after->x() - x ? *before : *after;
}

qsizetype StepSeriesBuffer::size(int series) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    return m_series[static_cast<size_t>(series)].size();
}

namespace {

// Appends the first, minimum, maximum and last point of points[begin, end) to `out`, in x order,
// each once (M4): what both the per-column decimation and the block summaries keep.
void appendFirstMinMaxLast(const QList<QPointF>& points, qsizetype begin, qsizetype end, QList<QPointF>& out)
{
    qsizetype lo = begin, hi = begin;
    for (qsizetype i = begin + 1; i < end; ++i) {
        if (points[i].y() < points[lo].y())
            lo = i;
        if (points[i].y() > points[hi].y())
            hi = i;
    }
    std::array<qsizetype, 4> picks{begin, lo, hi, end - 1};
    std::sort(picks.begin(), picks.end());
    qsizetype previous = -1;
    for (qsizetype index : picks) {
        if (index != previous)
            out.append(points[index]);
        previous = index;
    }
}

}  // namespace

void StepSeriesBuffer::summarizeBlocks(const QList<QPointF>& points, qsizetype from, QList<QPointF>& summary)
{
    // `from` is a block start; every block completed in [from, size) is summarized.
    for (qsizetype begin = from; begin + kBlockPoints <= points.size(); begin += kBlockPoints) {
        const qsizetype end = begin + kBlockPoints;
        appendFirstMinMaxLast(points, begin, end, summary);
    }
}

QList<QPointF> StepSeriesBuffer::decimated(int series, int columns) const
{
    assert(series >= 0 && series < seriesCount());
    QList<QPointF> reduced;
    {
        QMutexLocker lock(&m_mutex);
        const auto& points = m_series[static_cast<size_t>(series)];
        if (columns <= 0 || points.size() <= 4 * static_cast<qsizetype>(columns))
            return points;
        const auto& blocks = m_blocks[static_cast<size_t>(series)];
        const qsizetype done = points.size() / kBlockPoints * kBlockPoints;
        reduced.reserve(blocks.size() + (points.size() - done));
        reduced.append(blocks);
        for (qsizetype i = done; i < points.size(); ++i)  // the open block, point by point
            reduced.append(points[i]);
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
        appendFirstMinMaxLast(points, first, last, out);
        first = last;
    }
    return out;
}

}  // namespace wb::ui
