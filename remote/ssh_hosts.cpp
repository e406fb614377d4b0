// SshHostRegistry: hosts.json read/write. Any thread; no shared state.
#include "remote/ssh_hosts.h"

#include "core/atomic_file.h"

#include "core/json_number.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

constexpr int kHostsFileVersion = 1;

nlohmann::json toJson(const SshHostEntry& e)
{
    nlohmann::json j = {{"name", e.name}, {"moe_train", e.moeTrain}};
    auto optional = [&](const char* key, const std::string& value) {
        if (!value.empty())
            j[key] = value;
    };
    optional("host", e.host);
    optional("user", e.user);
    if (e.port > 0)
        j["port"] = e.port;
    optional("identity_file", e.identityFile);
    optional("ssh_config", e.sshConfig);
    optional("known_hosts", e.knownHosts);
    optional("runs_root", e.runsRoot);
    optional("cache_dir", e.cacheDir);
    optional("address", e.address);
    if (e.masterPort > 0)
        j["master_port"] = e.masterPort;
    if (e.reconnectBudgetS > 0)
        j["reconnect_budget_s"] = e.reconnectBudgetS;
    return j;
}

SshHostEntry fromJson(const nlohmann::json& j)
{
    SshHostEntry e;
    e.name = j.value("name", "");
    e.host = j.value("host", "");
    e.user = j.value("user", "");
    e.port = wb::core::jsonIntOr(j, "port", 0);
    e.identityFile = j.value("identity_file", "");
    e.sshConfig = j.value("ssh_config", "");
    e.knownHosts = j.value("known_hosts", "");
    e.moeTrain = j.value("moe_train", e.moeTrain);
    e.runsRoot = j.value("runs_root", "");
    e.cacheDir = j.value("cache_dir", "");
    e.address = j.value("address", "");
    e.masterPort = wb::core::jsonIntOr(j, "master_port", 0);
    e.reconnectBudgetS = std::max(0, wb::core::jsonIntOr(j, "reconnect_budget_s", 0));
    return e;
}

}  // namespace

SshHostSpec SshHostEntry::spec() const
{
    SshHostSpec spec;
    spec.host = host.empty() ? name : host;
    spec.user = user;
    spec.port = port;
    spec.identityFile = identityFile;
    spec.sshConfigFile = sshConfig;
    spec.knownHostsFile = knownHosts;
    return spec;
}

SshTargetOptions SshHostEntry::targetOptions() const
{
    SshTargetOptions options;
    options.host = spec();
    options.hostName = name;
    options.provision = provisioned();
    options.moeTrainPath = provisioned() ? std::string() : moeTrain;
    options.runsRoot = runsRoot;
    options.provisioning.cacheDir = cacheDir;
    if (reconnectBudgetS > 0)
        options.reconnectBudget = std::chrono::seconds(reconnectBudgetS);
    return options;
}

Result<std::vector<SshHostEntry>> SshHostRegistry::load() const
{
    std::vector<SshHostEntry> entries;
    std::ifstream in(m_path, std::ios::binary);
    if (!in)
        return entries;
    std::ostringstream text;
    text << in.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (!json.is_object() || !json.contains("hosts") || !json["hosts"].is_array())
        return makeError(ErrorCode::Corrupt, "not a hosts file (expected {\"version\":1,\"hosts\":[...]}); fix or remove it",
                         m_path);
    if (wb::core::jsonIntOr(json, "version", 0) > kHostsFileVersion)
        return makeError(ErrorCode::Incompatible, "written by a newer moe-workbench", m_path);
    try {
        for (const auto& item : json["hosts"])
            entries.push_back(fromJson(item));
    } catch (const nlohmann::json::exception& e) {
        return makeError(ErrorCode::Corrupt, std::string("a host entry has a wrong type: ") + e.what(), m_path);
    }
    return entries;
}

Result<void> SshHostRegistry::save(const std::vector<SshHostEntry>& entries) const
{
    nlohmann::json json = {{"version", kHostsFileVersion}, {"hosts", nlohmann::json::array()}};
    for (const auto& entry : entries)
        json["hosts"].push_back(toJson(entry));
    std::error_code ec;
    if (const auto parent = std::filesystem::path(m_path).parent_path(); !parent.empty())
        std::filesystem::create_directories(parent, ec);  // a failure shows as the write's
    return core::writeFileAtomically(m_path, json.dump(2) + "\n");
}

Result<void> SshHostRegistry::put(const SshHostEntry& entry)
{
    if (!validHostName(entry.name))
        return makeError(ErrorCode::InvalidArgument,
                         "a host name may hold only letters, digits, '.', '-' and '_'", entry.name);
    auto entries = load();
    if (!entries)
        return entries.error();
    auto it = std::find_if(entries->begin(), entries->end(), [&](const auto& e) { return e.name == entry.name; });
    if (it != entries->end())
        *it = entry;
    else
        entries->push_back(entry);
    return save(*entries);
}

Result<void> SshHostRegistry::remove(const std::string& name)
{
    auto entries = load();
    if (!entries)
        return entries.error();
    const auto before = entries->size();
    std::erase_if(*entries, [&](const auto& e) { return e.name == name; });
    if (entries->size() == before)
        return makeError(ErrorCode::NotFound, "no such host; see `moe-workbench-cli hosts list`", name);
    return save(*entries);
}

Result<SshHostEntry> SshHostRegistry::find(const std::string& name) const
{
    auto entries = load();
    if (!entries)
        return entries.error();
    for (const auto& entry : *entries)
        if (entry.name == name)
            return entry;
    return makeError(ErrorCode::NotFound,
                     "no host of that name; add it with `moe-workbench-cli hosts add " + name + "`",
                     name);
}

std::string defaultHostsPath(const std::string& storePath)
{
    const auto parent = std::filesystem::path(storePath).parent_path();
    return (parent.empty() ? std::filesystem::path("hosts.json") : parent / "hosts.json").string();
}

bool validHostName(const std::string& name)
{
    if (name.empty() || name.size() > 253 || name.front() == '-')
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    });
}

}  // namespace wb::remote
