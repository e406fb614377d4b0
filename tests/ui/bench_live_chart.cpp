// Benchmark (not a test; not registered with ctest): the run view's live charts (RunChartsPanel)
// holding N points per series, while steps keep streaming in. Fills the charts to N steps (not
// timed), then for a few seconds appends a batch of steps every few milliseconds and measures
// redraws per second (the StepSeriesBuffer coalesces them), the chart paints, and the GUI event
// loop's latency: a 2 ms timer's tick gaps — the longest and the 99th percentile are how long a
// click would have waited. Also the process's resident memory (VmRSS, and its high-water mark
// VmHWM) once the charts hold N points, and the fill's CPU time (comparable under load, where wall
// time is not). Prints a table.
// Usage: QT_QPA_PLATFORM=offscreen bench_live_chart [points=1000000] [steps/s=10000] [seconds=5]
#include "ui/metric_chart_view.h"
#include "ui/run_charts_panel.h"
#include "ui/step_series_buffer.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace {

wb::ui::StepList makeSteps(int64_t first, int64_t count)
{
    wb::ui::StepList steps;
    steps.reserve(count);
    for (int64_t i = first; i < first + count; ++i) {
        wb::core::StepRecord s;
        s.step = i;
        s.stepMs = 100.0 + 5.0 * std::sin(static_cast<double>(i) * 0.37) + (i % 50'000 == 0 ? 400.0 : 0.0);
        // The GPU-like split of docs/benchmarks.md's "Latest round" (real row), so the stacked
        // split, MFU, grad-norm and LR series carry data too.
        s.dataMs = 3.0;
        s.visionMs = 17.5 + std::sin(static_cast<double>(i) * 0.21);
        s.projectorMs = 4.6;
        s.decoderMs = 51.2 + 2.0 * std::sin(static_cast<double>(i) * 0.05);
        s.backwardMs = 140.0;
        s.optimizerMs = 37.5;
        s.tflopsPerGpu = 321.9;
        s.mfu = 0.325 + 0.01 * std::sin(static_cast<double>(i) * 0.13);
        s.gradNorm = 1.0 + 0.5 / std::sqrt(static_cast<double>(i) + 1.0);
        s.lr = 3e-4 * std::min(1.0, static_cast<double>(i) / 1000.0);
        s.auxLoss = 0.01 + 0.001 * std::sin(static_cast<double>(i) * 0.07);
        s.memAllocGib = 20.0;
        s.memReservedGib = 24.0;
        s.memPeakGib = 22.0;
        s.tokensPerSPerGpu = 20'000.0 + 300.0 * std::sin(static_cast<double>(i) * 0.11);
        s.loss = 3.0 / std::sqrt(static_cast<double>(i) + 1.0);
        steps.append(s);
    }
    return steps;
}

// A line of /proc/self/status in MB ("VmRSS", "VmHWM"); -1 where it cannot be read.
double procStatusMb(const std::string& key)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind(key + ':', 0) == 0)
            return std::atof(line.c_str() + key.size() + 1) / 1024.0;  // the kernel writes kB
    return -1.0;
}

