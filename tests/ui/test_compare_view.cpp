// CompareView, offscreen, on runs stored in a temporary RunStore (synthetic metrics streams ingested
// through RunStore::ingest): tick runs, press Compare, read back the banner, the figures table with
// its deltas, the config diff and the charts; switch the baseline and the x axis.
#include "ui/compare_chart_panel.h"
#include "ui/compare_view.h"
#include "ui/metric_chart_view.h"
#include "synthetic_runs.h"
#include "ui_test_main.h"

#include <QAbstractAxis>
#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using wb::ui::CompareChartPanel;
using wb::ui::CompareView;

namespace {

struct TwoRuns {
    QString storePath;
    QString first;
    QString second;
};

TwoRuns makeStore(const QTemporaryDir& dir, const QString& secondSource, double secondStepMs)
{
    TwoRuns out;
    out.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    auto store = wb::core::RunStore::open(out.storePath.toStdString());
    if (!store)
        return out;
    wb::test::SyntheticRun a;
    a.name = "baseline-real";
    wb::test::SyntheticRun b = a;
    b.name = "candidate";
    b.dataSource = secondSource.toStdString();
    b.stepMs = secondStepMs;
    out.first = QString::fromStdString(wb::test::addSyntheticRun(**store, a));
    out.second = QString::fromStdString(wb::test::addSyntheticRun(**store, b));
    return out;
}

void tick(CompareView& view, const QStringList& ids)
{
    auto* list = view.findChild<QListWidget*>(QStringLiteral("compareRunList"));
    QVERIFY(list);
    for (int i = 0; i < list->count(); ++i) {
        auto* item = list->item(i);
        item->setCheckState(ids.contains(item->data(Qt::UserRole).toString()) ? Qt::Checked : Qt::Unchecked);
    }
}

/// Runs `trigger` and waits until the view reports the comparison (it loads on a worker thread).
template <typename Trigger>
void waitForCompare(CompareView& view, Trigger trigger)
{
    QSignalSpy spy(&view, &CompareView::compared);
    trigger();
    if (spy.isEmpty())
        QVERIFY(spy.wait(30000));
    QVERIFY(!view.isLoading());
}

void pressCompare(CompareView& view)
{
    auto* button = view.findChild<QPushButton*>(QStringLiteral("compareButton"));
    QVERIFY(button);
    waitForCompare(view, [button] { QTest::mouseClick(button, Qt::LeftButton); });
}

/// The signed percentage in a cell like "40960.0 (+100.2 %)".
double deltaPercent(const QString& cell)
{
    const auto match = QRegularExpression(QStringLiteral("\\(([+-][0-9.]+) %\\)")).match(cell);
    return match.hasMatch() ? match.captured(1).toDouble() : std::nan("");
}

}  // namespace

