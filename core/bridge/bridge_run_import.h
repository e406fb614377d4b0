// A Megatron-Bridge (or Megatron-LM) run brought into the store from the files its job left: the
// log (bridge_log.h), optionally the resolved ConfigContainer YAML (logger.save_config_filepath)
// and later its TensorBoard events. What the files do not say is not invented: no tokens/s/GPU
// without the world size and sequence length, no MFU without a GPU peak, no prediction without the
// model and the GPU. Blocking (file reads, SQLite); any thread but the GUI's.
#pragma once

#include "core/bridge/bridge_log.h"
#include "core/compare/prediction_check.h"
#include "core/planner/catalog.h"
#include "core/result.h"
#include "core/run_prediction.h"
#include "core/run_store.h"

#include <optional>
#include <string>
#include <vector>

namespace wb::core::bridge {

struct BridgeImportRequest {
    std::string logPath;
    std::optional<std::string> configPath;  ///< the resolved ConfigContainer YAML (or any Bridge overrides)
    std::optional<std::string> tensorboardDir;  ///< logger.tensorboard_dir (or one event file)
    std::string name;                       ///< "" = the log's file name
    std::optional<std::string> model;       ///< catalog id; needed for the prediction
    std::optional<std::string> hardware;    ///< catalog id; gives the peak (MFU) and the prediction
    std::optional<int> gpus;                ///< the world size when the log does not state it
};

struct BridgeImportSummary {
    std::string runId;
    MetaRecord meta;
    LogCounts counts;
    int64_t steps = 0;          ///< iterations stored (a repeated one once)
    int64_t memoryReports = 0;
    int64_t tensorboardPoints = 0;    ///< scalar points read from the event files
    int64_t tensorboardSteps = 0;     ///< steps the event files added (the log's interval left them out)
    int64_t tensorboardFilled = 0;    ///< logged steps whose missing fields the event files filled
    bool tornTail = false;      ///< the log's last line was cut off (the job was killed mid-write)
    std::optional<RunPrediction> prediction;
    std::optional<PredictionCheck> check;  ///< the prediction against the steady window's figures
    std::vector<std::string> notes;  ///< what the files did not say and what is missing because of it
};

/// A memory report as the store raises its step's columns: current allocated, the peak reserved
/// (what an OOM is about) and the peak allocated; NaN where the report did not say.
ParsedChunk::Memory toStoreMemory(const MemoryReport& report);

/// What the files and the request say of a Bridge run: its meta record, the step context (world,
/// seq, GBS, peak), the stored config and, with `predict`, the planner's prediction for its layout;
/// and notes on what is missing. `configText`: the config file's text ("" = none); `state` and
/// `iterations`: what the log has shown so far. InvalidArgument: a config that does not read.
struct BridgeRunSetup {
    MetaRecord meta;
    StepContext context;
    bool haveLayout = false;
    std::string configJson, configHash;  ///< the layout read onto the model's defaults
    std::optional<RunPrediction> prediction;
    std::vector<std::string> notes;
};
Result<BridgeRunSetup> resolveBridgeRun(const planner::Catalog& catalog, const BridgeImportRequest& request,
                                        const std::string& configText, const LogState& state,
                                        const std::vector<IterationRecord>& iterations, bool predict);

/// Reads the files and stores the run in one transaction (kind megatron-bridge, status finished).
/// Errors name the file and what was expected: a log with no Megatron iteration line, a config
/// that does not read, an unknown model or GPU. Nothing is stored then.
Result<BridgeImportSummary> importBridgeRun(RunStore& store, const planner::Catalog& catalog,
                                            const BridgeImportRequest& request);

/// The lines `import` prints: what was stored, the counts, the notes, predicted beside measured.
std::string describeImport(const BridgeImportSummary& summary);

}  // namespace wb::core::bridge
