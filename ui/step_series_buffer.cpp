#include "ui/step_series_buffer.h"

#include <QMutexLocker>

#include <algorithm>
#include <array>
#include <cassert>

namespace wb::ui {

StepSeriesBuffer::StepSeriesBuffer(int seriesCount, QObject* parent)
    : QObject(parent), m_series(static_cast<size_t>(std::max(seriesCount, 0)))
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
        m_series[static_cast<size_t>(series)].append(point);
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
        m_series[static_cast<size_t>(series)].append(points);
    }
    scheduleUpdate();
}

void StepSeriesBuffer::clear()
{
    {
        QMutexLocker lock(&m_mutex);
        for (auto& s : m_series)
            s.clear();
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

qsizetype StepSeriesBuffer::size(int series) const
{
    assert(series >= 0 && series < seriesCount());
    QMutexLocker lock(&m_mutex);
    return m_series[static_cast<size_t>(series)].size();
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
    auto emitColumn = [&](qsizetype begin, qsizetype end) {  // [begin, end)
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
    };
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
        emitColumn(first, last);
        first = last;
    }
    return out;
}

}  // namespace wb::ui
