#include "ui/compare_chart_panel.h"

#include "core/compare/run_comparison.h"
#include "ui/background_task.h"
#include "ui/compare_lines_item.h"
#include "ui/metric_chart_view.h"
#include "ui/step_series_buffer.h"

#include <QAbstractAxis>
#include <QChart>
#include <QCoreApplication>
#include <QGridLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace wb::ui {
namespace {

// Tableau-10, the run charts' palette; runs past ten reuse it.
const QList<QColor> kPalette = {
    QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};

constexpr int kRawAlpha = 60;           // the raw series stays visible behind the smoothed one, but faint
constexpr double kHoverRadius = 6.0;    // pixels from a painted point that still count as "on it"
// Above QtCharts' grid (z 2) and below its axes (3), series (4) and legend (5): bands sit behind
// the lines, the lines above the (empty, legend-only) series and below the legend.
constexpr qreal kBandsZ = 2.5;
constexpr qreal kLinesZ = 4.5;

QColor runColor(size_t run)
{
    return kPalette[static_cast<int>(run % static_cast<size_t>(kPalette.size()))];
}

std::pair<double, double> axisRange(QAbstractAxis* axis)
{
    if (auto* log = qobject_cast<QLogValueAxis*>(axis))
        return {log->min(), log->max()};
    if (auto* linear = qobject_cast<QValueAxis*>(axis))
        return {linear->min(), linear->max()};
    return {0.0, 1.0};
}

QString formatValue(double v)
{
    return QString::number(v, 'g', 7);  // steps and token counts whole, times and losses to 7 digits
}

}  // namespace

CompareChartPanel::CompareChartPanel(QWidget* parent) : QWidget(parent)
{
    m_fitTimer.setSingleShot(true);
    m_fitTimer.setInterval(StepSeriesBuffer::kDefaultCoalesceInterval);
    connect(&m_fitTimer, &QTimer::timeout, this, &CompareChartPanel::checkFit);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(6);
    // The views live as long as the panel: a new comparison changes their legend and lines only,
    // so their plot widths (the decimation target the loading thread computes for) stay known.
    for (int index = 0; index < static_cast<int>(Chart::ChartCount); ++index) {
        auto* view = makeView(index, this);
        grid->addWidget(view, index / 2, index % 2);
        view->viewport()->setMouseTracking(true);
        view->viewport()->installEventFilter(this);
        m_charts.append(view);
        ChartItems items;
        items.bands = new CompareBandsItem(view->chart());
        items.bands->setZValue(kBandsZ);
        m_items.append(items);
        connect(view->chart(), &QChart::plotAreaChanged, this, [this, index] {
            updateMapping(m_charts[index], m_items[index]);
            m_fitTimer.start();  // a new plot width may want other decimation
        });
    }
}

CompareChartPanel::~CompareChartPanel()
{
    // CPU-only work on copies: its result is dropped once this panel is gone, but the thread
    // must not outlive the application (runInBackground).
    if (m_worker)
        m_worker->wait();
}

void CompareChartPanel::setComparison(std::shared_ptr<const core::Comparison> comparison,
                                      std::shared_ptr<const core::ChartSet> lines)
{
    m_comparison = std::move(comparison);
    ++m_generation;  // whatever is being computed is for another comparison
    const size_t runCount = m_comparison ? m_comparison->runs.size() : 0;
    m_hidden.assign(runCount, false);
    for (int c = 0; c < m_charts.size(); ++c)
        setLegend(m_charts[c]);
    if (!m_comparison) {
        m_lines.reset();
        for (int c = 0; c < m_charts.size(); ++c) {
            qDeleteAll(m_items[c].runs);
            m_items[c].runs.clear();
            m_items[c].bands->setBands({});
            m_charts[c]->clearPoints();
        }
        return;
    }
    if (lines && lines->charts[0].runs.size() == runCount && fits(lines->request))
        showLines(std::move(lines));
    else
        requestLines();
}

