#include "ui/compare_view.h"

#include "ui/background_task.h"
#include "ui/compare_chart_panel.h"
#include "ui/metric_chart_view.h"

#include "core/compare/compare_report.h"
#include "core/compare/html_report.h"

#include <QCoreApplication>
#include <QThread>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QMessageBox>
#include <QPainter>
#include <QSaveFile>
#include <QScrollArea>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QListWidget>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <string_view>
#include <cmath>

namespace wb::ui {
namespace {

// The figures' and predictions' row names by their JSON key, as translatable literals (core's
// labels are English data; lupdate sees only literals — issue 18 item 11). Unknown keys keep
// core's text.
struct KeyLabel {
    const char* key;
    const char* label;
};
constexpr KeyLabel kFigureLabels[] = {
    {"tokens_per_s_per_gpu", QT_TRANSLATE_NOOP("wb::ui::CompareView", "effective tokens/s/GPU")},
    {"gpu_ms_per_1k_tokens", QT_TRANSLATE_NOOP("wb::ui::CompareView", "GPU-ms per 1k eff. tokens")},
    {"tflops_per_gpu", QT_TRANSLATE_NOOP("wb::ui::CompareView", "TFLOP/s/GPU")},
    {"mfu", QT_TRANSLATE_NOOP("wb::ui::CompareView", "MFU")},
    {"step_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "step time")},
    {"data_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: data wait")},
    {"vision_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: vision encoder fwd")},
    {"projector_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: projector fwd")},
    {"decoder_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: decoder fwd + loss")},
    {"backward_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: backward")},
    {"optimizer_ms", QT_TRANSLATE_NOOP("wb::ui::CompareView", "time: optimizer")},
    {"effective_tokens_per_step", QT_TRANSLATE_NOOP("wb::ui::CompareView", "effective tokens/step")},
    {"peak_mem_gib", QT_TRANSLATE_NOOP("wb::ui::CompareView", "peak memory, whole run")},
    {"gpu_util_pct", QT_TRANSLATE_NOOP("wb::ui::CompareView", "GPU utilization (mean of GPUs)")},
    {"gpu_power_w", QT_TRANSLATE_NOOP("wb::ui::CompareView", "GPU power (mean of GPUs)")},
    {"gpu_temp_c", QT_TRANSLATE_NOOP("wb::ui::CompareView", "GPU temperature (hottest)")},
    {"gpu_sm_clock_mhz", QT_TRANSLATE_NOOP("wb::ui::CompareView", "SM clock (slowest GPU)")},
};

QString figureLabel(const char* key, const char* fallback)
{
    for (const KeyLabel& k : kFigureLabels)
        if (std::string_view(k.key) == key)
            return QCoreApplication::translate("wb::ui::CompareView", k.label);
    return QString::fromUtf8(fallback);
}

constexpr int kIdRole = Qt::UserRole;

QString text(const std::string& s)
{
    return QString::fromStdString(s);
}

QString formatNumber(double value, int decimals)
{
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("—");
}

// The banner's colours: nobody should be able to read the table without seeing a critical warning.
QString bannerStyle(std::optional<core::WarningSeverity> worst)
{
    if (!worst)
        return QStringLiteral("QLabel { background: #e8f5e9; color: #1b5e20; padding: 6px; }");
    switch (*worst) {
    case core::WarningSeverity::Critical:
        return QStringLiteral("QLabel { background: #d62728; color: white; font-weight: bold; padding: 8px;"
                              " border: 2px solid #7f0000; }");
    case core::WarningSeverity::Warning:
        return QStringLiteral("QLabel { background: #ffbf00; color: black; padding: 8px; border: 1px solid #a07800; }");
    case core::WarningSeverity::Info:
        break;
    }
    return QStringLiteral("QLabel { background: #e3f2fd; color: #0d47a1; padding: 6px; }");
}

}  // namespace

CompareView::CompareView(QString storePath, QWidget* parent) : QWidget(parent), m_storePath(std::move(storePath))
{
    setObjectName(QStringLiteral("compareView"));
    setWindowTitle(tr("Compare runs"));
    buildUi();
    reloadRuns();
}

CompareView::~CompareView()
{
    if (m_loader)
        m_loader->wait();  // CPU-only work on copies: its result is dropped, but it must not outlive the app
    m_charts->setComparison(nullptr);
}

