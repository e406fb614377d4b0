#include "core/compare/config_diff.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using OrderedJson = nlohmann::ordered_json;

void flattenInto(const OrderedJson& node, const std::string& prefix,
                 std::vector<std::pair<std::string, std::string>>& out)
{
    if (node.is_object() && !node.empty()) {
        for (auto it = node.begin(); it != node.end(); ++it)
            flattenInto(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
        return;
    }
    out.emplace_back(prefix, node.dump());
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flattenJson(std::string_view jsonText)
{
    std::vector<std::pair<std::string, std::string>> out;
    const OrderedJson root = OrderedJson::parse(jsonText.begin(), jsonText.end(), nullptr, false);
    if (root.is_discarded() || !root.is_object())
        return out;
    for (auto it = root.begin(); it != root.end(); ++it)
        flattenInto(it.value(), it.key(), out);
    return out;
}

ConfigDiff diffConfigs(const std::vector<std::string>& configJsons, const std::vector<std::string>& ignoredKeys)
{
    std::vector<std::string> order;                           // first-seen key order
    std::map<std::string, std::vector<std::string>> values;   // key -> value per run
    for (size_t run = 0; run < configJsons.size(); ++run) {
        for (auto& [key, value] : flattenJson(configJsons[run])) {
            auto [it, inserted] = values.try_emplace(key, configJsons.size());
            if (inserted)
                order.push_back(key);
            it->second[run] = std::move(value);
        }
    }
    ConfigDiff diff;
    diff.keysCompared = order.size();
    for (const auto& key : order) {
        if (std::find(ignoredKeys.begin(), ignoredKeys.end(), key) != ignoredKeys.end())
            continue;
        const auto& row = values[key];
        if (std::adjacent_find(row.begin(), row.end(), std::not_equal_to<>()) != row.end())
            diff.rows.push_back({key, row});
    }
    return diff;
}

}  // namespace wb::core
