#include "ui/compare_chart_panel.h"

#include "core/compare/run_comparison.h"
#include "core/compare/smoothing.h"
#include "ui/metric_chart_view.h"
#include "ui/step_series_buffer.h"

#include <QAbstractAxis>
#include <QChart>
#include <QGridLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>

#include <cmath>

namespace wb::ui {
namespace {

// Tableau-10, the run charts' palette; runs past ten reuse it.
const QList<QColor> kPalette = {
    QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};

constexpr int kRawAlpha = 60;  // the raw series stays visible behind the smoothed one, but faint

double metricValue(CompareChartPanel::Chart chart, const core::StepRecord& s, int worldSize)
{
    switch (chart) {
    case CompareChartPanel::Chart::StepTime: return s.stepMs;
    case CompareChartPanel::Chart::Throughput:
        // Recomputed from the definition rather than read from the record, so every run's line
        // means the same thing as the figures table (effective tokens / s / GPU).
        return s.stepMs > 0.0 ? static_cast<double>(s.effectiveTokens) / (s.stepMs / 1000.0) / worldSize
                              : std::nan("");
    case CompareChartPanel::Chart::Loss: return s.loss;
    case CompareChartPanel::Chart::Memory: return s.memPeakGib;
    case CompareChartPanel::Chart::ChartCount: break;
    }
    return std::nan("");
}

}  // namespace

CompareChartPanel::CompareChartPanel(QWidget* parent) : QWidget(parent)
{
    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(StepSeriesBuffer::kDefaultCoalesceInterval);
    connect(&m_redrawTimer, &QTimer::timeout, this, &CompareChartPanel::redraw);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(6);
    rebuildCharts();
}

void CompareChartPanel::setComparison(const core::Comparison* comparison)
{
    m_comparison = comparison;
    rebuildCharts();
    redraw();  // now, not coalesced: the caller (and a test) expects the charts to match at once
}

void CompareChartPanel::setXAxis(XAxis axis)
{
    if (axis == m_xAxis)
        return;
    m_xAxis = axis;
    redraw();
}

void CompareChartPanel::setSmoothing(double weight)
{
    m_smoothing = std::clamp(weight, 0.0, 0.99);
    m_redrawTimer.start();  // a slider drag sends many values: draw the last one
}

qsizetype CompareChartPanel::drawnPoints() const
{
    qsizetype total = 0;
    for (auto* chart : m_charts)
        for (int i = 0; i < chart->seriesCount(); ++i)
            total += chart->series(i)->count();
    return total;
}

void CompareChartPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    m_redrawTimer.start();  // the decimation target changed
}

void CompareChartPanel::rebuildCharts()
{
    // The series set depends on the runs, and MetricChartView fixes its series at construction.
    qDeleteAll(m_charts);
    m_charts.clear();
    QList<MetricSeriesSpec> specs;
    if (m_comparison) {
        for (size_t i = 0; i < m_comparison->runs.size(); ++i) {
            QColor color = kPalette[static_cast<int>(i) % kPalette.size()];
            const QString label = QString::fromStdString(m_comparison->runs[i].label());
            QColor faint = color;
            faint.setAlpha(kRawAlpha);
            specs.append({label + tr(" (raw)"), faint});
            specs.append({label, color});
        }
    }
    const struct {
        QString title, yTitle, name;
        bool fromZero;
    } kCharts[] = {
        {tr("Step time"), tr("Step time (ms)"), QStringLiteral("compareStepTimeChart"), true},
        {tr("Throughput"), tr("Effective tokens/s/GPU"), QStringLiteral("compareThroughputChart"), true},
        {tr("Loss"), tr("Loss"), QStringLiteral("compareLossChart"), false},
        {tr("Peak memory per GPU"), tr("Memory (GiB)"), QStringLiteral("compareMemoryChart"), true},
    };
    auto* grid = static_cast<QGridLayout*>(layout());
    int index = 0;
    for (const auto& c : kCharts) {
        auto* view = new MetricChartView(c.title, c.yTitle, specs, c.fromZero, this);
        view->setObjectName(c.name);
        for (int s = 0; s < view->seriesCount(); s += 2) {
            QPen pen = view->series(s)->pen();
            pen.setWidthF(1.0);
            view->series(s)->setPen(pen);
            for (auto* marker : view->chart()->legend()->markers(view->series(s)))
                marker->setVisible(false);  // one legend entry per run
        }
        grid->addWidget(view, index / 2, index % 2);
        m_charts.append(view);
        ++index;
    }
}

void CompareChartPanel::redraw()
{
    m_redrawTimer.stop();
    const QString xTitle = m_xAxis == XAxis::Step       ? tr("Step")
                           : m_xAxis == XAxis::WallTime ? tr("Wall time since the first step (s)")
                                                        : tr("Effective tokens seen");
    for (int c = 0; c < m_charts.size(); ++c) {
        MetricChartView* view = m_charts[c];
        for (auto* axis : view->chart()->axes(Qt::Horizontal))
            axis->setTitleText(xTitle);
        if (!m_comparison) {
            view->clearPoints();
            continue;
        }
        const int columns = view->plotColumns();
        for (size_t r = 0; r < m_comparison->runs.size(); ++r) {
            const core::ComparedRun& run = m_comparison->runs[r];
            const auto& steps = run.steps;
            std::vector<double> ys;
            ys.reserve(steps.size());
            for (const auto& s : steps)
                ys.push_back(metricValue(static_cast<Chart>(c), s, run.worldSize()));
            const std::vector<double> smooth = core::emaDebiased(ys, m_smoothing);
            QList<QPointF> raw, smoothed;
            raw.reserve(static_cast<qsizetype>(steps.size()));
            smoothed.reserve(static_cast<qsizetype>(steps.size()));
            double tokensSeen = 0.0;
            const double t0 = steps.empty() ? 0.0 : steps.front().time;
            for (size_t i = 0; i < steps.size(); ++i) {
                tokensSeen += static_cast<double>(steps[i].effectiveTokens);
                const double x = m_xAxis == XAxis::Step       ? static_cast<double>(steps[i].step)
                                 : m_xAxis == XAxis::WallTime ? steps[i].time - t0
                                                              : tokensSeen;
                if (!std::isfinite(ys[i]))
                    continue;  // a diverged loss is a gap, not a point at 0
                raw.append(QPointF(x, ys[i]));
                smoothed.append(QPointF(x, smooth[i]));
            }
            const int rawIndex = static_cast<int>(2 * r);
            view->setPoints(rawIndex, StepSeriesBuffer::decimate(raw, columns));
            view->series(rawIndex)->setVisible(m_smoothing > 0.0);
            view->setPoints(rawIndex + 1, StepSeriesBuffer::decimate(m_smoothing > 0.0 ? smoothed : raw, columns));
        }
        view->rescale();
    }
}

}  // namespace wb::ui
