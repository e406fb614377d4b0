// Reading Megatron-Bridge overrides back (a YAML override file or a Hydra dotlist, as the
// generators write them and as users write them by hand) into a RunConfig + the planner-only
// flags, so `moe-workbench-cli lint` can check them with the same rules, each finding on the line
// of its key. YAML is read as a tree (core/yaml_tree.h) of any depth, flattened to dotted keys
// (model.vision_config.num_layers), so both the generators' override files and a full resolved
// ConfigContainer (`cfg.to_yaml()`) read; dotlists are `key=value` lines. Pure; any thread.
#pragma once

#include "core/planner/layout.h"
#include "core/run_config.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core::planner {

/// Every Megatron-Bridge field reference/megatron-bridge.md §1/§2 names, as dotted keys.
const std::vector<std::string>& bridgeKnownFields();

struct BridgeImportProblem {
    int line = 0;
    std::string key;
    bool error = true;   ///< false: a warning (an unknown key, a field the workbench ignores)
    std::string message;
    std::string fix;
};

/// What a perf launcher command (`scripts/performance/setup_experiment.py`, megatron-bridge.md §5)
/// says beyond the fields: the world size, the GPU and the model recipe.
struct PerfLaunch {
    bool present = false;     ///< the text is a perf launcher command
    int gpus = 0;             ///< -ng (0: not given)
    int gpusLine = 0;
    std::string hardware;     ///< -g ("gb200")
    std::string model;        ///< -mr as a catalog name ("qwen3-vl-30b-a3b")
};

/// What the file says of the data (a resolved ConfigContainer YAML names the dataset class):
/// Bridge's mock VLM dataset (MockVLMSFTDatasetConfig, megatron-bridge.md §2) with its image
/// count and size, and whether the router is force-balanced (a perf recipe's benchmark switch).
struct BridgeData {
    std::string target;                       ///< dataset._target_ ("" = not said)
    bool mock = false;                        ///< the target is one of Bridge's mock datasets
    int images = 1;                           ///< dataset.num_images (mock VLM data)
    int imageWidth = 256, imageHeight = 256;  ///< dataset.image_size
    std::optional<bool> forceLoadBalancing;   ///< model.moe_router_force_load_balancing
};

struct BridgeImport {
    RunConfig config;                       ///< `base` with the overrides applied
    BridgeData data;
    Layout layout;                          ///< the layout of `config` plus the planner-only flags
    std::map<std::string, int> keyLines;    ///< dotted key → 1-based line
    std::vector<BridgeImportProblem> problems;
    PerfLaunch perf;                        ///< set when the text is a perf launcher command
    /// The line of the Bridge key that sets a RunConfig path ("parallel.expert_model_parallel_size"), 0 if none.
    int lineOfConfigPath(const std::string& runConfigPath) const;
};

/// True when the text is a dotlist (every non-blank, non-comment line is key=value).
bool looksLikeDotlist(std::string_view text);
/// True when the text holds a Megatron-Bridge perf launcher command (setup_experiment.py): read
/// as a dotlist whose flags (-tp -pp -cp -vp -ep -et/-etp -mb -gb -sl, --cuda_graph_impl/scope,
/// --moe_flex_dispatcher_backend, --use_megatron_fsdp, -rl, --recompute_modules, -c, -ng, -g, -mr)
/// set the same fields as their Bridge keys, plus its key=value overrides.
bool looksLikePerfLaunch(std::string_view text);

/// Applies YAML (`yaml` true) or dotlist / perf launcher overrides on top of `base` (the catalog
/// model and defaults).
BridgeImport importBridgeOverrides(std::string_view text, bool yaml, const RunConfig& base, int worldSize);

}  // namespace wb::core::planner
