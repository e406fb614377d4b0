#include "ui/run_charts_panel.h"

#include "ui/metric_chart_view.h"
#include "ui/run_status_style.h"
#include "ui/step_series_buffer.h"

#include <QChart>
#include <QGridLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QLocale>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

namespace wb::ui {
namespace {

// Tableau-10: distinguishable, colour-blind-friendlier than Qt's default theme order.
const QColor kBlue(0x1f, 0x77, 0xb4);
const QColor kOrange(0xff, 0x7f, 0x0e);
const QColor kGreen(0x2c, 0xa0, 0x2c);
const QColor kRed(0xd6, 0x27, 0x28);
const QColor kPurple(0x94, 0x67, 0xbd);
const QColor kBrown(0x8c, 0x56, 0x4b);
const QColor kGray(0x7f, 0x7f, 0x7f);
const QColor kCyan(0x17, 0xbe, 0xcf);

QString ms(double value)
{
    return QLocale().toString(value, 'f', 1);
}

}  // namespace

QColor RunChartsPanel::phaseColor(Phase phase)
{
    // Pairs of the Tableau-20 palette: vision and projector greens, decoder forward and backward
    // blues; data wait keeps the step-time chart's gray, the unattributed rest a lighter one.
    switch (phase) {
    case Phase::Data: return kGray;
    case Phase::Vision: return kGreen;
    case Phase::Projector: return QColor(0x98, 0xdf, 0x8a);
    case Phase::Decoder: return kBlue;
    case Phase::Backward: return QColor(0xae, 0xc7, 0xe8);
    case Phase::Optimizer: return kPurple;
    case Phase::Other: return QColor(0xc7, 0xc7, 0xc7);
    }
    return kGray;
}

QString RunChartsPanel::phaseName(Phase phase)
{
    switch (phase) {
    case Phase::Data: return tr("Data wait");
    case Phase::Vision: return tr("Vision");
    case Phase::Projector: return tr("Projector");
    case Phase::Decoder: return tr("Decoder fwd");
    case Phase::Backward: return tr("Backward");
    case Phase::Optimizer: return tr("Optimizer");
    case Phase::Other: return tr("Other");
    }
    return {};
}

RunChartsPanel::RunChartsPanel(QWidget* parent) : QWidget(parent)
{
    m_buffer = new StepSeriesBuffer(SeriesCount, this);
    connect(m_buffer, &StepSeriesBuffer::updated, this, &RunChartsPanel::redraw);
    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(1);
    connect(&m_redrawTimer, &QTimer::timeout, this, &RunChartsPanel::redrawNextChart);
    createCharts();

    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("runTitle"));
    m_title->setTextFormat(Qt::RichText);
    QFont titleFont = m_title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.2);
    m_title->setFont(titleFont);
    m_latest = new QLabel(this);
    m_latest->setObjectName(QStringLiteral("latestValues"));
    m_latest->setTextFormat(Qt::RichText);
    m_latest->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // Three rows of two: what the step costs (time, where it goes), what it delivers (throughput,
    // memory), how training goes (loss, gradient norm). Two columns keep each chart ≥ 380 px wide
    // beside the run list at 1400 × 900; three columns would squeeze them to ~260 px.
    auto* grid = new QGridLayout;
    grid->setSpacing(6);
    grid->addWidget(m_stepTime, 0, 0);
    grid->addWidget(m_split, 0, 1);
    grid->addWidget(m_throughput, 1, 0);
    grid->addWidget(m_memory, 1, 1);
    grid->addWidget(m_loss, 2, 0);
    grid->addWidget(m_gradNorm, 2, 1);
    // GPU system metrics (NVML samples of a CUDA run): a fourth row across both columns, only for
    // runs that have them — a CPU run keeps the three rows.
    m_gpu = new MetricChartView(tr("GPU system"), tr("% · °C"),
                                {{tr("Utilization (mean %)"), kBlue}, {tr("Temperature (hottest °C)"), kOrange}}, true, this);
    m_gpu->setRightAxis(tr("W · MHz"), {{tr("Power (mean W)"), kRed, Qt::DashLine}, {tr("SM clock (slowest MHz)"), kGray, Qt::DotLine}},
                        true);
    m_gpu->setObjectName(QStringLiteral("gpuChart"));
    m_gpu->setVisible(false);
    grid->addWidget(m_gpu, 3, 0, 1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_title);
    layout->addWidget(m_latest);
    layout->addLayout(grid, 1);
    clearRun();
}

