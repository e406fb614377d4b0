// Everything `generate --from PLAN --layout N --format F` writes for one planned layout, made by
// the same two functions for the CLI (app/cli/generate_command.cpp) and the planning view's preview
// (ui/planning_view.cpp), so the preview shows byte for byte what the CLI writes (a test compares:
// ui.test_plan_view previewIsWhatGenerateWrites). planLayout: the run config for the layout, the
// generator target and the layout predicted for the runtime the format runs, with the plan's
// calibration; generateArtifacts: the format's files and, for the formats that carry one (runtime,
// megatron-bridge), prediction.json. The CLI lints the config between the two. Pure; any thread.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/generators.h"
#include "core/planner/plan_json.h"
#include "core/planner/workload.h"
#include "core/result.h"
#include "core/run_prediction.h"

#include <optional>
#include <string>

namespace wb::core::planner {

struct PlanArtifactOptions {
    int layout = 0;                           ///< index into the plan's ranked layouts (0 = the best)
    std::string manifest = "manifest.jsonl";  ///< data.manifest of the run config
    std::optional<PackedShape> packed;        ///< the real data's packed shape (`generate --workload`)
};

/// A planned layout made ready for one format's generator.
struct PlannedLayout {
    RunConfig config;  ///< the layout's run config (before configForMoeTrain: each format adapts it)
    /// For the generators: hardware, nodes, GPUs per node, model and EP overlap from the plan; the
    /// Slurm / SSH settings (hosts, account, partition, ...) at their defaults for the caller to set.
    GeneratorTarget target;
    int gpus = 0;
    RunPrediction prediction;
    /// Set when the plan ranked its layouts for the other runtime: what it predicted and what this
    /// prediction (for the runtime the format runs) says instead.
    std::string replannedNote;
};

/// Layout `options.layout` of `plan` for `format`. Errors: InvalidArgument for a layout index the
/// plan does not have (naming the range), NotFound for a model or hardware the catalog lacks.
Result<PlannedLayout> planLayout(const Catalog& catalog, const PlanFile& plan, const std::string& format,
                                 const PlanArtifactOptions& options);

/// The files `generate` writes for `format`: generateFormat's, then prediction.json for the formats
/// whose folder a launch reads it from (runtime: launch --config DIR/run.json; megatron-bridge:
/// launch --bridge DIR) when there is a prediction. Errors: what the format's generator refuses.
Result<GeneratedBundle> generateArtifacts(const std::string& format, const RunConfig& config,
                                          const GeneratorTarget& target,
                                          const std::optional<RunPrediction>& prediction);

/// True for the formats that carry prediction.json.
bool formatCarriesPrediction(const std::string& format);

}  // namespace wb::core::planner
