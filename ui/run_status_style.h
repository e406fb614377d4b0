// How a run status word looks (colour, user-facing label) — shared by the run list and the charts
// header so both say the same thing the same way. Any thread (pure).
#pragma once

#include <QColor>
#include <QString>

namespace wb::ui {

/// Colour for a status word: running blue, finished green, failed/oom red, cancelled gray, ...
QColor statusColor(const QString& status);

}  // namespace wb::ui
