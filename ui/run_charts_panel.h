// RunChartsPanel: the selected run's live charts — step time, memory, effective tokens/s/GPU and
// loss against the step — plus a header line with the latest values. Steps go into a
// StepSeriesBuffer; the buffer's coalescing timer triggers one redraw per ≈40 ms, decimated to the
// plot width, however fast steps arrive.
// Threading: GUI thread only.
#pragma once

#include "ui/meta_types.h"

#include <QString>
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
    enum class Chart { StepTime, Memory, Throughput, Loss };

    explicit RunChartsPanel(QWidget* parent = nullptr);

    const QString& runId() const { return m_runId; }
    MetricChartView* chartView(Chart chart) const;
    /// Points currently drawn by the chart's first series (tests and the status bar read this).
    int drawnPoints(Chart chart) const;
    StepSeriesBuffer* buffer() const { return m_buffer; }
    /// The header's first line as plain text (title, id, state, message), for tests.
    QString headerText() const;

public slots:
    /// Switches to a run: clears the charts and waits for setHistory() before taking live steps
    /// (live steps that arrive earlier are already part of the history being read).
    void showRun(const QString& runId, const QString& title);
    void setHistory(const QString& runId, const wb::ui::StepList& steps);
    void appendSteps(const QString& runId, const wb::ui::StepList& steps);
    void setRunState(const QString& runId, const QString& state, const QString& message);
    /// The run's target lost its connection and is on reconnect attempt `attempt` (≥ 1): the
    /// header says "reconnecting (attempt N)" and why, in place of the run state, until attempt 0
    /// (connected again) brings the run state back. Ignored for another run than the shown one.
    void setReconnecting(const QString& runId, int attempt, const QString& reason);
    void setPlannedSteps(int64_t steps);
    void clearRun();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    // Buffer series, one per plotted line.
    enum Series { StepMs, DataMs, MemAlloc, MemReserved, MemPeak, TokensPerS, Loss, SeriesCount };

    void addSteps(const StepList& steps);
    void redraw();
    void updateHeader();

    StepSeriesBuffer* m_buffer = nullptr;
    MetricChartView* m_stepTime = nullptr;
    MetricChartView* m_memory = nullptr;
    MetricChartView* m_throughput = nullptr;
    MetricChartView* m_loss = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_latest = nullptr;

    QString m_runId;
    QString m_runTitle;
    QString m_state;
    QString m_stateMessage;
    int m_reconnectAttempt = 0;  // 0 = connected (or not a remote run)
    QString m_reconnectReason;
    int64_t m_plannedSteps = 0;
    bool m_waitingForHistory = false;
    int64_t m_lastStep = -1;
    std::optional<core::StepRecord> m_latestStep;
};

}  // namespace wb::ui