void CompareView::buildUi()
{
    m_banner = new QLabel(this);
    m_banner->setObjectName(QStringLiteral("compareWarningBanner"));
    m_banner->setWordWrap(true);
    m_banner->setTextFormat(Qt::RichText);
    m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_runList = new QListWidget(this);
    m_runList->setObjectName(QStringLiteral("compareRunList"));
    m_baseline = new QComboBox(this);
    m_baseline->setObjectName(QStringLiteral("compareBaseline"));
    m_window = new QLineEdit(this);
    m_window->setObjectName(QStringLiteral("compareWindow"));
    m_window->setPlaceholderText(tr("detected (or FIRST:LAST)"));
    m_xAxis = new QComboBox(this);
    m_xAxis->setObjectName(QStringLiteral("compareXAxis"));
    m_xAxis->addItem(tr("Step"), int(CompareChartPanel::XAxis::Step));
    m_xAxis->addItem(tr("Wall time"), int(CompareChartPanel::XAxis::WallTime));
    m_xAxis->addItem(tr("Effective tokens seen"), int(CompareChartPanel::XAxis::EffectiveTokens));
    m_smoothing = new QSlider(Qt::Horizontal, this);
    m_smoothing->setObjectName(QStringLiteral("compareSmoothing"));
    m_smoothing->setRange(0, 99);
    m_smoothing->setValue(60);
    m_smoothing->setToolTip(tr("EMA weight (debiased); the raw series stays faint behind"));
    m_logScale = new QCheckBox(tr("Log scale"), this);
    m_logScale->setObjectName(QStringLiteral("compareLogScale"));
    m_logScale->setToolTip(tr("Log10 y axes (values <= 0 are left out)"));
    m_shadeWindow = new QCheckBox(tr("Shade steady window"), this);
    m_shadeWindow->setObjectName(QStringLiteral("compareShadeWindow"));
    m_shadeWindow->setChecked(true);
    m_shadeWindow->setToolTip(tr("Each run's steady-state window (what the figures cover) in its colour"));
    m_exportCharts = new QPushButton(tr("Export charts…"), this);
    m_exportCharts->setObjectName(QStringLiteral("compareExportCharts"));
    m_exportCharts->setToolTip(tr("The four charts as PNG and SVG into a folder"));
    m_exportReport = new QPushButton(tr("Export report…"), this);
    m_exportReport->setObjectName(QStringLiteral("compareExportReport"));
    m_exportReport->setToolTip(tr("The comparison report: warnings, figures with deltas, predicted vs measured, "
                                  "config diff and the charts"));
    auto* reportMenu = new QMenu(m_exportReport);
    reportMenu->setObjectName(QStringLiteral("compareReportMenu"));
    QAction* htmlAction = reportMenu->addAction(tr("HTML report (one file, charts inline)…"));
    htmlAction->setObjectName(QStringLiteral("compareExportHtml"));
    QAction* markdownAction = reportMenu->addAction(tr("Markdown report (folder with the chart images)…"));
    markdownAction->setObjectName(QStringLiteral("compareExportMarkdown"));
    m_exportReport->setMenu(reportMenu);
    connect(htmlAction, &QAction::triggered, this, [this] { chooseAndExport(ExportKind::HtmlReport); });
    connect(markdownAction, &QAction::triggered, this, [this] { chooseAndExport(ExportKind::MarkdownReport); });
    m_exportCharts->setEnabled(false);
    m_exportReport->setEnabled(false);
    auto* refresh = new QPushButton(tr("Reload runs"), this);
    auto* compareButton = new QPushButton(tr("Compare"), this);
    m_busy = new QLabel(tr("Loading runs…"), this);
    m_busy->setObjectName(QStringLiteral("compareBusy"));
    m_busy->setVisible(false);
    compareButton->setObjectName(QStringLiteral("compareButton"));

    auto* form = new QFormLayout;
    form->addRow(tr("Baseline"), m_baseline);
    form->addRow(tr("Window"), m_window);
    form->addRow(tr("X axis"), m_xAxis);
    form->addRow(tr("Smoothing"), m_smoothing);
    form->addRow(QString(), m_logScale);
    form->addRow(QString(), m_shadeWindow);
    auto* side = new QWidget(this);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    sideLayout->addWidget(new QLabel(tr("Runs to compare"), side));
    sideLayout->addWidget(m_runList, 1);
    sideLayout->addLayout(form);
    sideLayout->addWidget(refresh);
    sideLayout->addWidget(compareButton);
    sideLayout->addWidget(m_busy);
    sideLayout->addWidget(m_exportCharts);
    sideLayout->addWidget(m_exportReport);

    m_figures = new QTableWidget(this);
    m_figures->setObjectName(QStringLiteral("compareFiguresTable"));
    m_figures->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_configDiff = new QTableWidget(this);
    m_configDiff->setObjectName(QStringLiteral("compareConfigDiffTable"));
    m_configDiff->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_predictions = new QTableWidget(this);
    m_predictions->setObjectName(QStringLiteral("comparePredictionTable"));
    m_predictions->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_predictions->setToolTip(tr("Predicted vs measured: the planner's prediction of runs launched from a plan "
                                 "(error = (predicted − measured) / measured)"));
    m_charts = new CompareChartPanel(this);

    auto* figureTables = new QSplitter(Qt::Vertical, this);
    figureTables->addWidget(m_figures);
    m_predictionBox = new QWidget(this);
    auto* predictionLayout = new QVBoxLayout(m_predictionBox);
    predictionLayout->setContentsMargins(0, 0, 0, 0);
    predictionLayout->addWidget(new QLabel(tr("Predicted vs measured"), m_predictionBox));
    predictionLayout->addWidget(m_predictions);
    figureTables->addWidget(m_predictionBox);
    // Dense rows: the figure table has a dozen rows and the charts want the height.
    for (QTableWidget* table : {m_figures, m_predictions, m_configDiff})
        table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
    figureTables->setStretchFactor(0, 3);
    figureTables->setStretchFactor(1, 1);
    auto* tables = new QSplitter(Qt::Horizontal, this);
    tables->addWidget(figureTables);
    tables->addWidget(m_configDiff);
    tables->setStretchFactor(0, 3);
    tables->setStretchFactor(1, 2);
    auto* right = new QSplitter(Qt::Vertical, this);
    right->addWidget(tables);
    right->addWidget(m_charts);
    right->setStretchFactor(1, 2);
    right->setSizes({320, 560});
    auto* body = new QSplitter(Qt::Horizontal, this);
    body->addWidget(side);
    body->addWidget(right);
    body->setStretchFactor(1, 1);

    auto* layout = new QVBoxLayout(this);
    // Many runs can make many warnings: the banner scrolls past six lines instead of taking the
    // charts' height (their tick labels were elided at 1400 × 900 with five warnings).
    m_bannerScroll = new QScrollArea(this);
    m_bannerScroll->setObjectName(QStringLiteral("compareWarningScroll"));
    m_bannerScroll->setWidget(m_banner);
    m_bannerScroll->setWidgetResizable(true);
    m_bannerScroll->setFrameShape(QFrame::NoFrame);
    m_bannerScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(m_bannerScroll);

    layout->addWidget(body, 1);

    connect(refresh, &QPushButton::clicked, this, &CompareView::reloadRuns);
    connect(compareButton, &QPushButton::clicked, this, &CompareView::compare);
    connect(m_runList, &QListWidget::itemChanged, this, [this] {
        if (!m_updating)
            updateBaselineChoices();
    });
    connect(m_baseline, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_updating && m_comparison)
            compare();
    });
    connect(m_window, &QLineEdit::editingFinished, this, [this] {
        if (m_comparison)
            compare();
    });
    connect(m_xAxis, &QComboBox::currentIndexChanged, this, [this] {
        m_charts->setXAxis(static_cast<CompareChartPanel::XAxis>(m_xAxis->currentData().toInt()));
    });
    connect(m_smoothing, &QSlider::valueChanged, this, [this](int value) { m_charts->setSmoothing(value / 100.0); });
    m_charts->setSmoothing(m_smoothing->value() / 100.0);
    connect(m_logScale, &QCheckBox::toggled, m_charts, &CompareChartPanel::setLogScale);
    connect(m_shadeWindow, &QCheckBox::toggled, m_charts, &CompareChartPanel::setShadeSteadyWindow);
    connect(m_exportCharts, &QPushButton::clicked, this, [this] { chooseAndExport(ExportKind::Charts); });
    m_banner->setText(tr("Pick two or more runs and press Compare."));
    fitBanner();
    m_banner->setStyleSheet(bannerStyle(core::WarningSeverity::Info));
}

