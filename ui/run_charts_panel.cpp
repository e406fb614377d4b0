#include "ui/run_charts_panel.h"

#include "ui/metric_chart_view.h"
#include "ui/run_status_style.h"
#include "ui/step_series_buffer.h"

#include <QGridLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QTextDocument>
#include <QVBoxLayout>

namespace wb::ui {
namespace {

// Tableau-10: distinguishable, colour-blind-friendlier than Qt's default theme order.
const QColor kBlue(0x1f, 0x77, 0xb4);
const QColor kOrange(0xff, 0x7f, 0x0e);
const QColor kGreen(0x2c, 0xa0, 0x2c);
const QColor kRed(0xd6, 0x27, 0x28);
const QColor kPurple(0x94, 0x67, 0xbd);
const QColor kGray(0x7f, 0x7f, 0x7f);

}  // namespace

RunChartsPanel::RunChartsPanel(QWidget* parent) : QWidget(parent)
{
    m_buffer = new StepSeriesBuffer(SeriesCount, this);
    connect(m_buffer, &StepSeriesBuffer::updated, this, &RunChartsPanel::redraw);

    m_stepTime = new MetricChartView(tr("Step time"), tr("Step time (ms)"),
                                     {{tr("Total"), kBlue}, {tr("Data wait"), kGray}}, true, this);
    m_memory = new MetricChartView(tr("Memory per GPU"), tr("Memory (GiB)"),
                                   {{tr("Allocated"), kGreen}, {tr("Peak"), kRed}, {tr("Reserved"), kGray, Qt::DashLine}},
                                   true, this);
    m_throughput = new MetricChartView(tr("Throughput"), tr("Effective tokens/s/GPU"),
                                       {{tr("Effective tokens/s/GPU"), kPurple}}, true, this);
    m_loss = new MetricChartView(tr("Loss"), tr("Loss"), {{tr("Training loss"), kOrange}}, false, this);
    m_stepTime->setObjectName(QStringLiteral("stepTimeChart"));
    m_memory->setObjectName(QStringLiteral("memoryChart"));
    m_throughput->setObjectName(QStringLiteral("throughputChart"));
    m_loss->setObjectName(QStringLiteral("lossChart"));

    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("runTitle"));
    m_title->setTextFormat(Qt::RichText);
    QFont titleFont = m_title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.2);
    m_title->setFont(titleFont);
    m_latest = new QLabel(this);
    m_latest->setObjectName(QStringLiteral("latestValues"));
    m_latest->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* grid = new QGridLayout;
    grid->setSpacing(6);
    grid->addWidget(m_stepTime, 0, 0);
    grid->addWidget(m_memory, 0, 1);
    grid->addWidget(m_throughput, 1, 0);
    grid->addWidget(m_loss, 1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_title);
    layout->addWidget(m_latest);
    layout->addLayout(grid, 1);
    clearRun();
}

MetricChartView* RunChartsPanel::chartView(Chart chart) const
{
    switch (chart) {
    case Chart::StepTime: return m_stepTime;
    case Chart::Memory: return m_memory;
    case Chart::Throughput: return m_throughput;
    case Chart::Loss: return m_loss;
    }
    return nullptr;
}

int RunChartsPanel::drawnPoints(Chart chart) const
{
    return static_cast<int>(chartView(chart)->series(0)->count());
}

void RunChartsPanel::clearRun()
{
    m_runId.clear();
    m_runTitle.clear();
    m_state.clear();
    m_stateMessage.clear();
    m_reconnectAttempt = 0;
    m_reconnectReason.clear();
    m_plannedSteps = 0;
    m_waitingForHistory = false;
    m_lastStep = -1;
    m_latestStep.reset();
    m_buffer->clear();
    for (auto* view : {m_stepTime, m_memory, m_throughput, m_loss}) {
        view->setXExtent(0.0);
        view->clearPoints();
    }
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
    addSteps(steps);
}

void RunChartsPanel::appendSteps(const QString& runId, const StepList& steps)
{
    if (runId != m_runId || m_waitingForHistory)
        return;
    addSteps(steps);
}

void RunChartsPanel::setRunState(const QString& runId, const QString& state, const QString& message)
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

