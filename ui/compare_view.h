// CompareView: puts stored runs side by side. Pick runs and a baseline (optionally a step window
// A:B instead of the detected steady state); the view shows the workload warnings in a banner
// above everything (red for mock vs real), the figures table with deltas against the baseline, the
// config keys that differ, and the overlaid charts (CompareChartPanel, log scale and steady-window
// shading toggles). Exports: the charts as PNG (what is on screen) and SVG (core's renderer, same
// settings), and the comparison report (Markdown + the charts beside it, for a review). The
// analysis is core::compareRuns; this class only shows it.
// Threading: GUI thread only. Each comparison loads on a short-lived worker thread with its own
// RunStore connections (WAL: the follow worker may be writing meanwhile); the same thread
// computes the chart lines for the charts' current plot widths, so the GUI thread only fills the
// tables and hands finished points to the charts.
#pragma once

#include "core/compare/chart_series.h"
#include "core/compare/run_comparison.h"

#include <QPointer>
#include <QString>
#include <QThread>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QPushButton;
class QLabel;
class QScrollArea;
class QLineEdit;
class QListWidget;
class QSlider;
class QTableWidget;
class QThread;
QT_END_NAMESPACE

namespace wb::ui {

class CompareChartPanel;

class CompareView : public QWidget {
    Q_OBJECT

public:
    explicit CompareView(QString storePath, QWidget* parent = nullptr);
    ~CompareView() override;

    QStringList selectedRuns() const;  ///< ids of the checked runs, in list order
    QStringList listedRuns() const;    ///< ids of every run in the list, in list order
    QString baselineRun() const;       ///< id
    const core::Comparison* comparison() const { return m_comparison.get(); }
    bool isLoading() const { return m_loading; }

    QLabel* warningBanner() const { return m_banner; }
    QTableWidget* figuresTable() const { return m_figures; }
    QTableWidget* configDiffTable() const { return m_configDiff; }
    /// Predicted vs measured: one row per run (a run without a prediction says so), then the
    /// mean absolute error across runs; columns step time, peak memory, tokens/s/GPU, MFU, GPUs.
    QTableWidget* predictionTable() const { return m_predictions; }
    CompareChartPanel* charts() const { return m_charts; }
    QCheckBox* logScaleToggle() const { return m_logScale; }
    QCheckBox* shadeWindowToggle() const { return m_shadeWindow; }

    /// Writes every chart to `directory` (created if needed) as <key>.png — the chart as drawn,
    /// at twice the screen resolution — and <key>.svg. Returns the files written, or an error
    /// message (and no list) when there is no comparison or a file cannot be written.
    core::Result<QStringList> exportCharts(const QString& directory);
    /// The comparison report in `directory`: report.md (warnings first, figures with deltas,
    /// config diff) linking the chart PNGs, with the SVGs beside them.
    core::Result<QStringList> exportReport(const QString& directory);
    /// The comparison report as one self-contained HTML file (warnings banner, figures with deltas,
    /// predicted vs measured, config diff, the charts inline as SVG with the view's settings).
    core::Result<void> exportHtmlReport(const QString& file);

public slots:
    /// Re-reads the run list from the store (keeps the checked runs that still exist).
    void reloadRuns();
    void setSelectedRuns(const QStringList& runIds);
    void setBaseline(const QString& runId);
    /// "A:B" in step numbers, either end open; empty = detect the steady state.
    void setWindowOverride(const QString& text);
    /// Loads the checked runs on a worker thread, then refreshes banner, tables and charts and
    /// emits compared(). The baseline is column 0. A bad window or no run: compared(error) at once.
    void compare();

signals:
    /// A comparison was shown (or failed: `error` non-empty).
    void compared(const QString& error);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitBanner();
    void buildUi();
    /// What the loading thread hands back: the comparison and its chart lines, or an error.
    struct LoadResult {
        std::shared_ptr<const core::Comparison> comparison;
        std::shared_ptr<const core::ChartSet> lines;
        std::string error;
    };
    void applyResult(LoadResult result);
    void showComparison(std::shared_ptr<const core::ChartSet> lines);
    void showError(const QString& message);
    void fillBanner();
    void fillFigures();
    void fillConfigDiff();
    void fillPredictions();
    void updateBaselineChoices();
    enum class ExportKind { Charts, MarkdownReport, HtmlReport };
    void chooseAndExport(ExportKind kind);

    QString m_storePath;
    /// Shared with the chart panel's workers (immutable once shown).
    std::shared_ptr<const core::Comparison> m_comparison;
    /// Runs loaded by earlier comparisons (steps shared, not copied): the next comparison reads
    /// only their steps after the last one held. GUI thread only; the worker gets a copy.
    std::vector<core::ComparedRun> m_loaded;

    QLabel* m_banner = nullptr;
    QScrollArea* m_bannerScroll = nullptr;  // holds m_banner: up to six lines, then it scrolls
    QListWidget* m_runList = nullptr;
    QComboBox* m_baseline = nullptr;
    QLineEdit* m_window = nullptr;
    QComboBox* m_xAxis = nullptr;
    QSlider* m_smoothing = nullptr;
    QCheckBox* m_logScale = nullptr;
    QCheckBox* m_shadeWindow = nullptr;
    QPushButton* m_exportCharts = nullptr;
    QPushButton* m_exportReport = nullptr;
    QTableWidget* m_figures = nullptr;
    QTableWidget* m_configDiff = nullptr;
    QTableWidget* m_predictions = nullptr;
    QWidget* m_predictionBox = nullptr;  // label + m_predictions; hidden when no run has a prediction
    CompareChartPanel* m_charts = nullptr;
    QLabel* m_busy = nullptr;
    QPointer<QThread> m_loader;  // the load under way (runInBackground); waited for in the destructor
    bool m_loading = false;      // from the start of a load until its result is applied
    bool m_compareAgain = false;  // compare() was called during a load
    bool m_updating = false;  // suppresses compare() while the list/combo are filled in code
};

}  // namespace wb::ui