QStringList CompareView::selectedRuns() const
{
    QStringList ids;
    for (int i = 0; i < m_runList->count(); ++i)
        if (m_runList->item(i)->checkState() == Qt::Checked)
            ids << m_runList->item(i)->data(kIdRole).toString();
    return ids;
}

QStringList CompareView::listedRuns() const
{
    QStringList ids;
    for (int i = 0; i < m_runList->count(); ++i)
        ids << m_runList->item(i)->data(kIdRole).toString();
    return ids;
}

QString CompareView::baselineRun() const
{
    return m_baseline->currentData().toString();
}

void CompareView::reloadRuns()
{
    const QStringList checked = selectedRuns();
    auto store = core::RunStore::open(m_storePath.toStdString());
    if (!store) {
        showError(text(store.error().toString()));
        return;
    }
    auto runs = (*store)->listRuns();
    if (!runs) {
        showError(text(runs.error().toString()));
        return;
    }
    m_updating = true;
    m_runList->clear();
    for (const auto& r : *runs) {
        auto* item = new QListWidgetItem(
            tr("%1  —  %2, %3 steps%4")
                .arg(text(r.name), text(r.id))
                .arg(r.steps)
                .arg(r.dataSource.empty() ? QString() : QStringLiteral(", ") + text(r.dataSource)),
            m_runList);
        item->setData(kIdRole, text(r.id));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(text(r.id)) ? Qt::Checked : Qt::Unchecked);
    }
    m_updating = false;
    updateBaselineChoices();
}