void CompareChartPanel::setXAxis(XAxis axis)
{
    if (axis == m_xAxis)
        return;
    m_xAxis = axis;
    requestLines();
}

void CompareChartPanel::setSmoothing(double weight)
{
    m_smoothing = std::clamp(weight, 0.0, 0.99);
    ++m_generation;
    m_fitTimer.start();  // a slider drag sends many values: compute for the last one
}

void CompareChartPanel::setLogScale(bool on)
{
    if (on == m_logScale)
        return;
    m_logScale = on;
    requestLines();  // the axes switch when the lines for them arrive
}

void CompareChartPanel::setShadeSteadyWindow(bool on)
{
    if (on == m_shade)
        return;
    m_shade = on;
    updateVisibility();  // the windows are part of the lines already: nothing to compute
}

void CompareChartPanel::setRunVisible(int run, bool visible)
{
    if (run < 0 || static_cast<size_t>(run) >= m_hidden.size() || m_hidden[static_cast<size_t>(run)] == !visible)
        return;
    m_hidden[static_cast<size_t>(run)] = !visible;
    updateVisibility();
}

bool CompareChartPanel::isRunVisible(int run) const
{
    return run >= 0 && static_cast<size_t>(run) < m_hidden.size() && !m_hidden[static_cast<size_t>(run)];
}

core::ChartOptions CompareChartPanel::chartOptions() const
{
    core::ChartOptions options;
    options.xAxis = static_cast<core::ChartXAxis>(m_xAxis);
    options.smoothing = m_smoothing;
    options.logY = m_logScale;
    options.shadeSteadyWindow = m_shade;
    return options;
}

core::ChartLinesRequest CompareChartPanel::currentRequest() const
{
    core::ChartLinesRequest request;
    request.xAxis = static_cast<core::ChartXAxis>(m_xAxis);
    request.smoothing = m_smoothing;
    request.logY = m_logScale;
    for (int c = 0; c < m_charts.size(); ++c)
        request.columns[static_cast<size_t>(c)] = m_charts[c]->plotColumns();
    return request;
}

bool CompareChartPanel::fits(const core::ChartLinesRequest& computed) const
{
    const core::ChartLinesRequest now = currentRequest();
    if (computed.xAxis != now.xAxis || computed.smoothing != now.smoothing || computed.logY != now.logY)
        return false;
    // Decimated for a plot a few pixels wider or narrower looks the same (two points per column
    // either way); recomputing for every pixel of a resize drag would not.
    for (size_t c = 0; c < now.columns.size(); ++c)
        if (std::abs(computed.columns[c] - now.columns[c]) > std::max(8, now.columns[c] / 10))
            return false;
    return true;
}

bool CompareChartPanel::isUpToDate() const
{
    if (!m_comparison)
        return true;
    return !m_computing && !m_fitTimer.isActive() && m_lines && fits(m_lines->request);
}

void CompareChartPanel::requestLines()
{
    ++m_generation;
    if (!m_comparison || m_computing)
        return;  // an in-flight result is now stale: linesComputed() starts the next computation
    startComputation();
}

void CompareChartPanel::startComputation()
{
    m_fitTimer.stop();
    m_computing = true;
    m_inFlight = currentRequest();
    m_worker = runInBackground(
        this, QStringLiteral("compare-lines"),
        [comparison = m_comparison, request = m_inFlight] {
            return std::make_shared<const core::ChartSet>(core::computeChartSet(*comparison, request));
        },
        [this, generation = m_generation](std::shared_ptr<const core::ChartSet> lines) {
            linesComputed(std::move(lines), generation);
        });
}

void CompareChartPanel::linesComputed(std::shared_ptr<const core::ChartSet> lines, uint64_t generation)
{
    m_computing = false;
    if (generation != m_generation) {  // settings or the comparison changed meanwhile
        if (m_comparison)
            startComputation();
        return;
    }
    showLines(std::move(lines));
}

void CompareChartPanel::checkFit()
{
    if (!m_comparison)
        return;
    if (m_computing) {
        if (!fits(m_inFlight))
            ++m_generation;  // the smoothing moved, or a resize: the result on its way will not fit
        return;
    }
    if (!m_lines || !fits(m_lines->request))
        requestLines();
}

