// Metatype declarations for the values that cross threads in queued signals (worker -> GUI).
// Call registerMetaTypes() once before the first queued connection (MainWindow does).
// Any thread.
#pragma once

#include "core/metrics_schema.h"
#include "core/run_state.h"
#include "ui/run_row.h"

#include <QList>
#include <QMetaType>
#include <QString>

namespace wb::ui {

/// What a launch asks the worker of its target for (the launch dialog's input, the sample run).
struct LaunchRequest {
    quint64 id = 0;          ///< set by RunSession::launch; progress and the result carry it
    QString target;          ///< "local", "ssh:HOST", "slurm:HOST", ...; empty = the session's default
    QString name;            ///< empty = the config's name
    QString configJson;      ///< the run config (validated by the worker before anything is created)
    QString predictionJson;  ///< the plan's prediction, stored with the run; may be empty
    /// A Megatron-Bridge job instead of a moe-train config: the folder `generate --format
    /// megatron-bridge` wrote (core/bridge/bridge_launch.h); a slurm:HOST target submits it.
    QString bridgeDir;
    QString catalogDir, userCatalogDir;  ///< the planner's catalogs (a Bridge run's model and FLOPs)
};

}  // namespace wb::ui

Q_DECLARE_METATYPE(wb::core::StepRecord)
Q_DECLARE_METATYPE(wb::core::EventRecord)
Q_DECLARE_METATYPE(wb::core::GpuRecord)
Q_DECLARE_METATYPE(wb::core::RunState)
Q_DECLARE_METATYPE(wb::ui::RunRow)
Q_DECLARE_METATYPE(wb::ui::LaunchRequest)

namespace wb::ui {

using StepList = QList<core::StepRecord>;
using RunRowList = QList<RunRow>;
using GpuList = QList<core::GpuRecord>;

void registerMetaTypes();

}  // namespace wb::ui