void CompareView::setSelectedRuns(const QStringList& runIds)
{
    m_updating = true;
    for (int i = 0; i < m_runList->count(); ++i) {
        auto* item = m_runList->item(i);
        item->setCheckState(runIds.contains(item->data(kIdRole).toString()) ? Qt::Checked : Qt::Unchecked);
    }
    m_updating = false;
    updateBaselineChoices();
}

void CompareView::setBaseline(const QString& runId)
{
    const int index = m_baseline->findData(runId);
    if (index >= 0)
        m_baseline->setCurrentIndex(index);  // recompares when a comparison is shown
}

void CompareView::setWindowOverride(const QString& text)
{
    m_window->setText(text);
}

void CompareView::updateBaselineChoices()
{
    const QString current = baselineRun();
    m_updating = true;
    m_baseline->clear();
    for (int i = 0; i < m_runList->count(); ++i) {
        const auto* item = m_runList->item(i);
        if (item->checkState() == Qt::Checked)
            m_baseline->addItem(item->text().section(QStringLiteral("  —  "), 0, 0) + QStringLiteral(" (") +
                                    item->data(kIdRole).toString() + QLatin1Char(')'),
                                item->data(kIdRole));
    }
    const int index = m_baseline->findData(current);
    m_baseline->setCurrentIndex(index >= 0 ? index : 0);
    m_updating = false;
}

void CompareView::compare()
{
    const QStringList ids = selectedRuns();
    if (ids.isEmpty()) {
        showError(tr("Pick at least one run to compare (two or more to see deltas)."));
        return;
    }
    core::CompareRequest request;
    // The baseline is the leftmost column, as readers of a comparison table expect.
    if (ids.contains(baselineRun()))
        request.runs.push_back(baselineRun().toStdString());
    for (const auto& id : ids)
        if (id != baselineRun())
            request.runs.push_back(id.toStdString());
    if (!baselineRun().isEmpty())
        request.baseline = baselineRun().toStdString();
    if (const QString w = m_window->text().trimmed(); !w.isEmpty()) {
        auto window = core::parseStepWindow(w.toStdString());
        if (!window) {
            showError(text(window.error().toString()));
            return;
        }
        request.window = *window;
    }
    if (m_loading) {
        m_compareAgain = true;  // one load at a time; the latest settings win when it is done
        return;
    }
    // Loading 20 runs of 100k steps takes a second or two (SQLite decoding): off the GUI thread,
    // on copies (path, request, the runs already loaded). The same thread computes the chart
    // lines (x mapping, EMA, decimation to the plot widths the charts have now), so the GUI thread
    // only fills tables and hands finished points to the charts.
    m_loading = true;
    m_loader = runInBackground(
        this, QStringLiteral("compare-load"),
        [path = m_storePath.toStdString(), request, loaded = m_loaded, chartRequest = m_charts->currentRequest()] {
            LoadResult result;
            try {
                auto comparison = core::compareRuns(path, request, loaded);
                if (comparison) {
                    result.comparison = std::make_shared<const core::Comparison>(std::move(*comparison));
                    result.lines = std::make_shared<const core::ChartSet>(core::computeChartSet(*result.comparison, chartRequest));
                } else {
                    result.error = comparison.error().toString();
                }
            } catch (const std::exception& e) {
                result.error = std::string("loading the runs failed unexpectedly: ") + e.what();
            }
            return result;
        },
        [this](LoadResult result) {
            m_loading = false;
            m_busy->setVisible(false);
            applyResult(std::move(result));
            if (m_compareAgain) {
                m_compareAgain = false;
                compare();
            }
        });
    m_busy->setVisible(true);
}

