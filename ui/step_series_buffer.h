// StepSeriesBuffer: the live charts' data behind a short lock (the PlotJuggler pattern).
// Producers append (x = step, y = value) points from any thread; the critical section is a vector
// append. A single-shot coalescing timer on the owner's thread then emits `updated()` at most once
// per interval (≈40 ms), so a burst of a thousand steps costs one redraw, not a thousand.
// Consumers copy a series out with `points()` (outside the lock they may take their time) and
// reduce it to the plot width with `decimate()`: per pixel column the first, min, max and last
// point are kept (M4), so a one-step loss spike survives however long the run gets.
// Threading: append/clear/points/size: any thread. The timer and `updated()`: owner thread.
#pragma once

#include <QList>
#include <QMutex>
#include <QObject>
#include <QPointF>
#include <QTimer>

#include <chrono>
#include <optional>
#include <vector>

namespace wb::ui {

class StepSeriesBuffer : public QObject {
    Q_OBJECT

public:
    static constexpr std::chrono::milliseconds kDefaultCoalesceInterval{40};

    explicit StepSeriesBuffer(int seriesCount, QObject* parent = nullptr);

    int seriesCount() const { return static_cast<int>(m_series.size()); }

    /// Appends to series `series` (0 <= series < seriesCount()). Points must arrive in increasing x.
    void append(int series, QPointF point);
    void append(int series, const QList<QPointF>& points);
    /// Removes every point of every series (and still schedules one `updated()`).
    void clear();

    QList<QPointF> points(int series) const;  ///< a copy, taken under the lock
    /// The point whose x is nearest to `x` (binary search; x is increasing), or nothing for an
    /// empty series. The hover tooltips read the raw values of a step through it. Any thread.
    std::optional<QPointF> nearest(int series, double x) const;
    qsizetype size(int series) const;
    /// decimate(points(series), columns) without touching every point: the buffer keeps, per
    /// block of kBlockPoints appended points, that block's first, min, max and last points, and
    /// decimates those (plus the open block's points). A point that is its block's minimum or
    /// maximum — a one-step spike above or below its neighbours, the series' global extremes — is
    /// always kept, and the first and last points are the series'; other per-column extremes can
    /// differ from decimate()'s only in the columns that split a block (at 1M points on ~1000
    /// columns a column spans ~16 blocks). Series that fit (<= 4 × columns points) come back
    /// whole. Any thread.
    QList<QPointF> decimated(int series, int columns) const;
    static constexpr qsizetype kBlockPoints = 64;

    void setCoalesceInterval(std::chrono::milliseconds interval);

    /// Reduces `points` (sorted by x) to at most 4 points per column over `columns` equal-width
    /// x-columns: first, min, max, last of each column, in x order. Series that already fit
    /// (<= 4 × columns points) are returned unchanged. Pure; any thread.
    static QList<QPointF> decimate(const QList<QPointF>& points, int columns);

signals:
    /// Something changed since the last emission. Coalesced; owner thread.
    void updated();

private:
    void scheduleUpdate();  // any thread
    void flush();           // owner thread

    // The block summaries of one series: first, min, max, last (x order, repeats removed) of
    // each completed block of kBlockPoints points.
    static void summarizeBlocks(const QList<QPointF>& points, qsizetype from, QList<QPointF>& summary);

    mutable QMutex m_mutex;
    std::vector<QList<QPointF>> m_series;  // guarded by m_mutex (the vector's size is fixed)
    std::vector<QList<QPointF>> m_blocks;  // guarded by m_mutex: summaries of completed blocks
    bool m_dirty = false;                  // guarded by m_mutex
    QTimer m_timer;                        // owner thread only
};

}  // namespace wb::ui
