// Reading Megatron-Bridge overrides back (a YAML override file or a Hydra dotlist, as the
// generators write them and as users write them by hand) into a RunConfig + the planner-only
// flags, so `moe-workbench-cli lint` can check them with the same rules, each finding on the line
// of its key. Only the subset the generators write is understood: two-level YAML (section → key:
// value, flow lists) and `key=value` lines. Pure; any thread.
#pragma once

#include "core/planner/layout.h"
#include "core/run_config.h"

#include <map>
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

struct BridgeImport {
    RunConfig config;                       ///< `base` with the overrides applied
    Layout layout;                          ///< the layout of `config` plus the planner-only flags
    std::map<std::string, int> keyLines;    ///< dotted key → 1-based line
    std::vector<BridgeImportProblem> problems;
    /// The line of the Bridge key that sets a RunConfig path ("parallel.expert_model_parallel_size"), 0 if none.
    int lineOfConfigPath(const std::string& runConfigPath) const;
};

/// True when the text is a dotlist (every non-blank, non-comment line is key=value).
bool looksLikeDotlist(std::string_view text);

/// Applies YAML (`yaml` true) or dotlist overrides on top of `base` (the catalog model and defaults).
BridgeImport importBridgeOverrides(std::string_view text, bool yaml, const RunConfig& base, int worldSize);

}  // namespace wb::core::planner
