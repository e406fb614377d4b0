// StepSeriesBuffer: per-pixel min/max decimation keeps every spike and every column's extremes;
// appends are coalesced into one `updated()` per interval, from this thread or another.
#include "ui/step_series_buffer.h"
#include "ui_test_main.h"

#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <thread>

using wb::ui::StepSeriesBuffer;

namespace {

QList<QPointF> flatSeries(int n, double y)
{
    QList<QPointF> points;
    for (int i = 0; i < n; ++i)
        points.append({static_cast<double>(i), y});
    return points;
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
                        buffer.append(0, pending);
                        pending.clear();
                    }
                } else {
                    buffer.append(0, p);
                }
            }
            if (!pending.isEmpty())
                buffer.append(0, pending);
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
            small.append(0, all.mid(0, 500));
            QCOMPARE(small.decimated(0, columns), all.mid(0, 500));
            // clear() drops the summaries too.
            buffer.clear();
            QVERIFY(buffer.decimated(0, columns).isEmpty());
        }
    }

    void appendsAreCoalesced()
    {
        StepSeriesBuffer buffer(2);
        buffer.setCoalesceInterval(std::chrono::milliseconds(40));
        QSignalSpy spy(&buffer, &StepSeriesBuffer::updated);

        for (int i = 0; i < 1000; ++i) {
            buffer.append(0, QPointF(i, i * 0.5));
            buffer.append(1, QPointF(i, -i));
        }
        QCOMPARE(spy.count(), 0);  // nothing redraws synchronously inside the burst
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 2000);
        QTest::qWait(150);
        QCOMPARE(spy.count(), 1);  // one burst, one update
        QCOMPARE(buffer.size(0), 1000);
        QCOMPARE(buffer.points(1).back(), QPointF(999, -999));

        buffer.append(0, QPointF(1000, 1.0));
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 2, 2000);
    }

    void appendsFromAnotherThreadAreCoalesced()
    {
        StepSeriesBuffer buffer(1);
        QSignalSpy spy(&buffer, &StepSeriesBuffer::updated);
        constexpr int kPoints = 20000;
        std::thread producer([&buffer] {
            for (int i = 0; i < kPoints; ++i)
                buffer.append(0, QPointF(i, 1.0));
        });
        producer.join();
        QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, 2000);
        QTest::qWait(100);
        QCOMPARE(buffer.size(0), kPoints);
        QVERIFY2(spy.count() <= 3, qPrintable(QString::number(spy.count())));
    }

    void clearEmptiesEverySeries()
    {
        StepSeriesBuffer buffer(3);
        buffer.append(0, QList<QPointF>{{0, 1}, {1, 2}});
        buffer.append(2, QPointF(0, 3));
        buffer.clear();
        for (int i = 0; i < 3; ++i)
            QCOMPARE(buffer.size(i), 0);
    }

    void nearestFindsTheClosestStep()
    {
        StepSeriesBuffer buffer(1);
        QVERIFY(!buffer.nearest(0, 5.0));  // empty
        buffer.append(0, QList<QPointF>{{1, 10}, {2, 20}, {4, 40}, {8, 80}});
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
