// SshHostRegistry: the hosts the user registered (`moe-workbench-cli hosts add`, later the GUI's
// hosts panel), kept in a small JSON file in the data dir (beside the run store). It holds how to
// reach a host and where moe-train lives there, never a secret: authentication is the agent's
// or the key files' business, and host keys live in known_hosts.
// Threading: plain data and file I/O; any thread, one registry object per thread.
#pragma once

#include "core/result.h"
#include "remote/ssh_target.h"

#include <optional>
#include <string>
#include <vector>

namespace wb::remote {

struct SshHostEntry {
    std::string name;          ///< what users type: `--target ssh:NAME`
    std::string host;          ///< ssh config alias or host name; empty = name
    std::string user;          ///< empty = ssh config / local user
    int port = 0;              ///< 0 = ssh config / 22
    std::string identityFile;  ///< a path, not a key
    std::string sshConfig;     ///< empty = ~/.ssh/config
    std::string knownHosts;    ///< empty = ~/.ssh/known_hosts
    /// On the host: "auto" = built there by the workbench (provisioning), else a path.
    std::string moeTrain = "auto";
    std::string runsRoot;      ///< on the host; empty = ~/.cache/moe-workbench/runs
    std::string cacheDir;      ///< provisioned builds on the host; empty = ~/.cache/moe-workbench/build
    /// Multi-node, when this host is node 0: the address the other nodes reach it by (empty =
    /// the host name SSH connects to) and the rendezvous port (0 = 29500).
    std::string address;
    int masterPort = 0;
    /// How long one call keeps reconnecting after a lost connection before it reports IoError
    /// (`reconnect_budget_s` in hosts.json); 0 = 60 s. `watch` keeps trying past it.
    int reconnectBudgetS = 0;

    bool provisioned() const { return moeTrain == "auto"; }

    SshHostSpec spec() const;
    SshTargetOptions targetOptions() const;
};

class SshHostRegistry {
public:
    /// `path`: the JSON file (need not exist yet).
    explicit SshHostRegistry(std::string path) : m_path(std::move(path)) {}

    /// A missing file is an empty list. Corrupt when it cannot be parsed.
    core::Result<std::vector<SshHostEntry>> load() const;
    /// Replaces the entry with the same name, or appends. Written atomically (temp + rename).
    core::Result<void> put(const SshHostEntry& entry);
    /// NotFound when there is no such entry.
    core::Result<void> remove(const std::string& name);
    core::Result<SshHostEntry> find(const std::string& name) const;

    const std::string& path() const { return m_path; }

private:
    core::Result<void> save(const std::vector<SshHostEntry>& entries) const;
    std::string m_path;
};

/// hosts.json beside the run store file.
std::string defaultHostsPath(const std::string& storePath);

/// A host name we accept: letters, digits, '.', '-', '_' (no '@', ':', ',' — they separate
/// user, port and hosts in a target string).
bool validHostName(const std::string& name);

}  // namespace wb::remote