void CompareView::applyResult(LoadResult result)
{
    if (!result.comparison) {
        showError(text(result.error));
        return;
    }
    m_comparison = std::move(result.comparison);
    // Keep what this comparison loaded, plus earlier runs that are still ticked (unticked for a
    // moment, they come back without a reload); a run no longer ticked is let go (memory).
    std::vector<core::ComparedRun> loaded = m_comparison->runs;
    const QStringList ticked = selectedRuns();
    for (auto& run : m_loaded) {
        const bool shown = std::any_of(loaded.begin(), loaded.end(),
                                       [&](const core::ComparedRun& r) { return r.summary.id == run.summary.id; });
        if (!shown && ticked.contains(QString::fromStdString(run.summary.id)))
            loaded.push_back(std::move(run));
    }
    m_loaded = std::move(loaded);
    showComparison(std::move(result.lines));
    emit compared(QString());
}

void CompareView::showComparison(std::shared_ptr<const core::ChartSet> lines)
{
    fillBanner();
    fillFigures();
    fillConfigDiff();
    fillPredictions();
    m_charts->setComparison(m_comparison, std::move(lines));
    m_exportCharts->setEnabled(true);
    m_exportReport->setEnabled(true);
}

void CompareView::showError(const QString& message)
{
    m_banner->setText(message.toHtmlEscaped());
    fitBanner();
    m_banner->setStyleSheet(bannerStyle(core::WarningSeverity::Warning));
    m_banner->setProperty("severity", QStringLiteral("error"));
    m_exportCharts->setEnabled((m_comparison != nullptr));
    m_exportReport->setEnabled((m_comparison != nullptr));
    emit compared(message);
}

void CompareView::fillBanner()
{
    const auto& warnings = m_comparison->warnings;
    std::optional<core::WarningSeverity> worst;
    QStringList lines;
    for (const auto& w : warnings) {
        if (!worst || w.severity < *worst)
            worst = w.severity;
        const QString tag = w.severity == core::WarningSeverity::Critical  ? tr("⚠ CRITICAL")
                            : w.severity == core::WarningSeverity::Warning ? tr("⚠ Warning")
                                                                           : tr("Note");
        lines << QStringLiteral("<b>%1:</b> %2").arg(tag, text(w.message).toHtmlEscaped());
    }
    if (lines.isEmpty())
        lines << tr("No workload differences: the runs did the same work per step.");
    m_banner->setText(lines.join(QStringLiteral("<br>")));
    fitBanner();
    m_banner->setStyleSheet(bannerStyle(worst));
    m_banner->setProperty("severity", worst ? QString::fromLatin1(core::severityName(*worst)) : QStringLiteral("none"));
}

