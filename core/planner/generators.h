// Config generators: one RunConfig (+ the hardware and nodes × GPUs) → the runtime's JSON, the
// Megatron-Bridge overrides (Hydra dotlist, YAML override file, the perf launcher command line and
// the environment for that hardware), and launch scripts for moe-train (plain multi-node SSH with
// the torchrun environment; Slurm sbatch + srun). Every Megatron name written here is a field or a
// flag listed in reference/megatron-bridge.md §1, §2, §4, §5 (tests/core/planner/test_generators.cpp
// checks them against an allow-list). Pure functions; any thread.
#pragma once

#include "core/planner/catalog.h"
#include "core/result.h"
#include "core/run_config.h"
#include "core/shell_quote.h"

#include <string>
#include <utility>
#include <vector>

namespace wb::core::planner {

/// What the generators need beside the RunConfig.
struct GeneratorTarget {
    HardwareSpec hardware;
    int nodes = 1;
    int gpusPerNode = 8;
    std::string modelName;  ///< catalog key, for the Bridge perf recipe ("qwen3-vl-30b-a3b"); may be empty
    // Megatron options RunConfig does not carry yet (see layout.h "planner only").
    bool overlapMoeExpertParallelComm = false;
    // Slurm / perf launcher.
    std::string account;    ///< empty: not written (sbatch) / placeholder ACCOUNT (perf launcher)
    std::string partition;  ///< empty: not written / placeholder PARTITION
    std::string timeLimit;  ///< sbatch --time, e.g. "04:00:00"; empty: not written
    /// Slurm with gpusPerNode == 0 (a device "cpu" job): ranks (srun tasks, Gloo) per node.
    int cpuRanksPerNode = 1;
    /// Slurm: the run directory's defaults written into the script (the environment still
    /// overrides them); empty = $HOME/.cache/moe-workbench/runs and slurm-<job id>. The workbench
    /// sets both, so a job started with `--export=NONE` still finds its directory.
    std::string runsRoot;
    std::string runId;
    // SSH.
    std::vector<std::string> hosts;  ///< empty: node0, node1, ... placeholders the user edits
    int masterPort = 29500;
    std::string moeTrain = "moe-train";  ///< path of moe-train on the nodes

    int worldSize() const { return nodes * gpusPerNode; }
};

/// One Megatron-Bridge override: a dotted key and its value already in Hydra/YAML syntax
/// ("2", "true", "null", "[core_attn,moe_act]", "fsdp_dtensor").
struct BridgeOverride {
    std::string key;
    std::string value;
};

/// The overrides for a RunConfig, in section order (model, train, dataset, ddp, dist, checkpoint,
/// optimizer, comm_overlap, mixed_precision). Model architecture, optimizer and data paths are left
/// to the recipe, except the precision-aware optimizer's five fields when a moment is bf16 (plus
/// use_distributed_optimizer without FSDP, which Megatron requires with it).
std::vector<BridgeOverride> bridgeOverrides(const RunConfig& config, const GeneratorTarget& target);

/// True when the config stores an Adam moment in bf16 (train.exp_avg_dtype / exp_avg_sq_dtype):
/// the overrides then turn on Megatron's precision-aware optimizer with those dtypes.
bool usesBf16Moments(const RunConfig& config);

/// "key=value" per override, one per line (a file for `key=value ...` arguments).
std::string bridgeDotlist(const std::vector<BridgeOverride>& overrides);

/// The same overrides as a YAML override file with nested sections.
std::string bridgeYaml(const std::vector<BridgeOverride>& overrides);

/// Environment variables Megatron-Bridge's recipes set for this hardware (megatron-bridge.md §4),
/// in a stable order. `slurm` adds the GB200-class Slurm extras.
std::vector<std::pair<std::string, std::string>> bridgeEnvironment(const RunConfig& config, const GeneratorTarget& target,
                                                                   bool slurm);

/// Bridge's perf recipe name for a catalog model ("qwen3-vl-30b-a3b" → "qwen3_vl_30b_a3b"); empty
/// when Bridge has no perf recipe for it.
std::string bridgePerfRecipe(const std::string& modelName);

/// `python scripts/performance/setup_experiment.py ...` as one shell command (every value quoted
/// where it needs it). Warnings (no recipe for the model or the GPU) go to `warnings`.
std::string bridgePerfCommand(const RunConfig& config, const GeneratorTarget& target, std::vector<std::string>& warnings);

/// The generated scripts' quoting: core::shellWord (a safe word bare, anything else single-quoted;
/// core/shell_quote.h, shared with remote/).
inline std::string shellQuote(const std::string& value) { return core::shellWord(value); }

/// A multi-node SSH launcher for moe-train: per node, write run.json into the run directory and
/// start one detached `moe-train --nproc-per-node G` with the torchrun environment.
std::string sshLaunchScript(const RunConfig& config, const GeneratorTarget& target);

/// An sbatch script: one srun task per rank (G per node; cpuRanksPerNode when gpusPerNode is 0),
/// each moe-train with the torchrun environment from Slurm's SLURM_PROCID/LOCALID/NTASKS.
std::string slurmScript(const RunConfig& config, const GeneratorTarget& target);

/// An sbatch script for Megatron-Bridge: one srun task per node running torchrun over
/// run_recipe.py with the recipe and the overrides.dotlist and env.slurm.sh beside it; the python
/// is $BRIDGE_PYTHON (the workbench's bridge_python setting when it submits).
std::string bridgeSlurmScript(const RunConfig& config, const GeneratorTarget& target);

/// bridge_job.json: what makes a folder one `launch --bridge` takes (core/bridge/bridge_launch.h).
std::string bridgeJobManifest(const GeneratorTarget& target);

struct GeneratedFile {
    std::string name;     ///< relative file name ("run.json", "overrides.yaml", ...)
    std::string content;
    bool executable = false;
};

struct GeneratedBundle {
    std::vector<GeneratedFile> files;
    std::vector<std::string> warnings;  ///< things the user must fill in or check
};

/// `config` as moe-train can run it: the planner's CUDA graphs (Megatron's transformer_engine over
/// moe_router + moe_preprocess) become moe-train's own (local, moe_router only), or none when the
/// scope has no router; the flex (HybridEP/DeepEP) or allgather dispatcher becomes alltoall (the
/// same exchange, moe-train's only kernel; a warning only when EP > 1, where it matters); virtual
/// pipeline stages become plain 1F1B over the same stages (same losses, larger bubble); each
/// change is described in `warnings`. Used by the formats that start
/// moe-train (runtime, ssh, slurm) and by the GUI's run.json preview and launch.
RunConfig configForMoeTrain(const RunConfig& config, std::vector<std::string>& warnings);

/// The files of one format: "runtime" | "megatron-bridge" | "slurm" | "ssh".
Result<GeneratedBundle> generateFormat(const std::string& format, const RunConfig& config, const GeneratorTarget& target);

/// The formats generateFormat knows.
const std::vector<std::string>& generatorFormats();

}  // namespace wb::core::planner
