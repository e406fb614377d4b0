// Config diff across runs: the canonical RunConfig JSON of each run flattened to dotted keys
// ("parallel.expert_model_parallel_size"), and only the keys whose values are not all equal.
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wb::core {

/// Flattens a JSON object to (dotted key, compact JSON value) in document order. Arrays are
/// leaves ("[8,16,24]"); nested objects recurse. Invalid JSON or a non-object yields nothing.
std::vector<std::pair<std::string, std::string>> flattenJson(std::string_view jsonText);

struct ConfigDiffRow {
    std::string key;
    std::vector<std::string> values;  ///< one per run, compact JSON; "" when the run lacks the key
};

struct ConfigDiff {
    std::vector<ConfigDiffRow> rows;  ///< keys in first-seen document order
    size_t keysCompared = 0;          ///< distinct keys over all runs
    bool empty() const { return rows.empty(); }
};

/// Keys whose values differ between any two of the configs. `ignoredKeys` are left out (the run
/// name, which always differs and is shown elsewhere).
ConfigDiff diffConfigs(const std::vector<std::string>& configJsons,
                       const std::vector<std::string>& ignoredKeys = {"name"});

}  // namespace wb::core