void RunChartsPanel::createCharts()
{
    m_stepTime = new MetricChartView(tr("Step time"), tr("Step time (ms)"),
                                     {{tr("Total"), kBlue}, {tr("Data wait"), kGray}}, true, this);
    m_split = new MetricChartView(tr("Step time split"), tr("Time (ms)"), {}, true, this);
    QList<MetricSeriesSpec> bands;
    for (int p = 0; p < kPhaseCount; ++p)
        bands.append({phaseName(static_cast<Phase>(p)), phaseColor(static_cast<Phase>(p))});
    m_split->setStackSpecs(bands);
    // Seven entries do not fit on one line under a chart half the panel wide (QLegend elides,
    // never wraps), and beside the plot they took a third of its width (~190 px left at
    // 1400 × 900): below it in rows (two at that size), top band first as the bands stack.
    m_split->setWrappedLegend(true);
    // Filled bands need no antialiasing (their edges are pixel columns anyway), and without it
    // the raster engine fills them about a third faster (bench_live_chart).
    m_split->setRenderHint(QPainter::Antialiasing, false);
    // MFU is TFLOP/s/GPU over the device's peak: the same curve on another scale. One right axis
    // (MFU, the number the guide's targets are in) plus TFLOP/s in the tooltip and the header says
    // everything without a seventh chart of the same shape.
    m_throughput = new MetricChartView(tr("Throughput"), tr("Tokens/s/GPU"),
                                       {{tr("Effective tokens/s/GPU"), kPurple}}, true, this);
    // Dashed: tokens/s and MFU often run parallel (both follow the step time) and would merge.
    m_throughput->setRightAxis(tr("MFU (%)"), {{tr("MFU"), kRed, Qt::DashLine}}, true);
    m_memory = new MetricChartView(tr("Memory per GPU"), tr("Memory (GiB)"),
                                   {{tr("Allocated"), kGreen}, {tr("Peak"), kRed}, {tr("Reserved"), kGray, Qt::DashLine}},
                                   true, this);
    m_loss = new MetricChartView(tr("Loss"), tr("Loss"), {{tr("Training loss"), kOrange}}, false, this);
    // The aux loss is noisy and on its own scale: a lighter line (Tableau-20's light brown), so the
    // training loss stays the one the eye follows. Opaque on purpose: a translucent pen makes the
    // raster engine stroke the whole path as one outline (to blend overlaps once), and a decimated
    // zigzag took 60 ms per paint that way instead of ~1 ms (bench_live_chart).
    m_loss->setRightAxis(tr("Aux loss"), {{tr("Router aux loss"), QColor(0xc4, 0x9c, 0x94)}}, false);
    m_gradNorm = new MetricChartView(tr("Gradient norm and learning rate"), tr("Gradient norm"),
                                     {{tr("Gradient norm"), kBlue}}, true, this);
    m_gradNorm->setRightAxis(tr("Learning rate"), {{tr("Learning rate"), kCyan, Qt::DashLine}}, true);
    m_stepTime->setObjectName(QStringLiteral("stepTimeChart"));
    m_split->setObjectName(QStringLiteral("stepSplitChart"));
    m_throughput->setObjectName(QStringLiteral("throughputChart"));
    m_memory->setObjectName(QStringLiteral("memoryChart"));
    m_loss->setObjectName(QStringLiteral("lossChart"));
    m_gradNorm->setObjectName(QStringLiteral("gradNormChart"));
    for (int c = 0; c < kChartCount; ++c) {
        const auto chart = static_cast<Chart>(c);
        chartView(chart)->setToolTipProvider([this, chart](double step) { return toolTipAt(chart, step); });
    }
}

MetricChartView* RunChartsPanel::chartView(Chart chart) const
{
    switch (chart) {
    case Chart::StepTime: return m_stepTime;
    case Chart::StepSplit: return m_split;
    case Chart::Throughput: return m_throughput;
    case Chart::Memory: return m_memory;
    case Chart::Loss: return m_loss;
    case Chart::GradNorm: return m_gradNorm;
    }
    return nullptr;
}

