// CompareChartPanel: the compare view's overlaid charts — step time, effective tokens/s/GPU, loss
// and peak memory of every compared run on shared axes. The x axis is the step, the wall time since
// the run's first step, or the effective tokens seen so far (the fair axis when runs differ in batch
// or speed). Each run is drawn twice: its raw series faint, and an EMA with debiasing on top, both
// decimated to min / max per pixel column of the plot (a one-step spike survives). The y axes can
// be log10 (values <= 0 left out), and each run's steady-state window is shaded in its colour.
// Clicking a run's legend entry hides / shows it on all four charts; hovering a line shows the
// run, x and y of the nearest point.
//
// The GUI thread never computes a series: the lines (core::computeChartSet: x mapping, EMA,
// decimation) come from the compare view's loading thread with the comparison, or — after a
// resize or a change of x axis, smoothing or log scale — from a worker started here. Requests are
// coalesced (one computation in flight, the latest settings run next) and a result computed for
// settings that changed meanwhile is dropped (generation counter). The lines are painted by
// CompareLinesItem / CompareBandsItem inside the QChart; QtCharts draws axes, grid and legend.
// The series are core/compare's, so the exported SVGs draw the same lines.
// Threading: GUI thread only (the workers only read the shared, immutable comparison).
#pragma once

#include "core/compare/chart_series.h"

#include <QImage>
#include <QList>
#include <QPointer>
#include <QThread>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

namespace wb::ui {

class CompareBandsItem;
class CompareLinesItem;
class MetricChartView;

class CompareChartPanel : public QWidget {
    Q_OBJECT

public:
    enum class XAxis { Step, WallTime, EffectiveTokens };
    enum class Chart { StepTime, Throughput, Loss, Memory, ChartCount };

    explicit CompareChartPanel(QWidget* parent = nullptr);
    ~CompareChartPanel() override;

    /// The runs to draw (nullptr: none). `lines`, when given, are the charts already computed for
    /// this comparison (by the loading thread, for currentRequest()); they are shown at once if
    /// they still fit the panel's settings and sizes, otherwise the panel computes new ones.
    void setComparison(std::shared_ptr<const core::Comparison> comparison,
                       std::shared_ptr<const core::ChartSet> lines = {});
    void setXAxis(XAxis axis);
    /// EMA weight in [0, 1); 0 draws the raw series only.
    void setSmoothing(double weight);
    /// Log10 y axes on every chart (shown once the lines for it are computed).
    void setLogScale(bool on);
    /// Each run's steady-state window as a faint band in the run's colour.
    void setShadeSteadyWindow(bool on);
    /// Hides or shows run `run` (index into the comparison's runs) on every chart, as a click on
    /// its legend entry does.
    void setRunVisible(int run, bool visible);
    bool isRunVisible(int run) const;

    XAxis xAxis() const { return m_xAxis; }
    double smoothing() const { return m_smoothing; }
    bool logScale() const { return m_logScale; }
    bool shadeSteadyWindow() const { return m_shade; }
    /// The settings as core chart options (what the SVG export draws).
    core::ChartOptions chartOptions() const;
    /// What the lines must be computed for now: the settings and each chart's plot width.
    core::ChartLinesRequest currentRequest() const;
    /// True when the lines shown match the settings (no computation in flight or due).
    bool isUpToDate() const;

    /// One chart drawn offscreen at `size` (logical pixels) with the current settings, for export:
    /// independent of the on-screen size. The image has the given device pixel ratio. Computes
    /// that chart's lines on the calling (GUI) thread: an export waits for its file anyway.
    QImage renderChart(Chart chart, QSize size, qreal devicePixelRatio = 2.0) const;
    /// Steady-window bands drawn now on `chart` (one per shown run with a window, while shading is on).
    qsizetype shadedBands(Chart chart) const;
    MetricChartView* chartView(Chart chart) const { return m_charts.value(static_cast<int>(chart)); }
    /// What the lines shown were computed for (default-constructed before the first lines).
    core::ChartLinesRequest shownRequest() const { return m_lines ? m_lines->request : core::ChartLinesRequest{}; }
    /// The lines shown on `chart` (nullptr before the first comparison).
    const core::ChartLines* lines(Chart chart) const;
    /// The item painting run `run` on `chart` (nullptr when there is none).
    CompareLinesItem* runItem(Chart chart, int run) const;
    /// Points drawn in total (raw + smoothed, all runs, all charts): what decimation left.
    qsizetype drawnPoints() const;
    /// The hover tooltip for position `pos` in `chart`'s viewport: the nearest shown point within
    /// a few pixels ("run\nx title: x\ny title: y"), or empty.
    QString toolTipAt(Chart chart, QPoint pos) const;

signals:
    /// New lines are on the charts (after a comparison, or after a recomputation).
    void linesShown();

protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct ChartItems {
        QList<CompareLinesItem*> runs;
        CompareBandsItem* bands = nullptr;
    };
    MetricChartView* makeView(int chartIndex, QWidget* parent) const;
    void setLegend(MetricChartView* view);
    void requestLines();
    void startComputation();
    void linesComputed(std::shared_ptr<const core::ChartSet> lines, uint64_t generation);
    void showLines(std::shared_ptr<const core::ChartSet> lines);
    void checkFit();
    bool fits(const core::ChartLinesRequest& computed) const;
    /// Puts chart `c` of `lines` on `view` through `items` (axes, items, bands).
    void applyChart(MetricChartView* view, ChartItems& items, const std::shared_ptr<const core::ChartSet>& lines,
                    int c) const;
    void updateMapping(MetricChartView* view, ChartItems& items) const;
    void updateVisibility();

    std::shared_ptr<const core::Comparison> m_comparison;
    std::shared_ptr<const core::ChartSet> m_lines;  // what the charts show
    QList<MetricChartView*> m_charts;                 // one per Chart, kept across comparisons
    QList<ChartItems> m_items;                        // per chart
    std::vector<bool> m_hidden;                       // per run: hidden through the legend
    XAxis m_xAxis = XAxis::Step;
    double m_smoothing = 0.6;
    bool m_logScale = false;
    bool m_shade = true;
    uint64_t m_generation = 0;  // bumped by every change the lines depend on
    bool m_computing = false;   // a worker is computing lines
    core::ChartLinesRequest m_inFlight;  // what it computes for
    QPointer<QThread> m_worker;  // the computation under way (runInBackground); waited for in the destructor
    QTimer m_fitTimer;          // coalesces resizes and slider drags into one check / computation
};

}  // namespace wb::ui