void CompareChartPanel::showLines(std::shared_ptr<const core::ChartSet> lines)
{
    m_lines = std::move(lines);
    for (int c = 0; c < m_charts.size(); ++c)
        applyChart(m_charts[c], m_items[c], m_lines, c);
    updateVisibility();
    emit linesShown();
}

void CompareChartPanel::applyChart(MetricChartView* view, ChartItems& items,
                                   const std::shared_ptr<const core::ChartSet>& set, int c) const
{
    const core::ChartLines& chart = set->charts[static_cast<size_t>(c)];
    view->setLogScale(set->request.logY);
    static const char* const kXTitles[] = {QT_TR_NOOP("Step"), QT_TR_NOOP("Wall time since the first step (s)"),
                                           QT_TR_NOOP("Effective tokens seen")};  // core::chartXAxisTitle's words
    view->axisX()->setTitleText(tr(kXTitles[static_cast<int>(set->request.xAxis)]));
    const core::ChartBounds& b = chart.bounds;
    if (b.empty())
        view->clearPoints();
    else
        view->fitAxes(b.xMin, b.xMax, b.yMin, b.yMax, b.yPositiveMin);
    while (items.runs.size() > static_cast<qsizetype>(chart.runs.size()))
        delete items.runs.takeLast();
    while (items.runs.size() < static_cast<qsizetype>(chart.runs.size())) {
        auto* item = new CompareLinesItem(runColor(static_cast<size_t>(items.runs.size())), kRawAlpha, view->chart());
        item->setZValue(kLinesZ);
        items.runs.append(item);
    }
    for (int r = 0; r < items.runs.size(); ++r)
        items.runs[r]->setLines(set, c, r);
    updateMapping(view, items);
}

void CompareChartPanel::updateMapping(MetricChartView* view, ChartItems& items) const
{
    PlotMapping mapping;
    mapping.plot = view->chart()->plotArea();
    std::tie(mapping.x0, mapping.x1) = axisRange(view->axisX());
    std::tie(mapping.y0, mapping.y1) = axisRange(view->axisY());
    mapping.logY = view->logScale();
    for (auto* item : items.runs)
        item->setMapping(mapping);
    items.bands->setMapping(mapping);
}

void CompareChartPanel::updateVisibility()
{
    const size_t runCount = m_comparison ? m_comparison->runs.size() : 0;
    const int alpha = std::max(14, static_cast<int>(40 / std::max<size_t>(runCount, 1)));
    for (int c = 0; c < m_charts.size(); ++c) {
        ChartItems& items = m_items[c];
        std::vector<CompareBandsItem::Band> bands;
        for (int r = 0; r < items.runs.size(); ++r) {
            const bool shown = static_cast<size_t>(r) >= m_hidden.size() || !m_hidden[static_cast<size_t>(r)];
            items.runs[r]->setVisible(shown);
            const core::ChartRunLines* lines = items.runs[r]->lines();
            if (shown && m_shade && lines && lines->hasWindow()) {
                QColor color = runColor(static_cast<size_t>(r));
                color.setAlpha(alpha);
                bands.push_back({lines->windowFrom, lines->windowTo, color});
            }
        }
        items.bands->setBands(std::move(bands));
        // The legend entry of a hidden run fades; clicking it again brings the run back.
        auto* view = m_charts[c];
        for (int r = 0; r < view->seriesCount() && static_cast<size_t>(r) < runCount; ++r)
            for (auto* marker : view->chart()->legend()->markers(view->series(r))) {
                QColor label = palette().color(QPalette::Text);
                if (m_hidden[static_cast<size_t>(r)])
                    label.setAlpha(90);
                marker->setLabelBrush(label);
                QColor swatch = runColor(static_cast<size_t>(r));
                if (m_hidden[static_cast<size_t>(r)])
                    swatch.setAlpha(60);
                marker->setBrush(swatch);
            }
    }
}