int RunChartsPanel::drawnPoints(Chart chart) const
{
    const MetricChartView* view = chartView(chart);
    return static_cast<int>(view->seriesCount() > 0 ? view->series(0)->count() : view->stackUpper(0)->count());
}

void RunChartsPanel::setGpuSamples(const QString& runId, const GpuList& samples, bool history)
{
    if (runId != m_runId)
        return;
    if (history)
        m_gpuSamples = samples;
    else
        m_gpuSamples += samples;
    // One point per sample at the step it followed; over the node's GPUs: mean utilization and
    // power, the hottest temperature, the slowest SM clock (a throttling GPU shows).
    MetricChartView::SeriesPoints points;
    points.left = {{}, {}};
    points.right = {{}, {}};
    for (const core::GpuRecord& r : m_gpuSamples) {
        if (!r.step || r.gpus.empty())
            continue;
        const core::GpuSummary g = core::summarizeGpus(r);
        const double x = static_cast<double>(*r.step);
        for (auto [value, line] : {std::pair{g.utilPct, &points.left[0]}, {g.tempC, &points.left[1]},
                                   {g.powerW, &points.right[0]}, {g.smClockMhz, &points.right[1]}})
            if (std::isfinite(value))
                line->append({x, value});
    }
    const bool any = !points.left[0].isEmpty() || !points.left[1].isEmpty() || !points.right[0].isEmpty() ||
                     !points.right[1].isEmpty();
    m_gpu->setVisible(any);
    if (any)
        m_gpu->setAllPoints(points);
}

void RunChartsPanel::clearRun()
{
    m_runId.clear();
    m_runTitle.clear();
    m_state.reset();
    m_stateMessage.clear();
    m_reconnectAttempt = 0;
    m_reconnectReason.clear();
    m_plannedSteps = 0;
    m_waitingForHistory = false;
    m_lastStep = -1;
    m_latestStep.reset();
    m_splitSeen = m_mfuSeen = m_auxSeen = false;
    m_buffer->clear();
    for (int c = 0; c < kChartCount; ++c) {
        chartView(static_cast<Chart>(c))->setXExtent(0.0);
        chartView(static_cast<Chart>(c))->clearPoints();
    }
    m_gpuSamples.clear();
    m_gpu->clearPoints();
    m_gpu->setVisible(false);
    updateNotices();
    updateHeader();
}

void RunChartsPanel::showRun(const QString& runId, const QString& title)
{
    if (runId == m_runId && !title.isEmpty()) {
        m_runTitle = title;
        updateHeader();
        return;
    }
    clearRun();
    m_runId = runId;
    m_runTitle = title;
    m_waitingForHistory = true;
    updateHeader();
}

void RunChartsPanel::setHistory(const QString& runId, const StepList& steps)
{
    if (runId != m_runId)
        return;  // the user has moved on to another run
    m_waitingForHistory = false;
    m_buffer->clear();
    m_lastStep = -1;
    m_splitSeen = m_mfuSeen = m_auxSeen = false;
    addSteps(steps);
}

void RunChartsPanel::appendSteps(const QString& runId, const StepList& steps)
{
    if (runId != m_runId || m_waitingForHistory)
        return;
    addSteps(steps);
}

void RunChartsPanel::setRunState(const QString& runId, core::RunState state, const QString& message)
{
    if (runId != m_runId)
        return;
    m_state = state;
    m_stateMessage = message;
    updateHeader();
}

void RunChartsPanel::setReconnecting(const QString& runId, int attempt, const QString& reason)
{
    if (runId != m_runId || (attempt == m_reconnectAttempt && reason == m_reconnectReason))
        return;
    m_reconnectAttempt = attempt;
    m_reconnectReason = attempt > 0 ? reason : QString();
    updateHeader();
}

QString RunChartsPanel::headerText() const
{
    QTextDocument html;
    html.setHtml(m_title->text());
    return html.toPlainText().simplified();
}

QString RunChartsPanel::latestText() const
{
    QTextDocument html;
    html.setHtml(m_latest->text());
    return html.toPlainText();
}

void RunChartsPanel::setPlannedSteps(int64_t steps)
{
    if (steps == m_plannedSteps)
        return;
    m_plannedSteps = steps;
    for (int c = 0; c < kChartCount; ++c) {
        chartView(static_cast<Chart>(c))->setXExtent(static_cast<double>(steps));
        chartView(static_cast<Chart>(c))->rescale();
    }
    updateHeader();
}

