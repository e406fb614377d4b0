// MetricChartView: one live line chart of a per-step metric (x = step) with titled axes, units and
// a legend. It only draws what it is given: RunChartsPanel decimates to plotColumns() first;
// CompareChartPanel draws its lines itself (CompareLinesItem) and only fits the axes here.
// Threading: GUI thread only.
#pragma once

#include <QChartView>
#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QLineSeries;
class QLogValueAxis;
class QValueAxis;
QT_END_NAMESPACE

namespace wb::ui {

struct MetricSeriesSpec {
    QString name;   ///< legend text
    QColor color;
    Qt::PenStyle style = Qt::SolidLine;  ///< dashed for a line that may lie under another
};

class MetricChartView : public QChartView {
    Q_OBJECT

public:
    /// `yFromZero`: the y axis starts at 0 (quantities like time and memory), else it hugs the data.
    MetricChartView(const QString& title, const QString& yTitle, const QList<MetricSeriesSpec>& series,
                    bool yFromZero, QWidget* parent = nullptr);

    /// Replaces every series by new, empty ones (attached to the axes in use). The compare charts
    /// keep their views across comparisons and only change the runs.
    void setSeriesSpecs(const QList<MetricSeriesSpec>& series);

    int seriesCount() const { return static_cast<int>(m_series.size()); }
    QLineSeries* series(int index) const { return m_series.at(index); }

    /// Replaces one series' points (already decimated). Call rescale() after the last one.
    void setPoints(int index, const QList<QPointF>& points);
    /// Fits both axes to the data (x: first..last step; y: padded, nice tick labels).
    void rescale();
    /// Fits both axes to data known without series points (drawn by items of the caller's): the
    /// same ranges rescale() would pick for points spanning these bounds. `yPositiveMin` is the
    /// smallest y > 0 (the log axis' lower decade). Does nothing for non-finite bounds.
    void fitAxes(double xMin, double xMax, double yMin, double yMax, double yPositiveMin);
    void clearPoints();
    /// The x axis reaches at least this step (the run's planned last step); 0 = just the data.
    void setXExtent(double lastStep);

    /// Width of the plot area in pixels: the decimation target.
    int plotColumns() const;

    /// A log10 y axis instead of the linear one (decade ticks). Points with y <= 0 cannot be shown
    /// on it: the caller leaves them out. Call rescale() afterwards.
    void setLogScale(bool on);
    bool logScale() const { return m_logScale; }
    /// The y axis in use (a QValueAxis, or a QLogValueAxis with setLogScale(true)).
    QAbstractAxis* axisY() const;
    QValueAxis* axisX() const { return m_axisX; }

private:
    QList<QLineSeries*> m_series;
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    QLogValueAxis* m_logAxisY = nullptr;  // attached instead of m_axisY while m_logScale
    bool m_logScale = false;
    bool m_yFromZero = false;
    double m_xExtent = 0.0;
};

}  // namespace wb::ui
