// RunChartsPanel: the selected run's live charts against the step, in a 3 × 2 grid — step time
// (total, data wait) and its split into data, vision, projector, decoder forward, backward,
// optimizer and other (stacked areas); effective tokens/s/GPU with MFU on a right axis, and
// memory; loss with the router's aux loss, and gradient norm with the learning rate — plus a
// header with the latest values and the latest split. Steps go into a StepSeriesBuffer; the
// buffer's coalescing timer triggers one redraw per ≈40 ms, decimated to the plot width, however
// fast steps arrive. Each chart's tooltip gives the raw values of the step under the mouse.
// Threading: GUI thread only.
#pragma once

#include "ui/meta_types.h"

#include <QColor>
#include <QString>
#include <QTimer>
#include <QWidget>

#include <optional>

QT_BEGIN_NAMESPACE
class QLabel;
class QLineSeries;
QT_END_NAMESPACE

namespace wb::ui {

class MetricChartView;
class StepSeriesBuffer;

class RunChartsPanel : public QWidget {
    Q_OBJECT

public:
    enum class Chart { StepTime, StepSplit, Throughput, Memory, Loss, GradNorm };
    static constexpr int kChartCount = 6;
    /// The parts of a step, bottom band of the stacked split first. Other = step time minus the
    /// sum of the parts, clipped at 0 (parts are maxima over ranks and can add up to more).
    enum class Phase { Data, Vision, Projector, Decoder, Backward, Optimizer, Other };
    static constexpr int kPhaseCount = 7;
    static QColor phaseColor(Phase phase);
    static QString phaseName(Phase phase);

    explicit RunChartsPanel(QWidget* parent = nullptr);

    const QString& runId() const { return m_runId; }
    MetricChartView* chartView(Chart chart) const;
    MetricChartView* gpuChart() const { return m_gpu; }
    /// Points currently drawn by the chart's first series, or for the split its bottom band's
    /// upper line (tests and the status bar read this).
    int drawnPoints(Chart chart) const;
    StepSeriesBuffer* buffer() const { return m_buffer; }
    /// Charts are redrawn one per event-loop turn after each buffer update: true while some of
    /// them still wait for theirs (tests wait for false before reading every chart).
    bool redrawPending() const { return m_pendingCharts != 0; }
    /// The header's first line as plain text (title, id, state, message), for tests.
    QString headerText() const;
    /// The latest-values lines under the header as plain text, for tests.
    QString latestText() const;
    /// The chart's tooltip for the step nearest to `step` (what hovering shows); empty without steps.
    QString toolTipAt(Chart chart, double step) const;
    /// Whether the shown run's stream has a time split (some part > 0 in some step) and an MFU
    /// (some mfu > 0): without them the split chart and the MFU line give way to a notice.
    bool hasSplit() const { return m_splitSeen; }
    bool hasMfu() const { return m_mfuSeen; }

public slots:
    /// Switches to a run: clears the charts and waits for setHistory() before taking live steps
    /// (live steps that arrive earlier are already part of the history being read).
    void showRun(const QString& runId, const QString& title);
    void setHistory(const QString& runId, const wb::ui::StepList& steps);
    void appendSteps(const QString& runId, const wb::ui::StepList& steps);
    /// The run's GPU system samples: all of them (`history`) or new ones. The GPU chart (below
    /// the others, across both columns) shows once a run has any: mean utilization and the
    /// hottest GPU's temperature on the left, mean power and the slowest SM clock on the right.
    void setGpuSamples(const QString& runId, const wb::ui::GpuList& samples, bool history);
    void setRunState(const QString& runId, wb::core::RunState state, const QString& message);
    /// The run's target lost its connection and is on reconnect attempt `attempt` (≥ 1): the
    /// header says "reconnecting (attempt N)" and why, in place of the run state, until attempt 0
    /// (connected again) brings the run state back. Ignored for another run than the shown one.
    void setReconnecting(const QString& runId, int attempt, const QString& reason);
    void setPlannedSteps(int64_t steps);
    void clearRun();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    // Buffer series, one per plotted line (and TFLOP/s, for the tooltip). UpTo*: the cumulative
    // upper bounds of the split's bands; the data band's upper bound is DataMs itself.
    enum Series {
        StepMs, DataMs, UpToVision, UpToProjector, UpToDecoder, UpToBackward, UpToOptimizer, UpToOther,
        MemAlloc, MemReserved, MemPeak, TokensPerS, MfuPercent, TflopsPerGpu, Loss, AuxLoss, GradNorm, Lr,
        SeriesCount
    };

    void createCharts();
    void addSteps(const StepList& steps);
    void redraw();  // schedules every chart; redrawNextChart() draws them one per event-loop turn
    void redrawNextChart();
    void redrawChart(Chart chart);
    void updateHeader();
    void updateNotices();
    QString splitToolTip(double step) const;
    /// The buffer's raw value of `series` at the step nearest to `step` (0 when empty).
    double valueAt(Series series, double step) const;

    StepSeriesBuffer* m_buffer = nullptr;
    MetricChartView* m_stepTime = nullptr;
    MetricChartView* m_split = nullptr;
    MetricChartView* m_memory = nullptr;
    MetricChartView* m_throughput = nullptr;
    MetricChartView* m_loss = nullptr;
    MetricChartView* m_gradNorm = nullptr;
    MetricChartView* m_gpu = nullptr;  // hidden until the shown run has GPU samples
    GpuList m_gpuSamples;              // of m_runId
    QLabel* m_title = nullptr;
    QLabel* m_latest = nullptr;

    QString m_runId;
    QString m_runTitle;
    std::optional<core::RunState> m_state;  // none: no status heard yet for m_runId
    QString m_stateMessage;
    int m_reconnectAttempt = 0;  // 0 = connected (or not a remote run)
    QString m_reconnectReason;
    int64_t m_plannedSteps = 0;
    bool m_waitingForHistory = false;
    int64_t m_lastStep = -1;
    std::optional<core::StepRecord> m_latestStep;
    QTimer m_redrawTimer;           // single shot, 1 ms: the next pending chart's turn
    unsigned m_pendingCharts = 0;   // bit per Chart still to redraw since the last updated()
    bool m_splitSeen = false;  // some step of the shown run has a part > 0
    bool m_mfuSeen = false;    // some step has mfu > 0
    bool m_auxSeen = false;    // some step has aux_loss != 0 (a dense model has none)
};

}  // namespace wb::ui
