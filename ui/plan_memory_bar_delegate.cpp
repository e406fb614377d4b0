// PlanMemoryBarDelegate: the segments are proportional to GiB / HBM; a total beyond HBM (which the
// search never ranks, but a user catalog might produce) is clipped and drawn red.
#include "ui/plan_memory_bar_delegate.h"

#include "ui/plan_layout_model.h"

#include <QApplication>
#include <QPainter>

#include <algorithm>
#include <array>

namespace wb::ui {

PlanMemoryBarDelegate::PlanMemoryBarDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QColor PlanMemoryBarDelegate::categoryColor(int index)
{
    static const std::array<QColor, 5> colors = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b),
                                                 QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f),
                                                 QColor(0xba, 0xb0, 0xac)};
    return colors[size_t(std::clamp(index, 0, int(colors.size()) - 1))];
}

void PlanMemoryBarDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    const QVariantList parts = index.data(PlanLayoutModel::MemoryRole).toList();
    if (parts.size() < 6 || parts.last().toDouble() <= 0) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem background = option;
    initStyleOption(&background, index);
    background.text.clear();
    QApplication::style()->drawControl(QStyle::CE_ItemViewItem, &background, painter, option.widget);

    const double hbm = parts.last().toDouble();
    const QRectF bar = QRectF(option.rect).adjusted(3, 4, -3, -4);
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, false);
    painter->fillRect(bar, option.palette.color(QPalette::Base).darker(108));
    double x = bar.left();
    double total = 0;
    for (int i = 0; i < 5; ++i) {
        const double gib = parts[i].toDouble();
        total += gib;
        const double w = std::min(bar.right() - x, bar.width() * gib / hbm);
        if (w <= 0)
            continue;
        painter->fillRect(QRectF(x, bar.top(), w, bar.height()), categoryColor(i));
        x += w;
    }
    painter->setPen(QPen(total > hbm ? QColor(Qt::red) : option.palette.color(QPalette::Mid), 1));
    painter->drawRect(bar);
    if (m_headroom > 0) {
        const double tick = bar.left() + bar.width() * (1.0 - m_headroom);
        painter->setPen(QPen(option.palette.color(QPalette::Text), 1, Qt::DashLine));
        painter->drawLine(QPointF(tick, bar.top() - 2), QPointF(tick, bar.bottom() + 2));
    }
    const QString text = tr("%1 / %2 GiB").arg(total, 0, 'f', 1).arg(hbm, 0, 'f', 0);
    QFont font = option.font;
    font.setPointSizeF(font.pointSizeF() * 0.9);
    painter->setFont(font);
    const QRectF textRect = bar.adjusted(4, 0, -4, 0);
    painter->setPen(QColor(Qt::white));
    painter->drawText(textRect.translated(1, 1), Qt::AlignLeft | Qt::AlignVCenter, text);
    painter->setPen(QColor(Qt::black));
    painter->drawText(textRect, Qt::AlignLeft | Qt::AlignVCenter, text);
    painter->restore();
}

QSize PlanMemoryBarDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const
{
    const QSize base = QStyledItemDelegate::sizeHint(option, index);
    return {std::max(base.width(), 200), std::max(base.height(), option.fontMetrics.height() + 10)};
}

}  // namespace wb::ui