qsizetype CompareChartPanel::shadedBands(Chart chart) const
{
    const int index = static_cast<int>(chart);
    return index < m_items.size() ? static_cast<qsizetype>(m_items[index].bands->bandCount()) : 0;
}

const core::ChartLines* CompareChartPanel::lines(Chart chart) const
{
    return m_lines ? &m_lines->charts[static_cast<size_t>(chart)] : nullptr;
}

CompareLinesItem* CompareChartPanel::runItem(Chart chart, int run) const
{
    const auto& runs = m_items.value(static_cast<int>(chart)).runs;
    return run >= 0 && run < runs.size() ? runs[run] : nullptr;
}

qsizetype CompareChartPanel::drawnPoints() const
{
    return m_lines ? static_cast<qsizetype>(m_lines->points()) : 0;
}

QString CompareChartPanel::toolTipAt(Chart chart, QPoint pos) const
{
    const int c = static_cast<int>(chart);
    if (!m_lines || !m_comparison || c >= m_charts.size())
        return {};
    MetricChartView* view = m_charts[c];
    const QPointF at = view->chart()->mapFromScene(view->mapToScene(pos));
    const ChartItems& items = m_items[c];
    std::optional<CompareLinesItem::Hit> best;
    int bestRun = -1;
    for (int r = 0; r < items.runs.size(); ++r) {
        if (!items.runs[r]->isVisible())
            continue;
        const auto hit = items.runs[r]->nearest(at, kHoverRadius);
        if (hit && (!best || hit->distance <= best->distance)) {  // <=: a later run is painted on top
            best = hit;
            bestRun = r;
        }
    }
    // (Until the lines of a new comparison arrive the items still show the previous one's runs.)
    if (!best || static_cast<size_t>(bestRun) >= m_comparison->runs.size() ||
        m_lines->charts[0].runs.size() != m_comparison->runs.size())
        return {};
    const core::ChartRunLines* lines = items.runs[bestRun]->lines();
    const core::ChartLine& line = best->raw ? lines->raw : lines->smooth;
    const double smoothing = m_lines->request.smoothing;
    const QString which = smoothing <= 0.0 ? QString() : best->raw ? tr(" (raw)") : tr(" (smoothed)");
    return tr("%1\n%2: %3\n%4: %5%6")
        .arg(QString::fromStdString(m_comparison->runs[static_cast<size_t>(bestRun)].label()),
             view->axisX()->titleText(), formatValue(line.x[best->index]), view->axisY()->titleText(),
             formatValue(line.y[best->index]), which);
}

bool CompareChartPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::MouseMove) {
        for (int c = 0; c < m_charts.size(); ++c) {
            if (watched != m_charts[c]->viewport())
                continue;
            auto* mouse = static_cast<QMouseEvent*>(event);
            const QString text = toolTipAt(static_cast<Chart>(c), mouse->position().toPoint());
            if (text.isEmpty())
                QToolTip::hideText();
            else
                QToolTip::showText(mouse->globalPosition().toPoint(), text, m_charts[c]->viewport());
        }
    }
    return QWidget::eventFilter(watched, event);
}

void CompareChartPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    m_fitTimer.start();  // the decimation target may have changed
}

MetricChartView* CompareChartPanel::makeView(int chartIndex, QWidget* parent) const
{
    const auto metric = static_cast<core::ChartMetric>(chartIndex);
    static const char* const kNames[] = {"compareStepTimeChart", "compareThroughputChart", "compareLossChart",
                                         "compareMemoryChart"};
    // Literal tr() texts per chart (lupdate does not see core's strings): the same words as
    // core::chartMetricTitle / chartMetricYTitle, which the exported reports use.
    static const char* const kTitles[] = {QT_TR_NOOP("Step time"), QT_TR_NOOP("Throughput (effective tokens)"),
                                          QT_TR_NOOP("Loss"), QT_TR_NOOP("Peak memory per GPU")};
    static const char* const kYTitles[] = {QT_TR_NOOP("Step time (ms)"), QT_TR_NOOP("Tokens/s/GPU"), QT_TR_NOOP("Loss"),
                                           QT_TR_NOOP("Memory (GiB)")};
    auto* view = new MetricChartView(tr(kTitles[chartIndex]), tr(kYTitles[chartIndex]), {},
                                     core::chartMetricFromZero(metric), parent);
    view->setObjectName(QString::fromLatin1(kNames[chartIndex]));
    view->setLogScale(m_logScale);
    return view;
}

