// Benchmark (not a test; not registered with ctest): the compare view on N runs × M steps —
// load + analyse (compareRuns) and the chart lines (EMA + decimation to the plot width) on the
// loading thread, then the tables and the four overlaid charts filled and painted; then the
// x-axis switch, log scale and shading (lines recomputed off the GUI thread) and the exports.
// Each stage reports wall and CPU time and the GUI thread's longest stall (the largest gap
// between ticks of a 2 ms timer: how long a click would have waited). Prints a table.
// Usage: QT_QPA_PLATFORM=offscreen test_compare_draw_bench [store] [runs=20] [steps=100000]
// Without a store (or with an empty one) it creates the runs first (that part is not timed).
#include "ui/compare_chart_panel.h"
#include "ui/compare_view.h"
#include "core/compare/chart_series.h"
#include "synthetic_runs.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QListWidget>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>
#include <time.h>

namespace {
double cpuMs()  // process CPU time (all threads): steadier than wall time on a shared machine
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}
}  // namespace

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
    struct Row {
        const char* what;
        double wallMs, cpuMs, stallMs;
    };
    std::vector<Row> rows;
    // The GUI thread's responsiveness: a 2 ms timer; a stall is the longest gap between its ticks
    // (or since the stage began) — a stage that blocks the thread for 300 ms shows 300.
    QElapsedTimer sinceTick;
    double stall = 0.0;
    QTimer probe;
    probe.setInterval(2);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        stall = std::max(stall, sinceTick.nsecsElapsed() / 1e6);
        sinceTick.restart();
    });
    probe.start();
    double cpu = cpuMs();
    timer.start();
    sinceTick.start();
    auto stage = [&](const char* what) {
        stall = std::max(stall, sinceTick.nsecsElapsed() / 1e6);
        rows.push_back({what, timer.nsecsElapsed() / 1e6, cpuMs() - cpu, stall});
        stall = 0.0;
        cpu = cpuMs();
        timer.restart();
        sinceTick.restart();
    };
    auto settle = [&] {  // until the charts show lines for the current settings, then the paint
        while (!view.charts()->isUpToDate())
            QApplication::processEvents(QEventLoop::WaitForMoreEvents);
        QApplication::processEvents();
    };
    auto compareAndWait = [&] {
        QEventLoop loop;  // the view loads on a worker thread and reports with compared()
        QObject::connect(&view, &wb::ui::CompareView::compared, &loop, &QEventLoop::quit);
        view.compare();  // load + analyse + tables + charts
        loop.exec();
    };
    auto request = wb::core::CompareRequest{};
    for (const auto& id : ids)
        request.runs.push_back(id.toStdString());
    auto engineOnly = wb::core::compareRuns(store.toStdString(), request);
    stage("compareRuns(path) alone (load + analyse)");
    if (engineOnly) {
        wb::core::ChartLinesRequest lines = view.charts()->currentRequest();
        const auto set = wb::core::computeChartSet(*engineOnly, lines);
        stage("computeChartSet alone (x, EMA, min/max decimation of 4 charts × N runs)");
    }
    compareAndWait();
    stage("CompareView::compare (worker: load + analyse + chart lines; GUI: tables, lines to charts)");
    settle();
    stage("first paint");
    compareAndWait();
    settle();
    stage("compare again (runs cached: only new steps read) + paint");
    view.findChild<QComboBox*>(QStringLiteral("compareXAxis"))->setCurrentIndex(2);
    settle();
    stage("switch x axis to effective tokens (lines off-thread + paint)");
    view.logScaleToggle()->setChecked(true);
    settle();
    stage("log scale on (lines off-thread + paint)");
    view.shadeWindowToggle()->setChecked(false);
    settle();
    stage("steady-window shading off (paint, no bands)");
    QTemporaryDir exportDir;
    const bool exported = view.exportReport(exportDir.path()).ok();
    stage("export report (4 PNG offscreen + 4 SVG + report.md)");

    std::printf("%d runs × %lld steps; %lld points drawn after decimation\n\n", runCount,
                static_cast<long long>(steps), static_cast<long long>(view.charts()->drawnPoints()));
    std::printf("| stage | wall ms | CPU ms | GUI longest stall ms |\n|---|---|---|---|\n");
    for (const auto& row : rows)
        std::printf("| %s | %.0f | %.0f | %.0f |\n", row.what, row.wallMs, row.cpuMs, row.stallMs);
    return engineOnly.ok() && exported ? 0 : 1;
}
