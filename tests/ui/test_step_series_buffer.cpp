// StepSeriesBuffer: per-pixel min/max decimation keeps every spike and every column's extremes;
// appends are coalesced into one `updated()` per interval, from this thread or another.
#include "ui/step_series_buffer.h"
#include "ui_test_main.h"

#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <span>
#include <thread>
#include <vector>

using wb::ui::StepSeriesBuffer;

namespace {

// One-series buffers take points as rows.
void appendPoint(StepSeriesBuffer& buffer, QPointF p)
{
    const double y = p.y();
    buffer.appendRow(p.x(), std::span<const double>(&y, 1));
}

void appendPoints(StepSeriesBuffer& buffer, const QList<QPointF>& points)
{
    std::vector<double> xs, ys;
    for (const auto& p : points) {
        xs.push_back(p.x());
        ys.push_back(p.y());
    }
    buffer.appendRows(xs, ys);
}

QList<QPointF> flatSeries(int n, double y)
{
    QList<QPointF> points;
    for (int i = 0; i < n; ++i)
        points.append({static_cast<double>(i), y});
    return points;
}

// The reference for the shared-x buffer: what it returned when every series kept its own points,
// written out plainly — one list of points per series, each 64-point block summarized by a scan,
// columns found with a division per point, nearest by a linear search.
void referencePick(const QList<QPointF>& points, qsizetype begin, qsizetype end, QList<QPointF>& out)
{
    qsizetype lo = begin, hi = begin;  // the first lowest and the first highest
    for (qsizetype i = begin; i < end; ++i) {
        if (points[i].y() < points[lo].y())
            lo = i;
        if (points[i].y() > points[hi].y())
            hi = i;
    }
    QList<qsizetype> picks{begin, lo, hi, end - 1};
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    for (qsizetype i : picks)
        out.append(points[i]);
}

QList<QPointF> referenceDecimate(const QList<QPointF>& points, int columns)
{
    if (points.size() <= 4 * columns)
        return points;
    const double xMin = points.front().x(), span = points.back().x() - xMin;
    auto columnOf = [&](qsizetype i) { return std::min(columns - 1, static_cast<int>((points[i].x() - xMin) / span * columns)); };
    QList<QPointF> out;
    qsizetype begin = 0;
    for (qsizetype i = 1; i <= points.size(); ++i) {
        if (i == points.size() || columnOf(i) != columnOf(begin)) {
            referencePick(points, begin, i, out);
            begin = i;
        }
    }
    return out;
}

QList<QPointF> referenceDecimated(const QList<QPointF>& points, int columns)
{
    if (points.size() <= 4 * columns)
        return points;
    constexpr qsizetype kBlock = 64;
    QList<QPointF> reduced;
    qsizetype begin = 0;
    for (; begin + kBlock <= points.size(); begin += kBlock)
        referencePick(points, begin, begin + kBlock, reduced);
    reduced.append(points.mid(begin));  // the open block
    return referenceDecimate(reduced, columns);
}

std::optional<QPointF> referenceNearest(const QList<QPointF>& points, double x)
{
    std::optional<QPointF> best;
    for (const auto& p : points)
        if (!best || std::abs(p.x() - x) < std::abs(best->x() - x))  // strict: a tie keeps the earlier
            best = p;
    return best;
}

// A run of `rows` steps with gaps of 1–3 and `series` different shapes: random walks, one with a
// spike and one with a dip, a constant one (every point ties for min and max), a sawtooth.
struct Run {
    std::vector<double> xs;
    std::vector<double> values;      // row-major, as appendRows takes them
    QList<QList<QPointF>> perSeries;  // the same, one list per series (the reference's layout)
};

Run makeRun(int rows, int series, quint32 seed)
{
    QRandomGenerator rng(seed);
    Run run;
    run.perSeries.resize(series);
    std::vector<double> walk(static_cast<size_t>(series), 0.0);
    double x = 10.0 * seed;
    for (int r = 0; r < rows; ++r) {
        x += 1 + rng.bounded(3);
        run.xs.push_back(x);
        for (int s = 0; s < series; ++s) {
            double y = 0.0;
            switch (s % 4) {
            case 0: y = walk[static_cast<size_t>(s)] += rng.generateDouble() - 0.5; break;
            case 1: y = r == rows / 3 ? 1e4 : r == rows / 2 ? -1e4 : rng.generateDouble(); break;
            case 2: y = 7.0 + s; break;
            case 3: y = r % 97 * 0.25; break;
            }
            run.values.push_back(y);
            run.perSeries[s].append({x, y});
        }
    }
    return run;
}

}  // namespace

