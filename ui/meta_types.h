// Metatype declarations for the values that cross threads in queued signals (worker -> GUI).
// Call registerMetaTypes() once before the first queued connection (MainWindow does).
// Any thread.
#pragma once

#include "core/metrics_schema.h"
#include "core/run_state.h"
#include "ui/run_row.h"

#include <QList>
#include <QMetaType>

Q_DECLARE_METATYPE(wb::core::StepRecord)
Q_DECLARE_METATYPE(wb::core::EventRecord)
Q_DECLARE_METATYPE(wb::core::GpuRecord)
Q_DECLARE_METATYPE(wb::core::RunState)
Q_DECLARE_METATYPE(wb::ui::RunRow)

namespace wb::ui {

using StepList = QList<core::StepRecord>;
using RunRowList = QList<RunRow>;
using GpuList = QList<core::GpuRecord>;

void registerMetaTypes();

}  // namespace wb::ui
