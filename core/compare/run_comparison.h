// RunComparison: loads runs from the RunStore and puts them side by side — steady-state window,
// normalized figures with deltas against a baseline run, workload warnings (Critical first) and the
// config diff. The engine behind `moe-workbench-cli compare` and the GUI's compare view.
// Threading: compareRuns(RunStore&) uses the given store from the calling thread (one thread at a
// time, like the store); compareRuns(path) and buildComparison() start their own short-lived worker
// threads and join them before returning. Everything here may be called from any thread.
#pragma once

#include "core/compare/config_diff.h"
#include "core/compare/prediction_check.h"
#include "core/compare/run_figures.h"
#include "core/compare/steady_state.h"
#include "core/compare/step_series.h"
#include "core/compare/workload_fingerprint.h"
#include "core/run_store.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wb::core {

/// One run, loaded and analysed.
struct ComparedRun {
    RunSummary summary;
    std::optional<MetaRecord> meta;
    std::string configJson;
    /// All stored steps, by step (the charts need them), the fields compare reads. Shared and
    /// immutable, so a view can keep loaded runs and hand them to the next comparison as they are.
    std::shared_ptr<const StepSeries> stepData = std::make_shared<const StepSeries>();
    /// The planner's prediction, when the run was launched from a plan.
    std::optional<RunPrediction> prediction;
    /// GPU system samples ("gpu" records), oldest first; empty for runs without them.
    std::vector<GpuRecord> gpu;
    SteadyWindow window;
    RunFigures figures;
    WorkloadFingerprint fingerprint;
    /// Predicted vs measured (set by buildComparison when there is a prediction).
    std::optional<PredictionCheck> predictionCheck;

    const StepSeries& steps() const { return *stepData; }
    void setSteps(StepSeries steps) { stepData = std::make_shared<const StepSeries>(std::move(steps)); }
    void setSteps(const std::vector<StepRecord>& steps) { setSteps(StepSeries::fromRecords(steps)); }
    /// The run's name, or its id when empty; buildComparison makes same-named runs distinct
    /// first ("name · 6c6f", the id's last part; the whole id if that repeats too).
    std::string label() const;
    int worldSize() const { return meta ? std::max(meta->worldSize, 1) : 1; }
};

struct Comparison {
    std::vector<ComparedRun> runs;
    size_t baseline = 0;                  ///< index into runs
    std::vector<CompareWarning> warnings; ///< Critical first
    ConfigDiff configDiff;
    /// Mean absolute error % per predicted figure over the runs with a prediction (empty: none).
    std::vector<PredictionAccuracy> predictionAccuracy;
    bool hasCritical() const;
};

/// A figure of the table: one row in the CLI, one row in the GUI, one key in JSON. A value that
/// is not known (NaN: no MFU without a peak, no split in the stream) shows as n/a / null.
struct FigureSpec {
    const char* key;       ///< JSON key
    const char* label;     ///< table text
    const char* unit;
    bool higherIsBetter;
    int decimals;          ///< for display
    double (*value)(const RunFigures&);
    /// p10/p90 of the same figure when it has a distribution; nullptr for a single number.
    const RobustStats* (*stats)(const RunFigures&);
    /// What the stats are multiplied by for display (MFU: a 0..1 fraction shown in %).
    double statsScale = 1.0;
};
const std::vector<FigureSpec>& figureSpecs();

/// (value - baseline) / |baseline|; nullopt when the baseline is 0 or either is not finite.
std::optional<double> relativeDelta(double value, double baseline);

struct CompareRequest {
    std::vector<std::string> runs;         ///< ids or unique prefixes, at least one
    std::optional<std::string> baseline;   ///< id or prefix; default: the first run
    std::optional<StepWindow> window;      ///< override for every run; default: detected
    SteadyStateOptions steadyState;
};

/// Loads and compares. NotFound / InvalidArgument for bad ids, a baseline that is not among the
/// runs, or a window that selects no step of some run.
Result<Comparison> compareRuns(RunStore& store, const CompareRequest& request);

/// The same, from a store path: loads the runs in parallel, one RunStore connection per thread
/// (what the CLI and the GUI call; 20 runs of 100k steps are mostly SQLite row decoding).
/// `loaded`: runs this caller loaded before (a previous comparison's runs); those among the
/// request are reused, reading only their steps after the last one held (and their summary and
/// meta again), so a refresh or a baseline change does not reload 100k steps per run.
Result<Comparison> compareRuns(const std::string& storePath, const CompareRequest& request,
                               const std::vector<ComparedRun>& loaded = {});

/// Analyses runs whose summary, meta, config and steps are already filled in (windows, figures,
/// fingerprints, warnings, diff). InvalidArgument when the window selects no step of some run.
Result<Comparison> buildComparison(std::vector<ComparedRun> runs, size_t baseline,
                                   const std::optional<StepWindow>& window,
                                   const SteadyStateOptions& options = {});

/// The whole comparison as pretty JSON (what `compare --json` prints).
std::string comparisonToJson(const Comparison& comparison);

}  // namespace wb::core
