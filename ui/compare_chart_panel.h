// CompareChartPanel: the compare view's overlaid charts — step time, effective tokens/s/GPU, loss
// and peak memory of every compared run on shared axes. The x axis is the step, the wall time since
// the run's first step, or the effective tokens seen so far (the fair axis when runs differ in batch
// or speed). Each run is drawn twice: its raw series faint, and an EMA with debiasing on top.
// Both are decimated to the plot width with StepSeriesBuffer::decimate (min/max per pixel column),
// so a one-step spike survives and 20 × 100k steps draw as a few thousand points.
// Threading: GUI thread only.
#pragma once

#include <QList>
#include <QTimer>
#include <QWidget>

namespace wb::core {
struct Comparison;
}

namespace wb::ui {

class MetricChartView;

class CompareChartPanel : public QWidget {
    Q_OBJECT

public:
    enum class XAxis { Step, WallTime, EffectiveTokens };
    enum class Chart { StepTime, Throughput, Loss, Memory, ChartCount };

    explicit CompareChartPanel(QWidget* parent = nullptr);

    /// The runs to draw; the panel keeps the pointer (the owner keeps the comparison alive and calls
    /// this again, or with nullptr, before it changes or goes away).
    void setComparison(const core::Comparison* comparison);
    void setXAxis(XAxis axis);
    /// EMA weight in [0, 1); 0 draws the raw series only.
    void setSmoothing(double weight);

    XAxis xAxis() const { return m_xAxis; }
    double smoothing() const { return m_smoothing; }
    MetricChartView* chartView(Chart chart) const { return m_charts.value(static_cast<int>(chart)); }
    /// Points drawn in total (raw + smoothed, all runs, all charts): what decimation left.
    qsizetype drawnPoints() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuildCharts();
    void redraw();

    const core::Comparison* m_comparison = nullptr;
    QList<MetricChartView*> m_charts;  // one per Chart
    XAxis m_xAxis = XAxis::Step;
    double m_smoothing = 0.6;
    QTimer m_redrawTimer;              // coalesces resizes and setting changes into one redraw
};

}  // namespace wb::ui