void RunChartsPanel::addSteps(const StepList& steps)
{
    // Rows for the buffer: the step once, then one value per series (row-major), all in one lock.
    std::vector<double> xs;
    std::vector<double> values;
    xs.reserve(static_cast<size_t>(steps.size()));
    values.reserve(static_cast<size_t>(steps.size()) * SeriesCount);
    double row[SeriesCount];
    for (const auto& s : steps) {
        if (s.step <= m_lastStep)
            continue;  // never draw a step twice (history and live stream can overlap)
        m_lastStep = s.step;
        row[StepMs] = s.stepMs;
        row[DataMs] = s.dataMs;
        // The split's bands, stacked: each upper bound is the sum of the parts below it. Other is
        // what the parts leave of the step, never negative: a multi-rank stream reports each part
        // as its max over ranks, and maxima from different ranks can add up to more than the step.
        double upTo = s.dataMs;
        const double parts[] = {s.visionMs, s.projectorMs, s.decoderMs, s.backwardMs, s.optimizerMs};
        for (int p = 0; p < 5; ++p) {
            upTo += parts[p];
            row[UpToVision + p] = upTo;
        }
        row[UpToOther] = std::max(upTo, s.stepMs);
        m_splitSeen = m_splitSeen || s.dataMs > 0.0 || upTo > s.dataMs;
        row[MemAlloc] = s.memAllocGib;
        row[MemReserved] = s.memReservedGib;
        row[MemPeak] = s.memPeakGib;
        row[TokensPerS] = s.tokensPerSPerGpu;
        row[MfuPercent] = s.mfu * 100.0;
        row[TflopsPerGpu] = s.tflopsPerGpu;
        m_mfuSeen = m_mfuSeen || s.mfu > 0.0;
        row[Loss] = s.loss;
        row[AuxLoss] = s.auxLoss;
        m_auxSeen = m_auxSeen || s.auxLoss != 0.0;
        row[GradNorm] = s.gradNorm;
        row[Lr] = s.lr;
        xs.push_back(static_cast<double>(s.step));
        values.insert(values.end(), std::begin(row), std::end(row));
        m_latestStep = s;
    }
    m_buffer->appendRows(xs, values);
    updateNotices();
    updateHeader();
}

void RunChartsPanel::updateNotices()
{
    const bool anySteps = m_latestStep.has_value();
    // Before the first step there is nothing to explain; after it, a missing part is the stream's.
    m_split->setStackShown(m_splitSeen || !anySteps);
    m_split->setNotice(anySteps && !m_splitSeen
                           ? tr("No time split in this run's stream\n(every part is 0: an older moe-train or "
                                "another trainer)")
                           : QString());
    m_throughput->setRightAxisShown(m_mfuSeen);
    // Above the plot, not on it: the note must not hide the points it explains (issue 18 item 7).
    m_throughput->setHeaderNote(anySteps && !m_mfuSeen ? tr("MFU n/a (no peak FLOP/s known for this device)") : QString());
    m_loss->setRightAxisShown(m_auxSeen);
}

void RunChartsPanel::redraw()
{
    // One chart per turn of the event loop (a 1 ms timer apart, so that input, other timers and
    // the repaint of the chart just redrawn get their turn in between): the six charts' series
    // updates and paints at 100k steps take ≈ 20 ms together, which would otherwise be one block
    // of the GUI thread on every redraw (bench_live_chart: event-loop latency p99).
    m_pendingCharts = (1u << kChartCount) - 1;
    if (!m_redrawTimer.isActive())
        m_redrawTimer.start();
}

void RunChartsPanel::redrawNextChart()
{
    for (int c = 0; c < kChartCount; ++c) {
        if (m_pendingCharts & (1u << c)) {
            m_pendingCharts &= ~(1u << c);
            redrawChart(static_cast<Chart>(c));
            break;
        }
    }
    if (m_pendingCharts != 0)
        m_redrawTimer.start();
}

