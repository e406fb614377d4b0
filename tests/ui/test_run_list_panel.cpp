// RunListPanel + RunListModel, offscreen: what each column says for a run (data-driven rows), and
// that the selection survives the worker's periodic re-listing (in place and after a reset).
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui_test_main.h"

#include <QSignalSpy>
#include <QTableView>
#include <QTest>

using wb::ui::RunListModel;
using wb::ui::RunListPanel;
using wb::ui::RunRow;
using wb::ui::RunRowList;

namespace {

RunRow makeRun(const char* id, const char* status, int64_t steps, int64_t planned, int exitCode = -1,
               std::optional<double> lastLoss = std::nullopt)
{
    RunRow row;
    row.summary.id = id;
    row.summary.name = "sample-tiny";
    row.summary.target = "local";
    row.summary.status = wb::core::runStateFromName(status);
    row.summary.steps = steps;
    row.summary.exitCode = exitCode;
    row.summary.lastLoss = lastLoss;
    row.trainIters = planned;
    return row;
}

}  // namespace

class TestRunListPanel : public QObject {
    Q_OBJECT

private slots:
    void columns_data()
    {
        QTest::addColumn<RunRow>("run");
        QTest::addColumn<QString>("status");
        QTest::addColumn<QString>("steps");
        QTest::addColumn<QString>("lastLoss");

        QTest::newRow("running, planned steps known")
            << makeRun("a", "running", 42, 300, -1, 3.14159) << QStringLiteral("running")
            << QStringLiteral("42 / 300") << QStringLiteral("3.1416");
        QTest::newRow("pending, nothing yet")
            << makeRun("b", "pending", 0, 0) << QStringLiteral("pending") << QStringLiteral("0")
            << QStringLiteral("—");
        QTest::newRow("finished cleanly")
            << makeRun("c", "finished", 300, 300, 0, 1.5) << QStringLiteral("finished")
            << QStringLiteral("300 / 300") << QStringLiteral("1.5000");
        QTest::newRow("failed: out of memory shows its exit code")
            << makeRun("d", "failed", 7, 300, 3, 5.0) << QStringLiteral("failed (exit 3)")
            << QStringLiteral("7 / 300") << QStringLiteral("5.0000");
    }

    void columns()
    {
        QFETCH(RunRow, run);
        QFETCH(QString, status);
        QFETCH(QString, steps);
        QFETCH(QString, lastLoss);

        RunListModel model;
        model.setRuns({run});
        QCOMPARE(model.rowCount(), 1);
        auto text = [&](int column) { return model.data(model.index(0, column), Qt::DisplayRole).toString(); };
        QCOMPARE(text(RunListModel::Id), QString::fromStdString(run.summary.id));
        QCOMPARE(text(RunListModel::Status), status);
        QCOMPARE(text(RunListModel::Steps), steps);
        QCOMPARE(text(RunListModel::LastLoss), lastLoss);
    }

    void selectionSurvivesRelisting()
    {
        RunListPanel panel;
        panel.resize(600, 400);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QSignalSpy selected(&panel, &RunListPanel::runSelected);

        panel.setRuns({makeRun("new", "running", 1, 10), makeRun("old", "finished", 10, 10)});
        // The user clicks the second row.
        QTest::mouseClick(panel.view()->viewport(), Qt::LeftButton, {},
                          panel.view()->visualRect(panel.model()->index(1, RunListModel::Name)).center());
        QCOMPARE(panel.selectedRunId(), QStringLiteral("old"));
        QCOMPARE(selected.count(), 1);

        // Same ids, new numbers: updated in place, nothing re-selected.
        panel.setRuns({makeRun("new", "running", 2, 10), makeRun("old", "finished", 10, 10)});
        QCOMPARE(panel.selectedRunId(), QStringLiteral("old"));
        QCOMPARE(panel.view()->currentIndex().row(), 1);
        // A new run on top resets the model; the selection follows "old" to its new row, silently.
        panel.setRuns({makeRun("newest", "pending", 0, 10), makeRun("new", "running", 3, 10),
                       makeRun("old", "finished", 10, 10)});
        QCOMPARE(panel.selectedRunId(), QStringLiteral("old"));
        QCOMPARE(panel.view()->currentIndex().row(), 2);
        QCOMPARE(selected.count(), 1);
    }

    void selectRunWaitsForTheListing()
    {
        RunListPanel panel;
        QSignalSpy selected(&panel, &RunListPanel::runSelected);
        panel.selectRun(QStringLiteral("later"));  // a run just started, not listed yet
        QCOMPARE(selected.count(), 0);
        panel.setRuns({makeRun("later", "running", 0, 5)});
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.at(0).at(0).toString(), QStringLiteral("later"));
    }
};

WB_UI_TEST_MAIN(TestRunListPanel)
#include "test_run_list_panel.moc"
