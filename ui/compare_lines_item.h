// CompareLinesItem / CompareBandsItem: what the compare charts draw in the plot area, as plain
// QGraphicsItems (children of the QChart) instead of QtCharts series. One CompareLinesItem per run
// and chart paints the run's raw line (faint) and its smoothed line as two QPainter polylines;
// one CompareBandsItem per chart paints every run's steady-state window. QtCharts still draws the
// axes, grid and legend. Why: 20 runs × 4 charts × (raw + smoothed) were 160 QLineSeries plus 80
// QAreaSeries bands, and QtCharts' paint of them was not linear in points (per-series item and
// geometry overhead); a polyline per line in pixel coordinates, mapped once per plot-area change
// and drawn segment by segment, is what is left. The points come decimated (core::computeChartSet,
// on a worker thread).
// PlotMapping is the value → position map of QtCharts' QValueAxis / QLogValueAxis (linear, or
// linear in log10 y), so an item's point lands where QChart::mapToPosition puts it.
// Threading: GUI thread only.
#pragma once

#include "core/compare/chart_series.h"

#include <QColor>
#include <QGraphicsItem>
#include <QPolygonF>

#include <memory>
#include <optional>
#include <vector>

namespace wb::ui {

struct PlotMapping {
    QRectF plot;  ///< the chart's plot area, in chart coordinates
    double x0 = 0.0, x1 = 1.0, y0 = 0.0, y1 = 1.0;  ///< axis ranges (y in data units, also when log)
    bool logY = false;

    QPointF map(double x, double y) const;
    double mapX(double x) const;
    bool operator==(const PlotMapping&) const = default;
};

class CompareLinesItem : public QGraphicsItem {
public:
    CompareLinesItem(QColor color, int rawAlpha, QGraphicsItem* parent);

    /// The run's lines in `set` (chart `chart`, run `run`); the item keeps `set` alive.
    void setLines(std::shared_ptr<const core::ChartSet> set, int chart, int run);
    void setMapping(const PlotMapping& mapping);
    const core::ChartRunLines* lines() const;
    /// The smoothed (or, with `raw`, the raw) line in chart coordinates, as painted.
    const QPolygonF& polygon(bool raw) const;

    struct Hit {
        size_t index = 0;  ///< into lines()->raw or ->smooth
        bool raw = false;
        double distance = 0.0;  ///< pixels
    };
    /// The painted point nearest to `pos` (chart coordinates) within `radius` pixels.
    std::optional<Hit> nearest(QPointF pos, double radius) const;

    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

private:
    void ensureMapped() const;

    QColor m_color;
    int m_rawAlpha;
    std::shared_ptr<const core::ChartSet> m_set;
    int m_chart = 0;
    int m_run = 0;
    PlotMapping m_mapping;
    mutable QPolygonF m_raw, m_smooth;  // the lines in chart coordinates, for m_mapping
    mutable bool m_mapped = false;
};

class CompareBandsItem : public QGraphicsItem {
public:
    struct Band {
        double from = 0.0, to = 0.0;  ///< x, data units
        QColor color;
    };
    explicit CompareBandsItem(QGraphicsItem* parent);

    void setBands(std::vector<Band> bands);
    void setMapping(const PlotMapping& mapping);
    size_t bandCount() const { return m_bands.size(); }

    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

private:
    std::vector<Band> m_bands;
    PlotMapping m_mapping;
};

}  // namespace wb::ui