double processCpuMs()
{
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

class PaintCounter : public QObject {
public:
    int paints = 0;
    bool eventFilter(QObject*, QEvent* event) override
    {
        paints += event->type() == QEvent::Paint;
        return false;
    }
};

}  // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const int64_t points = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
    const int stepsPerSecond = argc > 2 ? std::atoi(argv[2]) : 10'000;
    const double seconds = argc > 3 ? std::atof(argv[3]) : 5.0;

    wb::ui::RunChartsPanel panel;
    panel.resize(1200, 800);
    panel.show();
    (void)QTest::qWaitForWindowExposed(&panel);
    const QString run = QStringLiteral("bench");
    panel.showRun(run, QStringLiteral("bench"));
    panel.setHistory(run, {});
    const double rssBeforeMb = procStatusMb("VmRSS");
    const double fillCpuStart = processCpuMs();
    QElapsedTimer fill;
    fill.start();
    for (int64_t first = 1; first <= points; first += 100'000)
        panel.appendSteps(run, makeSteps(first, std::min<int64_t>(100'000, points - first + 1)));
    while (panel.drawnPoints(wb::ui::RunChartsPanel::Chart::Loss) == 0 || panel.buffer()->rowCount() < points ||
           panel.redrawPending())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    QApplication::processEvents();
    const double fillMs = fill.nsecsElapsed() / 1e6;
    const double fillCpuMs = processCpuMs() - fillCpuStart;
    const double rssFilledMb = procStatusMb("VmRSS");
    const double hwmFilledMb = procStatusMb("VmHWM");
    // A full repaint of every chart (what a window resize or an expose costs), best of three.
    double grabMs = 1e9;
    for (int i = 0; i < 3; ++i) {
        QElapsedTimer grab;
        grab.start();
        (void)panel.grab();
        grabMs = std::min(grabMs, grab.nsecsElapsed() / 1e6);
    }

    int redraws = 0;
    QObject::connect(panel.buffer(), &wb::ui::StepSeriesBuffer::updated, [&] { ++redraws; });
    PaintCounter paints;
    panel.chartView(wb::ui::RunChartsPanel::Chart::Loss)->viewport()->installEventFilter(&paints);

    // The stream: a batch every 10 ms (a fast run's follow worker delivers about that often).
    const int batch = std::max(1, stepsPerSecond / 100);
    int64_t next = points + 1;
    QTimer producer;
    producer.setInterval(10);
    QObject::connect(&producer, &QTimer::timeout, [&] {
        panel.appendSteps(run, makeSteps(next, batch));
        next += batch;
    });
    std::vector<double> gaps;
    QElapsedTimer sinceTick;
    QTimer probe;
    probe.setInterval(2);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        gaps.push_back(sinceTick.nsecsElapsed() / 1e6);
        sinceTick.restart();
    });
    QElapsedTimer wall;
    wall.start();
    sinceTick.start();
    producer.start();
    probe.start();
    while (wall.elapsed() < seconds * 1000.0)
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
    producer.stop();
    probe.stop();
    const double elapsed = wall.nsecsElapsed() / 1e9;
    std::sort(gaps.begin(), gaps.end());
    auto pct = [&](double p) { return gaps.empty() ? 0.0 : gaps[static_cast<size_t>(p * (gaps.size() - 1))]; };

    std::printf("RunChartsPanel, %lld points per series (%d series), streaming %d steps/s for %.1f s\n\n",
                static_cast<long long>(points), panel.buffer()->seriesCount(), stepsPerSecond, elapsed);
    std::printf("| what | value |\n|---|---|\n");
    std::printf("| fill to %lld points (not streaming): wall / CPU | %.0f / %.0f ms |\n", static_cast<long long>(points),
                fillMs, fillCpuMs);
    std::printf("| resident memory: empty panel / filled (VmRSS) / high-water mark (VmHWM) | %.0f / %.0f / %.0f MB |\n",
                rssBeforeMb, rssFilledMb, hwmFilledMb);
    std::printf("| repaint of the whole panel (grab, best of 3) | %.1f ms |\n", grabMs);
    for (const char* name : {"stepTimeChart", "stepSplitChart", "throughputChart", "memoryChart", "lossChart",
                             "gradNormChart"}) {
        auto* view = panel.findChild<QWidget*>(QString::fromLatin1(name));
        if (!view)
            continue;
        double best = 1e9;
        for (int i = 0; i < 3; ++i) {
            QElapsedTimer grab;
            grab.start();
            (void)view->grab();
            best = std::min(best, grab.nsecsElapsed() / 1e6);
        }
        std::printf("| repaint of %s (best of 3) | %.1f ms |\n", name, best);
    }
    std::printf("| steps appended while streaming | %lld |\n", static_cast<long long>(next - points - 1));
    std::printf("| redraws (buffer updated()) per second | %.1f |\n", redraws / elapsed);
    std::printf("| loss chart paints per second | %.1f |\n", paints.paints / elapsed);
    std::printf("| event-loop latency: median / p99 / max (2 ms timer gaps) | %.1f / %.1f / %.1f ms |\n", pct(0.5),
                pct(0.99), gaps.empty() ? 0.0 : gaps.back());
    std::printf("| points drawn, loss chart (after decimation) | %d |\n",
                panel.drawnPoints(wb::ui::RunChartsPanel::Chart::Loss));
    return 0;
}
