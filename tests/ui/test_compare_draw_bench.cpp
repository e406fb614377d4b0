// Benchmark (not a test; not registered with ctest): the compare view on N runs × M steps —
// load + analyse (compareRuns), then fill the tables and draw the four overlaid charts (EMA +
// decimation to the plot width), then a redraw after switching the x axis. Prints a table.
// Usage: QT_QPA_PLATFORM=offscreen test_compare_draw_bench [store] [runs=20] [steps=100000]
// Without a store (or with an empty one) it creates the runs first (that part is not timed).
#include "ui/compare_chart_panel.h"
#include "ui/compare_view.h"
#include "synthetic_runs.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QListWidget>
#include <QTemporaryDir>

#include <cstdio>

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QTemporaryDir temp;
    const QString store = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QDir(temp.path()).filePath(QStringLiteral("runs.sqlite"));
    const int runCount = argc > 2 ? std::atoi(argv[2]) : 20;
    const int64_t steps = argc > 3 ? std::atoll(argv[3]) : 100000;
    {
        auto s = wb::core::RunStore::open(store.toStdString());
        if (!s)
            return 1;
        auto runs = (*s)->listRuns();
        for (int r = static_cast<int>(runs ? runs->size() : 0); r < runCount; ++r) {
            wb::test::SyntheticRun run;
            run.name = "bench-" + std::to_string(r);
            run.steps = steps;
            run.stepMs = 100.0 + r;
            wb::test::addSyntheticRun(**s, run);
        }
    }
    wb::ui::CompareView view(store);
    view.resize(1600, 1000);
    view.show();
    QApplication::processEvents();
    auto* list = view.findChild<QListWidget*>(QStringLiteral("compareRunList"));
    QStringList ids;
    for (int i = 0; i < list->count() && i < runCount; ++i)
        ids << list->item(i)->data(Qt::UserRole).toString();
    view.setSelectedRuns(ids);

    QElapsedTimer timer;
    timer.start();
    auto request = wb::core::CompareRequest{};
    for (const auto& id : ids)
        request.runs.push_back(id.toStdString());
    auto engineOnly = wb::core::compareRuns(store.toStdString(), request);
    const double engineMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    {
        QEventLoop loop;  // the view loads on a worker thread and reports with compared()
        QObject::connect(&view, &wb::ui::CompareView::compared, &loop, &QEventLoop::quit);
        view.compare();  // load + analyse + tables + charts
        loop.exec();
    }
    const double compareMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    QApplication::processEvents();  // the paint
    const double paintMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    view.findChild<QComboBox*>(QStringLiteral("compareXAxis"))->setCurrentIndex(2);
    QApplication::processEvents();
    const double axisMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    view.logScaleToggle()->setChecked(true);
    QApplication::processEvents();
    const double logMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    view.shadeWindowToggle()->setChecked(false);
    QApplication::processEvents();
    const double noShadeMs = timer.nsecsElapsed() / 1e6;
    QTemporaryDir exportDir;
    timer.restart();
    const bool exported = view.exportReport(exportDir.path()).ok();
    const double exportMs = timer.nsecsElapsed() / 1e6;

    std::printf("%d runs × %lld steps; %lld points drawn after decimation\n\n", runCount,
                static_cast<long long>(steps), static_cast<long long>(view.charts()->drawnPoints()));
    std::printf("| stage | ms |\n|---|---|\n");
    std::printf("| compareRuns(path) alone (load + analyse) | %.0f |\n", engineMs);
    std::printf("| CompareView::compare (load + analyse + tables + 4 charts: EMA, decimate, set) | %.0f |\n", compareMs);
    std::printf("| first paint | %.0f |\n", paintMs);
    std::printf("| switch x axis to effective tokens (recompute + decimate + paint) | %.0f |\n", axisMs);
    std::printf("| log scale on (recompute + decimate + paint) | %.0f |\n", logMs);
    std::printf("| steady-window shading off (recompute + paint, no bands) | %.0f |\n", noShadeMs);
    std::printf("| export report (4 PNG offscreen + 4 SVG + report.md) | %.0f |\n", exportMs);
    return engineOnly.ok() && exported ? 0 : 1;
}