void CompareView::fillFigures()
{
    const auto& c = *m_comparison;
    const auto& specs = core::figureSpecs();
    m_figures->clear();
    m_figures->setColumnCount(static_cast<int>(c.runs.size()));
    m_figures->setRowCount(static_cast<int>(specs.size()) + 2);
    QStringList columns, rows;
    const std::string& baseSource = c.runs[c.baseline].fingerprint.dataSource;
    for (size_t i = 0; i < c.runs.size(); ++i)
        columns << text(c.runs[i].label()) + (i == c.baseline ? tr(" ★ baseline") : QString()) +
                       (c.runs[i].fingerprint.dataSource != baseSource ? tr(" ⚠ %1 data").arg(text(c.runs[i].fingerprint.dataSource)) : QString());
    const core::RunFigures& base = c.runs[c.baseline].figures;
    for (int row = 0; row < static_cast<int>(specs.size()); ++row) {
        const auto& spec = specs[static_cast<size_t>(row)];
        rows << QStringLiteral("%1 (%2)").arg(figureLabel(spec.key, spec.label), QString::fromUtf8(spec.unit));
        for (size_t i = 0; i < c.runs.size(); ++i) {
            const double v = spec.value(c.runs[i].figures);
            QString cell = formatNumber(v, spec.decimals);
            auto* item = new QTableWidgetItem;
            if (i != c.baseline) {
                if (const auto delta = core::relativeDelta(v, spec.value(base))) {
                    cell += QStringLiteral(" (%1%2 %)").arg(*delta >= 0 ? QStringLiteral("+") : QString())
                                .arg(*delta * 100.0, 0, 'f', 1);
                    const bool better = (*delta > 0) == spec.higherIsBetter;
                    // No green "better" next to a critical warning: that delta is not a result.
                    if (std::abs(*delta) >= 0.01 && !c.hasCritical())
                        item->setForeground(better ? QColor(0x2c, 0xa0, 0x2c) : QColor(0xd6, 0x27, 0x28));
                }
            }
            if (spec.stats) {
                const auto* s = spec.stats(c.runs[i].figures);
                const double scale = spec.statsScale;
                item->setToolTip(tr("p10 %1, p90 %2, spread %3 %, %4 steps")
                                     .arg(formatNumber(s->p10 * scale, spec.decimals),
                                          formatNumber(s->p90 * scale, spec.decimals),
                                          formatNumber(s->spread * 100.0, 1))
                                     .arg(s->count));
            }
            item->setText(cell);
            m_figures->setItem(row, static_cast<int>(i), item);
        }
    }
    const int windowRow = static_cast<int>(specs.size());
    rows << tr("Steady window (steps)") << tr("Data source");
    for (size_t i = 0; i < c.runs.size(); ++i) {
        const auto& r = c.runs[i];
        const QString window = r.window.size() == 0
                                   ? QStringLiteral("—")
                                   : QStringLiteral("%1..%2 (%3)")
                                         .arg(r.steps().step[r.window.begin])
                                         .arg(r.steps().step[r.window.end - 1])
                                         .arg(text(r.window.note));
        m_figures->setItem(windowRow, static_cast<int>(i), new QTableWidgetItem(window));
        const QString source = r.fingerprint.dataSource.empty() ? tr("unknown") : text(r.fingerprint.dataSource);
        auto* sourceItem = new QTableWidgetItem(source);
        if (source != QStringLiteral("real"))
            sourceItem->setForeground(QColor(0xd6, 0x27, 0x28));
        m_figures->setItem(windowRow + 1, static_cast<int>(i), sourceItem);
    }
    m_figures->setHorizontalHeaderLabels(columns);
    m_figures->setVerticalHeaderLabels(rows);
    m_figures->resizeColumnsToContents();
}

void CompareView::fillConfigDiff()
{
    const auto& c = *m_comparison;
    m_configDiff->clear();
    m_configDiff->setColumnCount(static_cast<int>(c.runs.size()));
    m_configDiff->setRowCount(static_cast<int>(c.configDiff.rows.size()));
    QStringList columns, rows;
    for (const auto& r : c.runs)
        columns << text(r.label());
    for (int row = 0; row < static_cast<int>(c.configDiff.rows.size()); ++row) {
        const auto& diffRow = c.configDiff.rows[static_cast<size_t>(row)];
        rows << text(diffRow.key);
        for (size_t i = 0; i < diffRow.values.size(); ++i)
            m_configDiff->setItem(row, static_cast<int>(i),
                                  new QTableWidgetItem(diffRow.values[i].empty() ? tr("(absent)") : text(diffRow.values[i])));
    }
    m_configDiff->setHorizontalHeaderLabels(columns);
    m_configDiff->setVerticalHeaderLabels(rows);
    m_configDiff->setToolTip(tr("%1 of %2 config keys differ (the run name is not compared)")
                                 .arg(c.configDiff.rows.size())
                                 .arg(c.configDiff.keysCompared));
    m_configDiff->resizeColumnsToContents();
}