void RunChartsPanel::setPlannedSteps(int64_t steps)
{
    if (steps == m_plannedSteps)
        return;
    m_plannedSteps = steps;
    for (auto* view : {m_stepTime, m_memory, m_throughput, m_loss}) {
        view->setXExtent(static_cast<double>(steps));
        view->rescale();
    }
    updateHeader();
}

void RunChartsPanel::addSteps(const StepList& steps)
{
    QList<QPointF> series[SeriesCount];
    for (const auto& s : steps) {
        if (s.step <= m_lastStep)
            continue;  // never draw a step twice (history and live stream can overlap)
        m_lastStep = s.step;
        const double x = static_cast<double>(s.step);
        series[StepMs].append({x, s.stepMs});
        series[DataMs].append({x, s.dataMs});
        series[MemAlloc].append({x, s.memAllocGib});
        series[MemReserved].append({x, s.memReservedGib});
        series[MemPeak].append({x, s.memPeakGib});
        series[TokensPerS].append({x, s.tokensPerSPerGpu});
        series[Loss].append({x, s.loss});
        m_latestStep = s;
    }
    for (int i = 0; i < SeriesCount; ++i)
        m_buffer->append(i, series[i]);
    updateHeader();
}

void RunChartsPanel::redraw()
{
    struct Binding { MetricChartView* view; int chartSeries; Series bufferSeries; };
    const Binding bindings[] = {
        {m_stepTime, 0, StepMs},     {m_stepTime, 1, DataMs},   {m_memory, 0, MemAlloc},
        {m_memory, 1, MemPeak},      {m_memory, 2, MemReserved},    {m_throughput, 0, TokensPerS},
        {m_loss, 0, Loss},
    };
    for (const auto& b : bindings) {
        b.view->setPoints(b.chartSeries, m_buffer->decimated(b.bufferSeries, b.view->plotColumns()));
    }
    for (auto* view : {m_stepTime, m_memory, m_throughput, m_loss})
        view->rescale();
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
        m_latest->setText(tr("Select a run on the left, or start the sample run (Run ▸ Start sample run)."));
        return;
    }
    // While the target reconnects the run goes on on the host: say so rather than "running"
    // (stale) or "failed" (wrong), as the run list does.
    const bool reconnecting = m_reconnectAttempt > 0;
    const QString state = reconnecting      ? tr("reconnecting (attempt %1)").arg(m_reconnectAttempt)
                          : m_state.isEmpty() ? tr("waiting for status")
                                              : statusLabel(m_state);
    const QString message =
        reconnecting ? tr("connection lost (%1); the run keeps going on the host").arg(m_reconnectReason)
                     : m_stateMessage;
    QString title = QStringLiteral("<b>%1</b> &nbsp;<span style='color:gray'>%2</span> &nbsp;"
                                   "<span style='color:%3'>● %4</span>")
                        .arg(m_runTitle.toHtmlEscaped(), m_runId.toHtmlEscaped(),
                             statusColor(reconnecting ? QStringLiteral("reconnecting") : m_state).name(),
                             state.toHtmlEscaped());
    if (!message.isEmpty())
        title += QStringLiteral(" &nbsp;<span style='color:gray'>%1</span>").arg(message.toHtmlEscaped());
    m_title->setText(title);

    if (!m_latestStep) {
        m_latest->setText(m_waitingForHistory ? tr("Loading steps…") : tr("No steps yet."));
        return;
    }
    const auto& s = *m_latestStep;
    const QLocale locale;
    const QString progress = m_plannedSteps > 0
        ? tr("Step %1 / %2").arg(s.step).arg(m_plannedSteps)
        : tr("Step %1").arg(s.step);
    // MFU needs the device's peak rate; on a CPU there is none and moe-train reports 0.
    const QString mfu = s.mfu > 0.0 ? locale.toString(s.mfu * 100.0, 'f', 1) + QStringLiteral(" %") : tr("n/a");
    m_latest->setText(tr("%1   ·   step time %2 ms   ·   %3 effective tokens/s/GPU   ·   loss %4   ·   "
                         "peak memory %5 GiB   ·   MFU %6")
                          .arg(progress, locale.toString(s.stepMs, 'f', 1),
                               locale.toString(s.tokensPerSPerGpu, 'f', 0), locale.toString(s.loss, 'f', 4),
                               locale.toString(s.memPeakGib, 'f', 3), mfu));
}

}  // namespace wb::ui