class TestCompareView : public QObject {
    Q_OBJECT

private slots:
    void mockVsRealShowsBannerTableAndDiff()
    {
        QTemporaryDir dir;
        const TwoRuns runs = makeStore(dir, QStringLiteral("mock"), 50.0);  // "twice as fast" on mock data
        QVERIFY(!runs.first.isEmpty() && !runs.second.isEmpty());

        CompareView view(runs.storePath);
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        tick(view, {runs.first, runs.second});
        view.setBaseline(runs.first);
        pressCompare(view);
        QVERIFY(view.comparison());

        // The banner: visible, red, critical, and it says mock vs real.
        QLabel* banner = view.warningBanner();
        QVERIFY(banner->isVisible());
        QCOMPARE(banner->property("severity").toString(), QStringLiteral("critical"));
        QVERIFY(banner->text().contains(QStringLiteral("MOCK vs REAL")));
        QVERIFY(banner->styleSheet().contains(QStringLiteral("#d62728")));
        QVERIFY(banner->y() < view.figuresTable()->mapTo(&view, QPoint(0, 0)).y());  // above the table

        // The table: one column per run, baseline marked, deltas against it.
        QTableWidget* table = view.figuresTable();
        QCOMPARE(table->columnCount(), 2);
        QVERIFY(table->horizontalHeaderItem(0)->text().startsWith(QStringLiteral("baseline-real")));
        QVERIFY(table->horizontalHeaderItem(0)->text().contains(QStringLiteral("★ baseline")));
        QVERIFY(table->verticalHeaderItem(0)->text().startsWith(QStringLiteral("effective tokens/s/GPU")));
        // 4096 effective tokens per 100 ms step on 2 GPUs = 20480 tok/s/GPU (±2 % synthetic noise).
        const double baseTokens = table->item(0, 0)->text().toDouble();
        QVERIFY2(std::abs(baseTokens - 20480.0) < 410.0, qPrintable(table->item(0, 0)->text()));
        QVERIFY(!table->item(0, 0)->text().contains(QLatin1Char('%')));  // no delta against itself
        const double delta = deltaPercent(table->item(0, 1)->text());       // 50 ms steps: about +100 %
        QVERIFY2(std::abs(delta - 100.0) < 5.0, qPrintable(table->item(0, 1)->text()));
        const int sourceRow = table->rowCount() - 1;
        QCOMPARE(table->item(sourceRow, 0)->text(), QStringLiteral("real"));
        QCOMPARE(table->item(sourceRow, 1)->text(), QStringLiteral("mock"));
        QVERIFY(table->item(table->rowCount() - 2, 0)->text().startsWith(QStringLiteral("6..200")));  // 5 warm-up steps skipped

        // The config diff: only what differs, the data source among it.
        QTableWidget* diff = view.configDiffTable();
        QStringList keys;
        for (int r = 0; r < diff->rowCount(); ++r)
            keys << diff->verticalHeaderItem(r)->text();
        QVERIFY2(keys.contains(QStringLiteral("data.source")), qPrintable(keys.join(u',')));
        QVERIFY(!keys.contains(QStringLiteral("train.seq_length")));

        // Charts: both runs drawn (raw + smoothed), decimated.
        QVERIFY(view.charts()->drawnPoints() > 0);

        // Switching the baseline recompares; the baseline is always the first column.
        waitForCompare(view, [&] { view.setBaseline(runs.second); });
        QVERIFY(view.figuresTable()->horizontalHeaderItem(0)->text().startsWith(QStringLiteral("candidate")));
        QVERIFY(view.figuresTable()->horizontalHeaderItem(0)->text().contains(QStringLiteral("baseline")));
        QVERIFY(std::abs(deltaPercent(view.figuresTable()->item(0, 1)->text()) + 50.0) < 3.0);

        // The x axis can be the effective tokens seen.
        auto* xAxis = view.findChild<QComboBox*>(QStringLiteral("compareXAxis"));
        xAxis->setCurrentIndex(2);
        QCOMPARE(view.charts()->xAxis(), CompareChartPanel::XAxis::EffectiveTokens);
        // The lines are recomputed on a worker thread; the charts switch when they arrive.
        QTRY_VERIFY(view.charts()->isUpToDate());
        auto* chart = view.charts()->chartView(CompareChartPanel::Chart::Throughput);
        QCOMPARE(chart->chart()->axes(Qt::Horizontal).first()->titleText(), QStringLiteral("Effective tokens seen"));
        // 200 steps × 4096 tokens: the last smoothed point sits at 819,200 tokens seen.
        const auto* lines = view.charts()->lines(CompareChartPanel::Chart::Throughput);
        QVERIFY(lines);
        QCOMPARE(lines->runs[1].smooth.x.back(), 819200.0);
    }

    void sameWorkloadHasNoWarning()
    {
        QTemporaryDir dir;
        const TwoRuns runs = makeStore(dir, QStringLiteral("real"), 90.0);
        CompareView view(runs.storePath);
        view.resize(1200, 800);
        view.show();
        tick(view, {runs.first, runs.second});
        pressCompare(view);
        QVERIFY(view.comparison());
        QCOMPARE(view.warningBanner()->property("severity").toString(), QStringLiteral("none"));
        QVERIFY(!view.warningBanner()->text().contains(QStringLiteral("CRITICAL")));
        QCOMPARE(view.configDiffTable()->rowCount(), 0);
    }

