// StepSeriesBuffer: the live charts' data behind a short lock (the PlotJuggler pattern).
// Producers append rows — one x (the step) and one y per series — from any thread; the critical
// section is a few column appends. A single-shot coalescing timer on the owner's thread then emits
// `updated()` at most once per interval (≈40 ms), so a burst of a thousand steps costs one redraw,
// not a thousand. Consumers reduce a series to the plot width with `decimated()`: per pixel column
// the first, min, max and last point are kept (M4), so a one-step loss spike survives however long
// the run gets.
// Layout: every series has a point at every step (the run view plots 18 metrics of the same
// steps), so x is stored once and each series is a column of y: 8 + 8 × series bytes per step
// instead of 16 × series (a 1M-step run with 18 series: 152 MB, not 288 MB). Columns are deques —
// no reallocation copies while a run grows and no capacity doubling left unused.
// Threading: appendRow(s)/clear/points/nearest/rowCount/decimated: any thread. The timer and
// `updated()`: owner thread.
#pragma once

#include <QList>
#include <QMutex>
#include <QObject>
#include <QPointF>
#include <QTimer>

#include <chrono>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace wb::ui {

class StepSeriesBuffer : public QObject {
    Q_OBJECT

public:
    static constexpr std::chrono::milliseconds kDefaultCoalesceInterval{40};

    explicit StepSeriesBuffer(int seriesCount, QObject* parent = nullptr);

    int seriesCount() const { return m_seriesCount; }

    /// Appends one step: `values[s]` is series s's y at x (values.size() == seriesCount()).
    /// Steps must arrive in increasing x.
    void appendRow(double x, std::span<const double> values);
    /// Appends xs.size() steps at once, one lock: row i is xs[i] with, for every series s,
    /// values[i * seriesCount() + s] (row-major; values.size() == xs.size() × seriesCount()).
    void appendRows(std::span<const double> xs, std::span<const double> values);
    /// Removes every step (and still schedules one `updated()`).
    void clear();

    /// Steps held (every series has this many points).
    qsizetype rowCount() const;
    /// Series `series` as points, a copy taken under the lock: O(steps), for tests and tools —
    /// the charts read decimated() and nearest(). Any thread.
    QList<QPointF> points(int series) const;
    /// The point whose x is nearest to `x` (binary search; x is increasing; a tie goes to the
    /// earlier step), or nothing while empty. The hover tooltips read the raw values of a step
    /// through it. Any thread.
    std::optional<QPointF> nearest(int series, double x) const;
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
    // Summarizes every block completed in [from, rowCount) of every series; `from` is a block
    // start. Caller holds m_mutex.
    void summarizeBlocks(qsizetype from);

    const int m_seriesCount;
    mutable QMutex m_mutex;
    std::deque<double> m_x;                // guarded by m_mutex: the steps, increasing
    std::vector<std::deque<double>> m_y;   // guarded by m_mutex: one column per series, m_x.size() each
    // guarded by m_mutex: per series, first, min, max, last (x order, repeats removed) of each
    // completed block of kBlockPoints steps
    std::vector<QList<QPointF>> m_blocks;
    bool m_dirty = false;                  // guarded by m_mutex
    QTimer m_timer;                        // owner thread only
};

}  // namespace wb::ui
