// CompareChartPanel: the compare view's overlaid charts — step time, effective tokens/s/GPU, loss
// and peak memory of every compared run on shared axes. The x axis is the step, the wall time since
// the run's first step, or the effective tokens seen so far (the fair axis when runs differ in batch
// or speed). Each run is drawn twice: its raw series faint, and an EMA with debiasing on top.
// Both are decimated to the plot width with StepSeriesBuffer::decimate (min/max per pixel column),
// so a one-step spike survives and 20 × 100k steps draw as a few thousand points. The y axes can be
// log10 (values <= 0 left out), and each run's steady-state window is shaded in its colour.
// The series are core/compare/compare_report's, so the exported SVGs draw the same lines.
// Threading: GUI thread only.
#pragma once

#include <QImage>
#include <QList>
#include <QTimer>
#include <QWidget>

#include <vector>

#include "core/compare/compare_report.h"

QT_BEGIN_NAMESPACE
class QAreaSeries;
QT_END_NAMESPACE

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
    /// Log10 y axes on every chart.
    void setLogScale(bool on);
    /// Each run's steady-state window as a faint band in the run's colour.
    void setShadeSteadyWindow(bool on);

    XAxis xAxis() const { return m_xAxis; }
    double smoothing() const { return m_smoothing; }
    bool logScale() const { return m_logScale; }
    bool shadeSteadyWindow() const { return m_shade; }
    /// The settings as core chart options (what the SVG export draws).
    core::ChartOptions chartOptions() const;
    /// One chart drawn offscreen at `size` (logical pixels) with the current settings, for export:
    /// independent of the on-screen size. The image has the given device pixel ratio.
    QImage renderChart(Chart chart, QSize size, qreal devicePixelRatio = 2.0) const;
    /// Steady-window bands drawn now on `chart` (one per run with a window, while shading is on).
    qsizetype shadedBands(Chart chart) const;
    MetricChartView* chartView(Chart chart) const { return m_charts.value(static_cast<int>(chart)); }
    /// Points drawn in total (raw + smoothed, all runs, all charts): what decimation left.
    qsizetype drawnPoints() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    MetricChartView* makeView(int chartIndex, QWidget* parent) const;
    void rebuildCharts();
    void redraw();
    /// x of every step of every run for the current x axis (the same for all four charts).
    std::vector<std::vector<double>> runXValues() const;
    void fillChart(MetricChartView* view, int chartIndex, QList<QAreaSeries*>& bands,
                   const std::vector<std::vector<double>>& xs) const;
    void shadeWindows(MetricChartView* view, QList<QAreaSeries*>& bands,
                      const std::vector<std::vector<double>>& xs) const;

    const core::Comparison* m_comparison = nullptr;
    QList<MetricChartView*> m_charts;  // one per Chart
    XAxis m_xAxis = XAxis::Step;
    double m_smoothing = 0.6;
    bool m_logScale = false;
    bool m_shade = true;
    QList<QList<QAreaSeries*>> m_bands;  // per chart: the steady-window bands
    QTimer m_redrawTimer;              // coalesces resizes and setting changes into one redraw
};

}  // namespace wb::ui