void RunChartsPanel::redrawChart(Chart chart)
{
    MetricChartView* view = chartView(chart);
    const int columns = view->plotColumns();
    auto line = [&](Series series) { return m_buffer->decimated(series, columns); };
    auto rightLine = [&](Series series) { return view->rightAxisShown() ? line(series) : QList<QPointF>(); };
    MetricChartView::SeriesPoints points;
    switch (chart) {
    case Chart::StepTime:
        points.left = {line(StepMs), line(DataMs)};
        break;
    case Chart::StepSplit: {
        // Each band's upper bound is decimated on its own (per column first, min, max, last), so
        // within a column the bounds may come from different steps: a band can overlap the one
        // above by up to that column's spread, never hide a spike. Columns of 2 px: seven filled
        // bands of up to 4 points per pixel were the panel's costliest geometry and paint, and a
        // fill shows nothing finer. Runs that fit are drawn exactly.
        const Series uppers[kPhaseCount] = {DataMs,       UpToVision,    UpToProjector, UpToDecoder,
                                            UpToBackward, UpToOptimizer, UpToOther};
        if (view->stackShown())
            for (Series upper : uppers)
                points.stack.append(m_buffer->decimated(upper, std::max(1, columns / 2)));
        break;
    }
    case Chart::Throughput:
        points.left = {line(TokensPerS)};
        points.right = {rightLine(MfuPercent)};
        break;
    case Chart::Memory:
        points.left = {line(MemAlloc), line(MemPeak), line(MemReserved)};
        break;
    case Chart::Loss:
        points.left = {line(Loss)};
        points.right = {rightLine(AuxLoss)};
        break;
    case Chart::GradNorm:
        points.left = {line(GradNorm)};
        points.right = {rightLine(Lr)};
        break;
    }
    view->setAllPoints(points);
}

double RunChartsPanel::valueAt(Series series, double step) const
{
    const auto point = m_buffer->nearest(series, step);
    return point ? point->y() : 0.0;
}

QString RunChartsPanel::toolTipAt(Chart chart, double step) const
{
    const auto nearest = m_buffer->nearest(StepMs, step);
    if (!nearest)
        return {};
    const double x = nearest->x();  // every series has a point at every step
    const QLocale locale;
    const QString head = tr("Step %1").arg(static_cast<qint64>(x));
    auto value = [&](Series series, int decimals) { return locale.toString(valueAt(series, x), 'f', decimals); };
    switch (chart) {
    case Chart::StepTime:
        return tr("%1\nStep time: %2 ms\nData wait: %3 ms").arg(head, value(StepMs, 1), value(DataMs, 1));
    case Chart::StepSplit:
        return splitToolTip(x);
    case Chart::Throughput: {
        const QString mfu = m_mfuSeen ? value(MfuPercent, 1) + QStringLiteral(" %")
                                      : tr("n/a (no peak FLOP/s known for this device)");
        return tr("%1\nEffective tokens/s/GPU: %2\nTFLOP/s/GPU: %3\nMFU: %4")
            .arg(head, value(TokensPerS, 0), locale.toString(valueAt(TflopsPerGpu, x), 'g', 4), mfu);
    }
    case Chart::Memory:
        return tr("%1\nAllocated: %2 GiB\nPeak: %3 GiB\nReserved: %4 GiB")
            .arg(head, value(MemAlloc, 3), value(MemPeak, 3), value(MemReserved, 3));
    case Chart::Loss:
        return tr("%1\nLoss: %2\nRouter aux loss: %3").arg(head, value(Loss, 4), value(AuxLoss, 5));
    case Chart::GradNorm:
        return tr("%1\nGradient norm: %2\nLearning rate: %3")
            .arg(head, value(GradNorm, 4), locale.toString(valueAt(Lr, x), 'g', 4));
    }
    return {};
}

QString RunChartsPanel::splitToolTip(double x) const
{
    if (!m_splitSeen)
        return tr("Step %1\nNo time split in this run's stream").arg(static_cast<qint64>(x));
    const Series uppers[kPhaseCount] = {DataMs, UpToVision, UpToProjector, UpToDecoder,
                                        UpToBackward, UpToOptimizer, UpToOther};
    QStringList lines{tr("Step %1").arg(static_cast<qint64>(x))};
    double below = 0.0;
    // Top band first, as the chart stacks them.
    QStringList bands;
    for (int p = 0; p < kPhaseCount; ++p) {
        const double upper = valueAt(uppers[p], x);
        bands.prepend(tr("%1: %2 ms").arg(phaseName(static_cast<Phase>(p)), ms(upper - below)));
        below = upper;
    }
    lines += bands;
    const double stepMs = valueAt(StepMs, x);
    const double parts = valueAt(UpToOptimizer, x);
    lines.append(tr("Step time: %1 ms").arg(ms(stepMs)));
    if (parts > stepMs)
        lines.append(tr("The parts add up to %1 ms, more than the step: each is the max over ranks,\n"
                        "not all from the same rank, so Other is clipped at 0.")
                         .arg(ms(parts)));
    return lines.join(QLatin1Char('\n'));
}

void RunChartsPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    redraw();  // the decimation depends on the plot width
}

void RunChartsPanel::updateHeader()
{
    if (m_runId.isEmpty()) {
        m_title->setText(tr("<b>No run selected</b>"));
        m_latest->setText(tr("Select a run on the left, or start the sample run (Run ▸ Start sample run).").toHtmlEscaped());
        return;
    }
    // While the target reconnects the run goes on on the host: say so rather than "running"
    // (stale) or "failed" (wrong), as the run list does.
    const bool reconnecting = m_reconnectAttempt > 0;
    const QString word = m_state ? stateWord(*m_state) : QString();
    const QString state = reconnecting    ? tr("reconnecting (attempt %1)").arg(m_reconnectAttempt)
                          : word.isEmpty() ? tr("waiting for status")
                                           : statusLabel(word);
    const QString message =
        reconnecting ? tr("connection lost (%1); the run keeps going on the host").arg(m_reconnectReason)
                     : statusDetail(word, m_stateMessage);  // not "finished  finished 60 steps"
    QString title = QStringLiteral("<b>%1</b> &nbsp;<span style='color:gray'>%2</span> &nbsp;"
                                   "<span style='color:%3'>● %4</span>")
                        .arg(m_runTitle.toHtmlEscaped(), m_runId.toHtmlEscaped(),
                             statusColor(reconnecting ? QStringLiteral("reconnecting") : word).name(),
                             state.toHtmlEscaped());
    if (!message.isEmpty())
        title += QStringLiteral(" &nbsp;<span style='color:gray'>%1</span>").arg(message.toHtmlEscaped());
    m_title->setText(title);

    if (!m_latestStep) {
        m_latest->setText((m_waitingForHistory ? tr("Loading steps…") : tr("No steps yet.")).toHtmlEscaped());
        return;
    }
    const auto& s = *m_latestStep;
    const QLocale locale;
    const QString progress = m_plannedSteps > 0
        ? tr("Step %1 / %2").arg(s.step).arg(m_plannedSteps)
        : tr("Step %1").arg(s.step);
    // MFU needs the device's peak rate; on a CPU there is none and moe-train reports 0.
    const QString mfu = s.mfu > 0.0 ? tr("%1 % (%2 TFLOP/s/GPU)")
                                          .arg(locale.toString(s.mfu * 100.0, 'f', 1),
                                               locale.toString(s.tflopsPerGpu, 'f', 1))
                                    : tr("n/a");
    QString text = tr("%1   ·   step time %2 ms   ·   %3 effective tokens/s/GPU   ·   loss %4   ·   "
                      "peak memory %5 GiB   ·   MFU %6")
                       .arg(progress, ms(s.stepMs), locale.toString(s.tokensPerSPerGpu, 'f', 0),
                            locale.toString(s.loss, 'f', 4), locale.toString(s.memPeakGib, 'f', 3), mfu)
                       .toHtmlEscaped();
    if (m_splitSeen) {
        // The latest split on a line of its own, each part with its band's colour.
        const double parts[] = {s.dataMs, s.visionMs, s.projectorMs, s.decoderMs, s.backwardMs, s.optimizerMs};
        const QString names[] = {tr("data"), tr("vision"), tr("proj"), tr("decoder"), tr("backward"), tr("optim")};
        QStringList items;
        for (int p = 0; p < 6; ++p)
            items.append(QStringLiteral("<span style='color:%1'>■</span> %2 %3")
                             .arg(phaseColor(static_cast<Phase>(p)).name(), names[p].toHtmlEscaped(), ms(parts[p])));
        text += QStringLiteral("<br>") + tr("time split: %1 ms").arg(items.join(QStringLiteral(" · ")));
    }
    m_latest->setText(text);
}

}  // namespace wb::ui
