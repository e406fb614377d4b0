#include "remote/slurm_settings.h"

#include "core/atomic_file.h"
#include "core/json_number.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

// #SBATCH lines are parsed by sbatch without a shell; the generator's own rule (generators.cpp).
bool sbatchSafe(const std::string& value)
{
    return std::all_of(value.begin(), value.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) ||
               std::string_view("._:,-").find(ch) != std::string_view::npos;
    });
}

// slurm.json parsed and checked at the top level; a missing file is an empty object.
Result<nlohmann::json> readSlurmSettingsFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return nlohmann::json::object({{"hosts", nlohmann::json::object()}});
    std::ostringstream text;
    text << in.rdbuf();
    auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (!json.is_object() || !json.contains("hosts") || !json["hosts"].is_object())
        return makeError(ErrorCode::Corrupt,
                         "not a Slurm settings file (expected {\"version\": 1, \"hosts\": {\"NAME\": {...}}}); fix it",
                         path);
    if (wb::core::jsonIntOr(json, "version", 1) > 1)
        return makeError(ErrorCode::Incompatible, "written by a newer moe-workbench", path);
    return json;
}

Result<void> writeSlurmSettingsFile(const std::string& path, const nlohmann::json& json)
{
    std::error_code ec;
    if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
        std::filesystem::create_directories(parent, ec);  // a failure shows as the write's
    return core::writeFileAtomically(path, json.dump(2) + "\n");
}

}  // namespace

std::string slurmSettingsPath(const std::string& hostsPath)
{
    return (std::filesystem::path(hostsPath).parent_path() / "slurm.json").string();
}

Result<void> saveSlurmSettings(const std::string& path, const std::string& name, const SlurmSettings& settings)
{
    auto file = readSlurmSettingsFile(path);
    if (!file)
        return file.error();
    nlohmann::json entry = nlohmann::json::object();
    const SlurmSettings defaults;
    for (const auto& [key, value] : {std::pair{"partition", settings.partition},
                                     {"account", settings.account},
                                     {"time", settings.timeLimit},
                                     {"slurm_conf", settings.slurmConf}})
        if (!value.empty())
            entry[key] = value;
    if (settings.bridgePython != defaults.bridgePython)
        entry["bridge_python"] = settings.bridgePython;
    for (const auto& [key, value, fallback] :
         {std::tuple{"nodes", settings.nodes, defaults.nodes},
          {"gpus_per_node", settings.gpusPerNode, defaults.gpusPerNode},
          {"cpu_ranks_per_node", settings.cpuRanksPerNode, defaults.cpuRanksPerNode},
          {"master_port", settings.masterPort, defaults.masterPort}})
        if (value != fallback)
            entry[key] = value;
    nlohmann::json& json = *file;
    json["version"] = 1;
    json["hosts"][name] = entry;
    // The same checks as reading it back, before the real file is touched.
    const std::string check = path + ".check";
    if (auto written = writeSlurmSettingsFile(check, json); !written)
        return written.error();
    auto valid = loadSlurmSettings(check, name);
    std::filesystem::remove(check);
    if (!valid) {
        core::Error error = valid.error();
        error.context = path + " (hosts." + name + ")";
        return error;
    }
    return writeSlurmSettingsFile(path, json);
}

Result<void> removeSlurmSettings(const std::string& path, const std::string& name)
{
    auto file = readSlurmSettingsFile(path);
    if (!file)
        return file.error();
    if ((*file)["hosts"].erase(name) == 0)
        return makeError(ErrorCode::NotFound, "no Slurm settings for " + name, path);
    return writeSlurmSettingsFile(path, *file);
}

Result<std::vector<std::string>> slurmSettingsHosts(const std::string& path)
{
    auto json = readSlurmSettingsFile(path);
    if (!json)
        return json.error();
    std::vector<std::string> names;
    for (const auto& [name, entry] : (*json)["hosts"].items())
        names.push_back(name);
    return names;
}

Result<SlurmSettings> loadSlurmSettings(const std::string& path, const std::string& name)
{
    SlurmSettings settings;
    auto file = readSlurmSettingsFile(path);
    if (!file)
        return file.error();
    nlohmann::json& json = *file;
    const auto it = json["hosts"].find(name);
    if (it == json["hosts"].end())
        return settings;
    if (!it->is_object())
        return makeError(ErrorCode::Corrupt, "the entry for " + name + " is not an object", path);
    const std::string where = path + " (hosts." + name + ")";
    for (const auto& [key, value] : it->items()) {
        auto text = [&](std::string& out) -> Result<void> {
            if (!value.is_string())
                return makeError(ErrorCode::InvalidArgument, "\"" + key + "\" must be a string", where);
            out = value.get<std::string>();
            return {};
        };
        auto number = [&](int& out, int low, int high) -> Result<void> {
            if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high)
                return makeError(ErrorCode::InvalidArgument,
                                 "\"" + key + "\" must be a whole number from " + std::to_string(low) + " to " +
                                     std::to_string(high),
                                 where);
            out = value.get<int>();
            return {};
        };
        Result<void> r;
        if (key == "partition")
            r = text(settings.partition);
        else if (key == "account")
            r = text(settings.account);
        else if (key == "time")
            r = text(settings.timeLimit);
        else if (key == "slurm_conf")
            r = text(settings.slurmConf);
        else if (key == "bridge_python")
            r = text(settings.bridgePython);
        else if (key == "nodes")
            r = number(settings.nodes, 1, 100000);
        else if (key == "gpus_per_node")
            r = number(settings.gpusPerNode, 1, 1024);
        else if (key == "cpu_ranks_per_node")
            r = number(settings.cpuRanksPerNode, 1, 1024);
        else if (key == "master_port")
            r = number(settings.masterPort, 1, 65535);
        else
            r = makeError(ErrorCode::InvalidArgument,
                          "unknown key \"" + key +
                              "\"; use partition, account, time, nodes, gpus_per_node, cpu_ranks_per_node, "
                              "master_port, slurm_conf, bridge_python",
                          where);
        if (!r)
            return r.error();
    }
    for (const auto& [key, value] :
         {std::pair{"partition", settings.partition}, {"account", settings.account}, {"time", settings.timeLimit}})
        if (!sbatchSafe(value))
            return makeError(ErrorCode::InvalidArgument,
                             std::string("\"") + key + "\" '" + value +
                                 "' has characters an #SBATCH line cannot carry; use letters, digits and . _ : , -",
                             where);
    if (settings.bridgePython.empty())
        return makeError(
            ErrorCode::InvalidArgument,
            "\"bridge_python\" is empty; give the python that runs Megatron-Bridge (or remove the key: python)", where);
    return settings;
}

}  // namespace wb::remote
