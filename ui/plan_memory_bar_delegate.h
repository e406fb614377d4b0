// PlanMemoryBarDelegate: paints a layout's predicted memory as a stacked bar — weights, grads,
// optimizer, activations, other — against the GPU's HBM (the full cell width), with the total as
// text and a tick at the search's headroom limit. Reads PlanLayoutModel::MemoryRole.
// Threading: GUI thread only.
#pragma once

#include <QColor>
#include <QStyledItemDelegate>

namespace wb::ui {

class PlanMemoryBarDelegate : public QStyledItemDelegate {
    Q_OBJECT

public:
    explicit PlanMemoryBarDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    /// Colour of category `index` (PlanLayoutModel::memoryCategories() order), for legends.
    static QColor categoryColor(int index);
    /// The fraction of HBM the search keeps free (drawn as a tick); 0 hides the tick.
    void setHeadroom(double fraction) { m_headroom = fraction; }

private:
    double m_headroom = 0.10;
};

}  // namespace wb::ui
