// MetricChartView: one live line chart of a per-step metric (x = step) with titled axes, units and
// a legend; optionally a second y axis on the right with its own lines, stacked areas on the left
// axis (a band per part of a whole, e.g. the step time split), a notice text over the plot (why a
// chart or a line is missing) and a hover tooltip per step. It only draws what it is given:
// RunChartsPanel decimates to plotColumns() first; CompareChartPanel draws its lines itself
// (CompareLinesItem) and only fits the axes here.
// Threading: GUI thread only.
#pragma once

#include <QChartView>
#include <QColor>
#include <QList>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <functional>

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QAreaSeries;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
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

    /// A second y axis on the right, titled `yTitle`, with these lines (replacing any earlier
    /// right-axis lines). They are not among series(): rightSeries(i). `yFromZero` as above.
    void setRightAxis(const QString& yTitle, const QList<MetricSeriesSpec>& series, bool yFromZero);
    int rightSeriesCount() const { return static_cast<int>(m_rightSeries.size()); }
    QLineSeries* rightSeries(int index) const { return m_rightSeries.at(index); }
    void setRightPoints(int index, const QList<QPointF>& points);
    QValueAxis* axisRight() const { return m_axisRight; }
    /// Shows or hides the right axis, its lines and their legend entries (e.g. MFU when the
    /// device's peak rate is unknown). Shown by default once set.
    void setRightAxisShown(bool shown);
    bool rightAxisShown() const { return m_rightShown; }

    /// Stacked areas on the left axis, bottom band first: band k fills from band k−1's upper line
    /// (the x axis for k = 0) up to its own, so each upper line holds cumulative sums. Replaces any
    /// earlier bands.
    void setStackSpecs(const QList<MetricSeriesSpec>& bands);
    int stackCount() const { return static_cast<int>(m_stackAreas.size()); }
    QAreaSeries* stackArea(int band) const { return m_stackAreas.at(band); }
    /// The band's upper line: cumulative values (sum of bands 0..band).
    QLineSeries* stackUpper(int band) const { return m_stackUppers.at(band); }
    /// Replaces every band's upper line (bottom band first; one list per band, already
    /// decimated; missing lists clear their bands).
    void setStackPoints(const QList<QList<QPointF>>& uppers);
    /// Shows or hides every band and its legend entry.
    void setStackShown(bool shown);
    bool stackShown() const { return m_stackShown; }

    /// The legend below the plot, wrapped into as many rows as the view's width needs, drawn by
    /// this view in place of QChart's legend (QLegend never wraps: it elides, or beside the plot
    /// takes a third of a narrow chart's width). Entries: the bands top band first, then the left
    /// lines, then the right ones; a hidden series has none. For charts with more entries than
    /// one line holds (the step-time split's seven bands).
    void setWrappedLegend(bool on);
    struct LegendEntry {
        QString text;
        QRectF rect;  ///< swatch and text, in chart coordinates (as chart()->plotArea())
    };
    /// The wrapped legend's entries as laid out (tests read them); empty without one.
    const QList<LegendEntry>& wrappedLegendEntries() const { return m_legendEntries; }

    /// A line of text drawn over the plot area, aligned in it by `where` (centre, or a corner):
    /// why the chart or one of its lines shows nothing. An empty text removes it.
    void setNotice(const QString& text, Qt::Alignment where = Qt::AlignCenter);
    /// A short note placed below the plot area, right-aligned on the legend's row (outside the
    /// data: "MFU n/a" must not cover points). Empty hides it.
    void setHeaderNote(const QString& text);
    QString headerNote() const;
    QString notice() const { return m_noticeText; }

    /// Called with the step (x value) under the mouse while it moves over the plot area; the text
    /// it returns is shown as the tooltip (empty: none).
    void setToolTipProvider(std::function<QString(double step)> provider);
    /// The provider's text for the point `pos` of the viewport (empty off the plot area).
    QString toolTipAt(QPoint pos) const;
    /// Fits both axes to the data (x: first..last step; y: padded, nice tick labels).
    void rescale();

    /// Every series' points at once (already decimated): left[i] for series(i), right[i] for
    /// rightSeries(i), stack[k] for band k's upper line; a missing list empties its series. The
    /// axes are fitted to them first, as rescale() would after, so each series is mapped into the
    /// plot once instead of twice when a range changes (the live charts' redraw).
    struct SeriesPoints {
        QList<QList<QPointF>> left, right, stack;
    };
    void setAllPoints(const SeriesPoints& points);
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

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    /// Deletes `lines` and makes one line per spec on the x axis and `yAxis`, in spec order.
    void replaceLines(QList<QLineSeries*>& lines, const QList<MetricSeriesSpec>& specs, QAbstractAxis* yAxis);
    void placeNotice();
    void layoutWrappedLegend();
    void fitTo(const QList<QList<QPointF>>& left, const QList<QList<QPointF>>& right);
    void setLinePoints(QLineSeries* line, const QList<QPointF>& points);

    QList<QLineSeries*> m_series;
    QList<QLineSeries*> m_rightSeries;
    QList<QAreaSeries*> m_stackAreas;
    QList<QLineSeries*> m_stackUppers;  // owned by this view (they outlive the chart's areas)
    QValueAxis* m_axisRight = nullptr;  // created by setRightAxis()
    bool m_rightFromZero = false;
    bool m_rightShown = true;
    bool m_stackShown = true;
    QString m_noticeText;
    Qt::Alignment m_noticeAlignment = Qt::AlignCenter;
    QGraphicsSimpleTextItem* m_headerNote = nullptr;  // owned by the chart
    QGraphicsRectItem* m_noticeBox = nullptr;  // owned by the chart; the text is its child
    QGraphicsSimpleTextItem* m_noticeLabel = nullptr;
    bool m_wrappedLegend = false;
    QGraphicsRectItem* m_legendBox = nullptr;  // owned by the chart; swatches and texts are its children
    QList<LegendEntry> m_legendEntries;
    std::function<QString(double)> m_toolTipProvider;
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    QLogValueAxis* m_logAxisY = nullptr;  // attached instead of m_axisY while m_logScale
    bool m_logScale = false;
    bool m_yFromZero = false;
    double m_xExtent = 0.0;
};

}  // namespace wb::ui