    void predictionTableReadsBack()
    {
        // One run launched "from a plan" (its prediction stored through RunStore), one not.
        QTemporaryDir dir;
        const TwoRuns runs = makeStore(dir, QStringLiteral("real"), 100.0);
        {
            auto store = wb::core::RunStore::open(runs.storePath.toStdString());
            QVERIFY(store.ok());
            wb::core::RunPrediction p;
            p.source = "test planner";
            p.hardware = "h200";
            p.gpus = 2;
            p.stepMs = 80.0;            // measured ~100 ms: about -20 %
            p.memoryGib = 21.0;         // measured 10.5 GiB (warm-up included): +100 %
            p.tokensPerSPerGpu = 20480.0;
            p.mfu = 0.5;
            QVERIFY((*store)->setPrediction(runs.second.toStdString(), p).ok());
        }
        CompareView view(runs.storePath);
        view.resize(1400, 900);
        view.show();
        tick(view, {runs.first, runs.second});
        view.setBaseline(runs.first);
        pressCompare(view);
        QVERIFY(view.comparison());

        QTableWidget* table = view.predictionTable();
        QVERIFY(table->isVisible());
        QCOMPARE(table->rowCount(), 3);  // two runs + mean |error|
        QVERIFY(table->horizontalHeaderItem(0)->text().startsWith(QStringLiteral("step time")));
        QVERIFY(table->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("peak memory")));
        QCOMPARE(table->verticalHeaderItem(0)->text(), QStringLiteral("baseline-real"));
        QCOMPARE(table->item(0, 0)->text(), QStringLiteral("no prediction (not launched from a plan)"));
        QCOMPARE(table->verticalHeaderItem(1)->text(), QStringLiteral("candidate"));
        QVERIFY2(table->item(1, 0)->text().startsWith(QStringLiteral("80.0 / ")), qPrintable(table->item(1, 0)->text()));
        const double stepError = deltaPercent(table->item(1, 0)->text());
        QVERIFY2(std::abs(stepError + 20.0) < 2.0, qPrintable(table->item(1, 0)->text()));
        QCOMPARE(table->item(1, 1)->text(), QStringLiteral("21.00 / 10.50 (+100.0 %)"));
        QVERIFY(table->item(1, 4)->text().contains(QStringLiteral("h200")));
        QVERIFY(table->verticalHeaderItem(2)->text().contains(QStringLiteral("mean")));
        QVERIFY2(table->item(2, 1)->text().startsWith(QStringLiteral("100.0 %")), qPrintable(table->item(2, 1)->text()));

        // Comparing again reuses the loaded runs and reads the steps stored since.
        {
            auto store = wb::core::RunStore::open(runs.storePath.toStdString());
            wb::core::StepRecord more;
            more.step = 201;
            more.stepMs = 100.0;
            more.effectiveTokens = 4096;
            const std::string line = wb::core::toJsonLine(more) + "\n";
            QVERIFY((*store)->ingest(runs.first.toStdString(), (*store)->run(runs.first.toStdString())->streamOffset, line).ok());
        }
        pressCompare(view);
        QCOMPARE(view.comparison()->runs[0].steps().size(), size_t(201));
        QCOMPARE(view.comparison()->runs[1].steps().size(), size_t(200));
    }

    void badWindowIsReported()
    {
        QTemporaryDir dir;
        const TwoRuns runs = makeStore(dir, QStringLiteral("real"), 90.0);
        CompareView view(runs.storePath);
        tick(view, {runs.first});
        view.setWindowOverride(QStringLiteral("500:100"));
        pressCompare(view);
        QVERIFY(!view.comparison());
        QCOMPARE(view.warningBanner()->property("severity").toString(), QStringLiteral("error"));
        QVERIFY(view.warningBanner()->text().contains(QStringLiteral("FIRST:LAST")));
    }
};

WB_UI_TEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