void CompareChartPanel::setLegend(MetricChartView* view)
{
    // One empty series per run, for its legend entry (the lines are items): click = hide / show.
    // The same runs again (a new baseline, a refresh) keep their entries: rebuilding 20 legend
    // entries costs QtCharts a relayout of the legend.
    QList<MetricSeriesSpec> specs;
    if (m_comparison)
        for (size_t i = 0; i < m_comparison->runs.size(); ++i)
            specs.append({QString::fromStdString(m_comparison->runs[i].label()), runColor(i)});
    bool same = specs.size() == view->seriesCount();
    for (int r = 0; same && r < view->seriesCount(); ++r)
        same = view->series(r)->name() == specs[r].name;
    if (same)
        return;
    view->setSeriesSpecs(specs);
    for (int r = 0; r < view->seriesCount(); ++r)
        for (auto* marker : view->chart()->legend()->markers(view->series(r)))
            connect(marker, &QLegendMarker::clicked, this, [this, r] { setRunVisible(r, !isRunVisible(r)); });
}

QImage CompareChartPanel::renderChart(Chart chart, QSize size, qreal devicePixelRatio) const
{
    // A fresh view at the export size (the on-screen one may be small): laid out offscreen, its
    // lines decimated to its own width, then grabbed. Every run is drawn (as in the SVG export).
    const int c = static_cast<int>(chart);
    std::unique_ptr<MetricChartView> view(makeView(c, nullptr));
    QList<MetricSeriesSpec> specs;
    if (m_comparison)
        for (size_t i = 0; i < m_comparison->runs.size(); ++i)
            specs.append({QString::fromStdString(m_comparison->runs[i].label()), runColor(i)});
    view->setSeriesSpecs(specs);
    view->setAttribute(Qt::WA_DontShowOnScreen);
    view->resize(size);
    view->show();
    QCoreApplication::sendPostedEvents();
    ChartItems items;
    items.bands = new CompareBandsItem(view->chart());  // owned by the chart
    items.bands->setZValue(kBandsZ);
    if (m_comparison) {
        core::ChartLinesRequest request = currentRequest();
        request.columns.fill(view->plotColumns());
        auto set = std::make_shared<const core::ChartSet>(
            core::computeChartSet(*m_comparison, request, 0, static_cast<core::ChartMetric>(c)));
        applyChart(view.get(), items, set, c);
        if (m_shade) {
            std::vector<CompareBandsItem::Band> bands;
            const size_t runCount = m_comparison->runs.size();
            const int alpha = std::max(14, static_cast<int>(40 / std::max<size_t>(runCount, 1)));
            for (size_t r = 0; r < runCount; ++r)
                if (const auto& lines = set->charts[static_cast<size_t>(c)].runs[r]; lines.hasWindow()) {
                    QColor color = runColor(r);
                    color.setAlpha(alpha);
                    bands.push_back({lines.windowFrom, lines.windowTo, color});
                }
            items.bands->setBands(std::move(bands));
        }
        QCoreApplication::sendPostedEvents();
        updateMapping(view.get(), items);  // the plot area after the axes' new labels
    }
    // QGraphicsView::render scales the view's rect onto the whole target: the higher resolution
    // comes out as vectors drawn larger, not as a blown-up bitmap.
    QImage image(size * devicePixelRatio, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    view->render(&painter, QRectF(image.rect()), view->viewport()->rect());
    painter.end();
    image.setDevicePixelRatio(devicePixelRatio);
    return image;
}

}  // namespace wb::ui
