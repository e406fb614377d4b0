// Tool (not a test; not registered with ctest): renders the run view's charts (RunChartsPanel) for
// a metrics.jsonl stream and saves a PNG — the user guide's chart screenshot of a GPU-like stream
// (tests/ui/data/h200-latest-round.metrics.jsonl) is made with it. The whole stream is fed as the
// run's history (steps, and GPU samples when it has any), as when a finished run is selected in
// the window.
// Usage: QT_QPA_PLATFORM=offscreen render_run_charts METRICS.jsonl OUT.png [width=1000] [height=820] [lang]
// (lang, e.g. zh_CN: the UI translation from translations/ beside this executable, as the GUI loads it)
#include "core/metrics_schema.h"
#include "core/run_target.h"
#include "ui/run_charts_panel.h"

#include <QApplication>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QTest>
#include <QTranslator>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: render_run_charts METRICS.jsonl OUT.png [width] [height] [lang]\n");
        return 2;
    }
    if (argc > 5) {
        auto* translator = new QTranslator(&app);
        const QLocale locale(QString::fromLocal8Bit(argv[5]));
        if (!translator->load(locale, QStringLiteral("moe_workbench"), QStringLiteral("_"),
                              QCoreApplication::applicationDirPath() + QStringLiteral("/translations"))) {
            std::fprintf(stderr, "no moe-workbench translation for %s beside this executable\n", argv[5]);
            return 2;
        }
        QLocale::setDefault(locale);
        QCoreApplication::installTranslator(translator);
    }
    QFile file(QString::fromLocal8Bit(argv[1]));
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "cannot read %s: %s\n", argv[1], qPrintable(file.errorString()));
        return 2;
    }
    const QByteArray bytes = file.readAll();
    wb::core::MetricsLineReader reader;
    const auto chunk = reader.feed(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    if (chunk.malformedLines > 0)
        std::fprintf(stderr, "%s: %lld malformed lines skipped\n", argv[1], static_cast<long long>(chunk.malformedLines));

    QString title = QStringLiteral("run");
    wb::core::RunState state = wb::core::RunState::Running;
    QString stateMessage;  // the end record's own word (oom, stopped), beside the state it ends in
    wb::ui::StepList steps;
    wb::ui::GpuList gpus;  // NVML samples (moe-train on GPUs): the fourth row of charts
    for (const auto& record : chunk.records) {
        if (const auto* meta = std::get_if<wb::core::MetaRecord>(&record)) {
            title = QString::fromStdString(meta->name);
        } else if (const auto* step = std::get_if<wb::core::StepRecord>(&record)) {
            steps.append(*step);
        } else if (const auto* end = std::get_if<wb::core::EndRecord>(&record)) {
            state = wb::core::finalStateOf(end->status);
            stateMessage = QString::fromStdString(end->status);
        } else if (const auto* gpu = std::get_if<wb::core::GpuRecord>(&record)) {
            gpus.append(*gpu);
        }
    }
    if (steps.isEmpty()) {
        std::fprintf(stderr, "%s has no step lines: nothing to draw\n", argv[1]);
        return 2;
    }

    wb::ui::RunChartsPanel panel;
    panel.resize(argc > 3 ? std::atoi(argv[3]) : 1000, argc > 4 ? std::atoi(argv[4]) : 820);
    panel.show();
    (void)QTest::qWaitForWindowExposed(&panel);
    const QString run = QFileInfo(file).completeBaseName();
    panel.showRun(run, title);
    panel.setRunState(run, state, stateMessage);
    panel.setPlannedSteps(steps.back().step);
    panel.setHistory(run, steps);
    if (!gpus.isEmpty())
        panel.setGpuSamples(run, gpus, /*history=*/true);
    // The buffer's coalesced redraw comes a timer tick later, then one chart per event-loop turn.
    for (int waited = 0; (panel.drawnPoints(wb::ui::RunChartsPanel::Chart::Loss) == 0 || panel.redrawPending()) &&
                         waited < 5000;
         waited += 20)
        QTest::qWait(20);
    QApplication::processEvents();
    if (!panel.grab().save(QString::fromLocal8Bit(argv[2]))) {
        std::fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }
    std::printf("%s: %lld steps drawn into %s\n", argv[1], static_cast<long long>(steps.size()), argv[2]);
    return 0;
}
