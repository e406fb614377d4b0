// How a run status word looks (colour, user-facing label) — shared by the run list and the charts
// header so both say the same thing the same way. Any thread (pure).
#pragma once

#include "core/run_state.h"

#include <QColor>
#include <QString>

namespace wb::ui {

/// Colour for a status word: running blue, finished green, failed/oom red, cancelled gray, ...
QColor statusColor(const QString& status);

/// The status word as the user reads it, in the UI language ("finished" → "已完成"); unknown words
/// are shown as they are.
QString statusLabel(const QString& status);
/// The run's status message without what the state already says: status.json's "finished 60 steps"
/// beside the state "finished" reads "60 steps"; a message that is only the state word is empty.
QString statusDetail(const QString& status, const QString& message);

/// A store state as its word (core::runStateName): the words above are the store's and status.json's.
QString stateWord(core::RunState state);
QColor statusColor(core::RunState state);
QString statusLabel(core::RunState state);
QString statusDetail(core::RunState state, const QString& message);

}  // namespace wb::ui