void CompareView::fillPredictions()
{
    const auto& c = *m_comparison;
    m_predictions->clear();
    m_predictions->clearSpans();
    const auto withPrediction = std::find_if(c.runs.begin(), c.runs.end(),
                                             [](const core::ComparedRun& r) { return r.predictionCheck.has_value(); });
    // Without any prediction the table would only say "no prediction" per run: hidden, and the
    // figures get the height.
    m_predictionBox->setVisible(withPrediction != c.runs.end());
    QStringList columns;
    if (withPrediction != c.runs.end())
        for (const auto& row : withPrediction->predictionCheck->rows)
            columns << QStringLiteral("%1 (%2)").arg(
                row.key == std::string_view("peak_mem_gib") ? tr("peak memory") : figureLabel(row.key, row.label),
                QString::fromUtf8(row.unit));
    else
        columns << tr("step time (ms)") << tr("peak memory (GiB)") << tr("effective tokens/s/GPU (tok/s)") << tr("MFU (%)");
    columns << tr("Predicted for");
    m_predictions->setColumnCount(static_cast<int>(columns.size()));
    m_predictions->setRowCount(static_cast<int>(c.runs.size()) + 1);
    QStringList rows;
    for (int i = 0; i < static_cast<int>(c.runs.size()); ++i) {
        const auto& r = c.runs[static_cast<size_t>(i)];
        rows << text(r.label());
        if (!r.predictionCheck) {
            auto* item = new QTableWidgetItem(tr("no prediction (not launched from a plan)"));
            item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
            m_predictions->setItem(i, 0, item);
            m_predictions->setSpan(i, 0, 1, static_cast<int>(columns.size()));
            continue;
        }
        const auto& check = *r.predictionCheck;
        for (int col = 0; col < static_cast<int>(check.rows.size()); ++col) {
            const auto& figure = check.rows[static_cast<size_t>(col)];
            QString cell = formatNumber(figure.predicted, figure.decimals) + QStringLiteral(" / ") +
                           formatNumber(figure.measured, figure.decimals);
            auto* item = new QTableWidgetItem;
            if (figure.errorPct) {
                cell += QStringLiteral(" (%1%2 %)").arg(*figure.errorPct >= 0 ? QStringLiteral("+") : QString())
                            .arg(*figure.errorPct, 0, 'f', 1);
                item->setData(Qt::UserRole, *figure.errorPct);  // the signed error, for code reading the table
            }
            item->setText(cell);
            item->setToolTip(tr("predicted %1, measured %2 %3").arg(formatNumber(figure.predicted, figure.decimals),
                                                                   formatNumber(figure.measured, figure.decimals),
                                                                   QString::fromUtf8(figure.unit)));
            m_predictions->setItem(i, col, item);
        }
        const auto& p = check.prediction;
        auto* source = new QTableWidgetItem(tr("%1 × %2").arg(p.gpus).arg(p.hardware.empty() ? tr("unknown") : text(p.hardware)));
        source->setToolTip(text(p.source) + (p.calibration.empty() ? QString() : QStringLiteral("; ") + text(p.calibration)) +
                           (check.note.empty() ? QString() : QStringLiteral("\n") + text(check.note)));
        if (!check.note.empty())
            source->setForeground(QColor(0xd6, 0x27, 0x28));
        m_predictions->setItem(i, static_cast<int>(columns.size()) - 1, source);
    }
    const int maeRow = static_cast<int>(c.runs.size());
    rows << tr("mean |error|");
    for (int col = 0; col < static_cast<int>(c.predictionAccuracy.size()); ++col) {
        const auto& a = c.predictionAccuracy[static_cast<size_t>(col)];
        auto* item = new QTableWidgetItem(a.runs ? tr("%1 % (%n run(s))", nullptr, static_cast<int>(a.runs))
                                                       .arg(a.meanAbsErrorPct, 0, 'f', 1)
                                                 : QStringLiteral("—"));
        QFont bold = item->font();
        bold.setBold(true);
        item->setFont(bold);
        m_predictions->setItem(maeRow, col, item);
    }
    m_predictions->setHorizontalHeaderLabels(columns);
    m_predictions->setVerticalHeaderLabels(rows);
    m_predictions->resizeColumnsToContents();
}

