// slurm.json, beside hosts.json: how jobs are submitted on each registered cluster (partition,
// account, time, nodes, ranks per node, master port, SLURM_CONF, the python of Megatron-Bridge
// jobs). Read and written here only; SlurmTarget, `hosts slurm` and the GUI's hosts panel use it.
// Files only, no network; any thread (one writer at a time per file).
#pragma once

#include "core/result.h"

#include <string>
#include <vector>

namespace wb::remote {

/// How jobs are submitted on one cluster: `slurm.json` beside hosts.json (see slurmSettingsPath).
struct SlurmSettings {
    std::string partition;  ///< #SBATCH --partition; empty = the cluster's default
    std::string account;    ///< #SBATCH --account; empty = none
    std::string timeLimit;  ///< #SBATCH --time ("04:00:00"); empty = the partition's default
    int nodes = 1;
    /// GPUs per node for device "cuda" configs (moe-train --nproc-per-node); 0 = not set, which a
    /// cuda config refuses. device "cpu" configs run cpuRanksPerNode ranks per node, no GPU.
    int gpusPerNode = 0;
    /// Ranks per node for device "cpu" configs (srun tasks on Gloo; no GPU requested); default 1.
    int cpuRanksPerNode = 1;
    int masterPort = 29500;
    std::string slurmConf;  ///< exported as SLURM_CONF for every Slurm command; empty = the host's
    /// The python a Megatron-Bridge job runs (a venv or conda env on the shared filesystem): the
    /// node check runs `BRIDGE_PYTHON -c "import megatron.bridge"` with it on the login node, and
    /// the job gets it as $BRIDGE_PYTHON (the generated bridge.sbatch runs "${BRIDGE_PYTHON:-python}").
    std::string bridgePython = "python";
};

/// slurm.json beside hosts.json: {"version": 1, "hosts": {"NAME": {"partition": "gpu",
/// "account": "proj", "time": "04:00:00", "nodes": 2, "gpus_per_node": 4, "cpu_ranks_per_node": 1,
/// "master_port": 29500, "slurm_conf": "/etc/slurm/slurm.conf"}}}. Every key is optional.
std::string slurmSettingsPath(const std::string& hostsPath);

/// The settings for host `name`: defaults when the file or the entry is missing; Corrupt or
/// InvalidArgument (naming the file, the key and the fix) for a bad file or value.
core::Result<SlurmSettings> loadSlurmSettings(const std::string& path, const std::string& name);

/// Writes `settings` as host `name`'s entry of slurm.json (keys at their default are left out),
/// keeping the other entries; checked as loadSlurmSettings checks them before anything is
/// written (InvalidArgument naming the key). Atomic (temp file + rename).
core::Result<void> saveSlurmSettings(const std::string& path, const std::string& name, const SlurmSettings& settings);
/// Removes host `name`'s entry (NotFound when it has none).
core::Result<void> removeSlurmSettings(const std::string& path, const std::string& name);

/// The host names slurm.json has settings for (empty when the file is missing); Corrupt for a
/// file that is not a settings file.
core::Result<std::vector<std::string>> slurmSettingsHosts(const std::string& path);

}  // namespace wb::remote