class TestStepSeriesBuffer : public QObject {
    Q_OBJECT

private slots:
    void decimateKeepsSpike_data()
    {
        QTest::addColumn<int>("count");
        QTest::addColumn<int>("columns");
        QTest::addColumn<int>("spikeAt");
        QTest::addColumn<double>("spikeValue");

        QTest::newRow("upward spike mid-run") << 100000 << 600 << 54321 << 50.0;
        QTest::newRow("downward dip mid-run") << 100000 << 600 << 777 << -50.0;
        QTest::newRow("spike on the first step") << 20000 << 300 << 0 << 9.0;
        QTest::newRow("spike on the last step") << 20000 << 300 << 19999 << 9.0;
        QTest::newRow("spike in a narrow plot") << 5000 << 3 << 2500 << 1e6;
        QTest::newRow("series that already fits") << 400 << 600 << 123 << 7.5;
    }

    void decimateKeepsSpike()
    {
        QFETCH(int, count);
        QFETCH(int, columns);
        QFETCH(int, spikeAt);
        QFETCH(double, spikeValue);

        auto points = flatSeries(count, 1.0);
        points[spikeAt].setY(spikeValue);
        const auto out = StepSeriesBuffer::decimate(points, columns);

        if (count <= 4 * columns)
            QCOMPARE(out.size(), points.size());
        else
            QVERIFY2(out.size() <= 4 * columns, qPrintable(QString::number(out.size())));
        QVERIFY(std::any_of(out.begin(), out.end(), [&](const QPointF& p) {
            return p.x() == spikeAt && p.y() == spikeValue;
        }));
        QCOMPARE(out.front(), points.front());
        QCOMPARE(out.back(), points.back());
        QVERIFY(std::is_sorted(out.begin(), out.end(),
                               [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); }));
    }

    void decimateKeepsEveryColumnsExtremes()
    {
        // Random walk: each plot column must show the same min and max as the raw data in it.
        QRandomGenerator rng(42);
        QList<QPointF> points;
        double y = 0.0;
        for (int i = 0; i < 50000; ++i) {
            y += rng.generateDouble() - 0.5;
            points.append({static_cast<double>(i), y});
        }
        const int columns = 250;
        const auto out = StepSeriesBuffer::decimate(points, columns);
        QVERIFY(out.size() <= 4 * columns);

        const double span = points.back().x() - points.front().x();
        auto columnOf = [&](double x) { return std::min(columns - 1, static_cast<int>(x / span * columns)); };
        QList<double> rawMin(columns, 1e300), rawMax(columns, -1e300), outMin = rawMin, outMax = rawMax;
        for (const auto& p : points) {
            rawMin[columnOf(p.x())] = std::min(rawMin[columnOf(p.x())], p.y());
            rawMax[columnOf(p.x())] = std::max(rawMax[columnOf(p.x())], p.y());
        }
        for (const auto& p : out) {
            outMin[columnOf(p.x())] = std::min(outMin[columnOf(p.x())], p.y());
            outMax[columnOf(p.x())] = std::max(outMax[columnOf(p.x())], p.y());
        }
        QCOMPARE(outMin, rawMin);
        QCOMPARE(outMax, rawMax);
    }

    // decimated() works from the block summaries: the same first and last points as decimate()
    // of the whole series, the spike and the global extremes, ≤ 4 points per column, the whole
    // series when it fits — whether the points came one by one or in batches that split blocks.
    void decimatedFromBlocksKeepsSpikes()
    {
        QRandomGenerator rng(7);
        for (bool batched : {false, true}) {
            StepSeriesBuffer buffer(1);
            QList<QPointF> all;
            double y = 0.0;
            const int n = 200003;  // not a multiple of the block size: an open block at the end
            const int spikeAt = 123457;
            QList<QPointF> pending;
            for (int i = 0; i < n; ++i) {
                y += rng.generateDouble() - 0.5;
                const QPointF p(i, i == spikeAt ? 1e4 : y);
                all.append(p);
                if (batched) {
                    pending.append(p);
                    if (pending.size() == 1000 + (i % 37)) {  // batches that split blocks
                        appendPoints(buffer, pending);
                        pending.clear();
                    }
                } else {
                    appendPoint(buffer, p);
                }
            }
            if (!pending.isEmpty())
                appendPoints(buffer, pending);
            const int columns = 700;
            const auto out = buffer.decimated(0, columns);
            QVERIFY2(out.size() <= 4 * columns, qPrintable(QString::number(out.size())));
            QCOMPARE(out.front(), all.front());
            QCOMPARE(out.back(), all.back());
            QVERIFY(std::any_of(out.begin(), out.end(), [&](const QPointF& p) { return p.x() == spikeAt && p.y() == 1e4; }));
            const auto [rawLo, rawHi] = std::minmax_element(all.begin(), all.end(),
                                                            [](const QPointF& a, const QPointF& b) { return a.y() < b.y(); });
            QVERIFY(std::find(out.begin(), out.end(), *rawLo) != out.end());
            QVERIFY(std::find(out.begin(), out.end(), *rawHi) != out.end());
            QVERIFY(std::is_sorted(out.begin(), out.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); }));
            // A series that fits comes back whole.
            StepSeriesBuffer small(1);
            appendPoints(small, all.mid(0, 500));
            QCOMPARE(small.decimated(0, columns), all.mid(0, 500));
            // clear() drops the summaries too.
            buffer.clear();
            QVERIFY(buffer.decimated(0, columns).isEmpty());
        }
    }

    // The shared-x buffer gives every series the points, decimated points and nearest points the
    // per-series layout gave (the reference above), whether rows come one by one or in batches
    // that split blocks, read between appends, and after clear() with another run's steps.
    void sharedStepsMatchPerSeriesReference_data()
    {
        QTest::addColumn<int>("batch");
        QTest::newRow("one row at a time") << 1;
        QTest::newRow("batches of 37 (split blocks)") << 37;
        QTest::newRow("batches of 1000") << 1000;
        QTest::newRow("the whole history at once") << 0;
    }

    void sharedStepsMatchPerSeriesReference()
    {
        QFETCH(int, batch);
        constexpr int kSeries = 6;
        StepSeriesBuffer buffer(kSeries);
        auto check = [&](const Run& run, qsizetype rows) {
            QCOMPARE(buffer.rowCount(), rows);
            for (int s = 0; s < kSeries; ++s) {
                const QList<QPointF> expected = run.perSeries[s].mid(0, rows);
                QCOMPARE(buffer.points(s), expected);
                for (int columns : {50, 700})
                    QCOMPARE(buffer.decimated(s, columns), referenceDecimated(expected, columns));
                if (expected.isEmpty())
                    continue;
                const double first = expected.front().x(), last = expected.back().x();
                for (double x : {first - 5.0, last + 5.0, first, last, (first + last) / 2})
                    QCOMPARE(buffer.nearest(s, x), referenceNearest(expected, x));
                for (qsizetype i = 1; i < expected.size(); i += std::max<qsizetype>(1, expected.size() / 7)) {
                    const double midway = (expected[i - 1].x() + expected[i].x()) / 2;  // a tie when the gap is even
                    QCOMPARE(buffer.nearest(s, midway), referenceNearest(expected, midway));
                    QCOMPARE(buffer.nearest(s, midway + 0.1), referenceNearest(expected, midway + 0.1));
                }
            }
        };
        auto feed = [&](const Run& run) {
            const int rows = static_cast<int>(run.xs.size());
            const int step = batch > 0 ? batch : rows;
            int nextCheck = 0;
            for (int from = 0; from < rows; from += step) {
                const int count = std::min(step, rows - from);
                buffer.appendRows(std::span(run.xs).subspan(from, count),
                                  std::span(run.values).subspan(static_cast<size_t>(from) * kSeries,
                                                                static_cast<size_t>(count) * kSeries));
                if (from + count >= nextCheck) {  // read between appends, every ~3000 rows
                    check(run, from + count);
                    if (QTest::currentTestFailed())
                        return;
                    nextCheck = from + count + 3001;
                }
            }
            check(run, rows);
        };
        feed(makeRun(12011, kSeries, 1));
        if (QTest::currentTestFailed())
            return;
        buffer.clear();  // switch run: nothing of the first one may show through
        check(makeRun(0, kSeries, 2), 0);
        feed(makeRun(5003, kSeries, 2));
    }

    void appendsAreCoalesced()
    {
        StepSeriesBuffer buffer(2);
        buffer.setCoalesceInterval(std::chrono::milliseconds(40));
        QSignalSpy spy(&buffer, &StepSeriesBuffer::updated);

        for (int i = 0; i < 1000; ++i) {
            const double row[] = {i * 0.5, static_cast<double>(-i)};
            buffer.appendRow(i, row);
        }
        QCOMPARE(spy.count(), 0);  // nothing redraws synchronously inside the burst
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 2000);
        QTest::qWait(150);
        QCOMPARE(spy.count(), 1);  // one burst, one update
        QCOMPARE(buffer.rowCount(), 1000);
        QCOMPARE(buffer.points(1).back(), QPointF(999, -999));

        const double last[] = {1.0, 2.0};
        buffer.appendRow(1000, last);
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, 2000);
    }

    void appendsFromAnotherThreadAreCoalesced()
    {
        StepSeriesBuffer buffer(1);
        QSignalSpy spy(&buffer, &StepSeriesBuffer::updated);
        constexpr int kPoints = 20000;
        std::thread producer([&buffer] {
            for (int i = 0; i < kPoints; ++i)
                appendPoint(buffer, QPointF(i, 1.0));
        });
        producer.join();
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, 2000);
        QTest::qWait(100);
        QCOMPARE(buffer.rowCount(), kPoints);
        QVERIFY2(spy.count() <= 3, qPrintable(QString::number(spy.count())));
    }

    // Rows of several series appended by a worker thread while this thread reads, as the panel's
    // redraw and tooltips do: every read sees whole rows (all series as long as x), and the end
    // state is the per-series reference's.
    void readsWhileAnotherThreadAppendsRows()
    {
        constexpr int kSeries = 4;
        const Run run = makeRun(40000, kSeries, 3);
        StepSeriesBuffer buffer(kSeries);
        std::atomic<bool> done{false};
        std::thread producer([&] {
            for (size_t from = 0; from < run.xs.size(); from += 100) {
                const size_t count = std::min<size_t>(100, run.xs.size() - from);
                buffer.appendRows(std::span(run.xs).subspan(from, count),
                                  std::span(run.values).subspan(from * kSeries, count * kSeries));
            }
            done = true;
        });
        int reads = 0;
        bool torn = false;
        while (!done || reads == 0) {
            for (int s = 0; s < kSeries; ++s) {
                const auto points = buffer.decimated(s, 300);
                const auto near = buffer.nearest(s, run.xs[run.xs.size() / 2]);
                // A decimated series ends at a step that exists, with that series' value there.
                if (!points.isEmpty()) {
                    const auto row = std::lower_bound(run.xs.begin(), run.xs.end(), points.back().x()) - run.xs.begin();
                    torn = torn || run.values[static_cast<size_t>(row) * kSeries + s] != points.back().y();
                }
                torn = torn || (near && std::find(run.perSeries[s].begin(), run.perSeries[s].end(), *near) ==
                                            run.perSeries[s].end());
            }
            ++reads;
        }
        producer.join();
        QVERIFY(!torn);
        QCOMPARE(buffer.rowCount(), static_cast<qsizetype>(run.xs.size()));
        for (int s = 0; s < kSeries; ++s)
            QCOMPARE(buffer.decimated(s, 300), referenceDecimated(run.perSeries[s], 300));
    }

    void clearEmptiesEverySeries()
    {
        StepSeriesBuffer buffer(3);
        const double xs[] = {0, 1};
        const double values[] = {1, 2, 3, 4, 5, 6};
        buffer.appendRows(xs, values);
        QCOMPARE(buffer.points(2), (QList<QPointF>{{0, 3}, {1, 6}}));
        buffer.clear();
        QCOMPARE(buffer.rowCount(), 0);
        for (int i = 0; i < 3; ++i) {
            QVERIFY(buffer.points(i).isEmpty());
            QVERIFY(!buffer.nearest(i, 0.0));
        }
    }

    void nearestFindsTheClosestStep()
    {
        StepSeriesBuffer buffer(1);
        QVERIFY(!buffer.nearest(0, 5.0));  // empty
        appendPoints(buffer, QList<QPointF>{{1, 10}, {2, 20}, {4, 40}, {8, 80}});
        QCOMPARE(*buffer.nearest(0, -3.0), QPointF(1, 10));   // before the first
        QCOMPARE(*buffer.nearest(0, 2.9), QPointF(2, 20));
        QCOMPARE(*buffer.nearest(0, 3.0), QPointF(2, 20));    // a tie goes to the earlier step
        QCOMPARE(*buffer.nearest(0, 3.1), QPointF(4, 40));
        QCOMPARE(*buffer.nearest(0, 4.0), QPointF(4, 40));    // exact
        QCOMPARE(*buffer.nearest(0, 1e9), QPointF(8, 80));    // after the last
    }
};

WB_UI_TEST_MAIN(TestStepSeriesBuffer)
#include "test_step_series_buffer.moc"