core::Result<QStringList> CompareView::exportCharts(const QString& directory)
{
    if (!m_comparison)
        return core::makeError(core::ErrorCode::InvalidArgument, "compare runs first: there are no charts to export");
    if (!QDir().mkpath(directory))
        return core::makeError(core::ErrorCode::IoError, "cannot create the folder", directory.toStdString());
    const QDir dir(directory);
    const core::ChartOptions options = m_charts->chartOptions();
    QStringList written;
    for (core::ChartMetric metric : core::chartMetrics()) {
        const QString stem = QString::fromLatin1(core::chartMetricKey(metric));
        // PNG: the chart as the view draws it, at a size fit for a review page, twice the pixels.
        const QImage image = m_charts->renderChart(static_cast<CompareChartPanel::Chart>(metric), QSize(900, 420));
        const QString png = dir.filePath(stem + QStringLiteral(".png"));
        QSaveFile pngFile(png);
        if (!pngFile.open(QIODevice::WriteOnly) || !image.save(&pngFile, "PNG") || !pngFile.commit())
            return core::makeError(core::ErrorCode::IoError, "cannot write the PNG", png.toStdString());
        written << png;
        // SVG: core's renderer with the same settings (x axis, smoothing, log scale, shading).
        const QString svg = dir.filePath(stem + QStringLiteral(".svg"));
        if (auto r = core::writeFileAtomically(svg.toStdString(), core::renderChartSvg(*m_comparison, metric, options));
            !r)
            return r.error();
        written << svg;
    }
    return written;
}

core::Result<QStringList> CompareView::exportReport(const QString& directory)
{
    auto charts = exportCharts(directory);
    if (!charts)
        return charts.error();
    core::ReportOptions options;
    options.chart = m_charts->chartOptions();
    options.imageExtension = "png";
    auto report = core::writeComparisonReport(*m_comparison, directory.toStdString(), options);
    if (!report)
        return report.error();
    QStringList written{QString::fromStdString(report->front())};
    written << *charts;
    return written;
}

core::Result<void> CompareView::exportHtmlReport(const QString& file)
{
    if (!m_comparison)
        return core::makeError(core::ErrorCode::InvalidArgument, "compare runs first: there is no report to export");
    core::ReportOptions options;
    options.chart = m_charts->chartOptions();
    return core::writeComparisonHtml(*m_comparison, file.toStdString(), options);
}

void CompareView::chooseAndExport(ExportKind kind)
{
    QStringList written;
    QString where;
    if (kind == ExportKind::HtmlReport) {
        where = QFileDialog::getSaveFileName(this, tr("Save the comparison report"), QStringLiteral("comparison.html"),
                                             tr("HTML report (*.html *.htm)"));
        if (where.isEmpty())
            return;
        if (!core::isHtmlReportPath(where.toStdString()))
            where += QStringLiteral(".html");
        if (auto r = exportHtmlReport(where); !r) {
            QMessageBox::warning(this, tr("Export failed"), text(r.error().toString()));
            return;
        }
        written << where;
    } else {
        const bool report = kind == ExportKind::MarkdownReport;
        where = QFileDialog::getExistingDirectory(
            this, report ? tr("Folder for the comparison report") : tr("Folder for the chart images"));
        if (where.isEmpty())
            return;
        auto files = report ? exportReport(where) : exportCharts(where);
        if (!files) {
            QMessageBox::warning(this, tr("Export failed"), text(files.error().toString()));
            return;
        }
        written = *files;
    }
    QMessageBox::information(this, tr("Exported"),
                             tr("Wrote %n file(s) to %1.", nullptr, static_cast<int>(written.size())).arg(where));
}

void CompareView::fitBanner()
{
    // As tall as its text, up to six lines; past that it scrolls.
    const int maxHeight = m_banner->fontMetrics().lineSpacing() * 6 + 16;
    const int width = std::max(200, m_bannerScroll->viewport()->width());
    const int needed = m_banner->heightForWidth(width) + 2;
    m_bannerScroll->setFixedHeight(std::min(needed, maxHeight));
}

void CompareView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    fitBanner();
}

}  // namespace wb::ui
