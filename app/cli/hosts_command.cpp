// `hosts add|list|test|remove`: the SSH hosts runs can go to (`launch --target ssh:NAME`). They are
// kept in hosts.json beside the store (SshHostRegistry); no secrets are stored or printed.
#include "app/cli/cli.h"

#include "remote/provision.h"
#include "remote/ssh_hosts.h"
#include "remote/ssh_session.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace wb::app {

namespace {

constexpr const char* kSynopsis =
    "hosts add NAME [--host HOST] [--user USER] [--port N] [--identity-file FILE]\n"
    "                 [--ssh-config FILE] [--known-hosts FILE] [--remote-moe-train auto|PATH]\n"
    "                 [--remote-runs-root DIR] [--remote-cache-dir DIR] [--address ADDR]\n"
    "                 [--master-port N] [--accept-new-host-key] [--no-test]\n"
    "       moe-workbench-cli hosts list [--json]\n"
    "       moe-workbench-cli hosts test NAME [--accept-new-host-key]\n"
    "       moe-workbench-cli hosts remove NAME\n"
    "       moe-workbench-cli hosts slurm NAME [--partition P] [--nodes N] [--gpus-per-node G] ... | --remove\n"
    "       moe-workbench-cli hosts script check|build|bundle ...   (provisioning by hand)";

std::string describe(const remote::SshHostEntry& e)
{
    std::string where;
    if (!e.user.empty()) {
        where += e.user;
        where += '@';
    }
    where += e.host.empty() ? e.name : e.host;
    if (e.port > 0) {
        where += ':';
        where += std::to_string(e.port);
    }
    return where;
}

// Connects (verifying the host key), then checks the node (GPUs, LibTorch, cmake, compiler,
// disk) and, for an explicit moe-train path, that it is there. Unknown host keys are refused
// unless `acceptNew`; the fingerprint is printed either way.
int testHost(const remote::SshHostEntry& entry, bool acceptNew)
{
    auto spec = entry.spec();
    spec.acceptNewHostKey = acceptNew;
    spec.askSecret = &CliContext::askOnTerminal;
    remote::HostKeyInfo key;
    auto session = remote::SshSession::connect(spec, &key);
    if (!key.fingerprint.empty())
        std::printf("host key: %s %s (%s)\n", key.keyType.c_str(), key.fingerprint.c_str(),
                    key.verdict == remote::HostKeyInfo::Verdict::Known         ? "known"
                    : key.verdict == remote::HostKeyInfo::Verdict::AcceptedNew ? "accepted now, recorded in known_hosts"
                    : key.verdict == remote::HostKeyInfo::Verdict::Changed     ? "CHANGED - refused"
                                                                               : "not known - refused");
    if (!session)
        return reportError(session.error());
    std::printf("connected: %s\n", (*session)->describe().c_str());
    auto system = (*session)->run("uname -srm", std::chrono::seconds(30));
    if (!system)
        return reportError(system.error());
    std::fputs(system->out.c_str(), stdout);

    auto checked = (*session)->run("sh -c " + remote::shellQuote(remote::nodeCheckScript(entry.cacheDir)),
                                   std::chrono::seconds(60));
    if (!checked)
        return reportError(checked.error());
    const remote::NodeReport node = remote::parseNodeCheck(checked->out);
    std::printf("%s\n", node.describe().c_str());
    if (entry.provisioned()) {
        if (!node.ok()) {
            std::fprintf(stderr,
                         "moe-workbench-cli: %s: the workbench cannot build moe-train on this node until "
                         "the missing pieces above are installed (or give a moe-train that is already there "
                         "with `hosts add %s --remote-moe-train PATH`)\n",
                         entry.name.c_str(), entry.name.c_str());
            return kExitFailure;
        }
        std::printf("moe-train: built by the workbench on the first launch, cached in %s\n", node.cacheDir.c_str());
        std::printf("ok\n");
        return kExitOk;
    }
    if (!node.ok())
        std::printf("(the missing pieces matter only for building moe-train there, `--remote-moe-train auto`)\n");
    const std::string moe = remote::shellQuotePath(entry.moeTrain);
    auto probe = (*session)->run("if [ -x " + moe + " ]; then " + moe +
                                     " --version 2>&1 | head -n 1; else echo 'moe-train: missing'; exit 3; fi",
                                 std::chrono::seconds(30));
    if (!probe)
        return reportError(probe.error());
    std::fputs(probe->out.c_str(), stdout);
    if (probe->exitStatus == 3) {
        std::fprintf(stderr,
                     "moe-workbench-cli: %s: moe-train is not at %s on the host: let the workbench build it "
                     "there (`hosts add %s --remote-moe-train auto`) or build it yourself (cmake -S runtime "
                     "-B build && cmake --build build) and set its path with --remote-moe-train\n",
                     entry.name.c_str(), entry.moeTrain.c_str(), entry.name.c_str());
        return kExitFailure;
    }
    std::printf("ok\n");
    return kExitOk;
}

int addHost(const CliContext& context, Args& args)
{
    bool missing = false;
    remote::SshHostEntry entry;
    entry.host = args.takeOption("--host", missing).value_or("");
    entry.user = args.takeOption("--user", missing).value_or("");
    const auto port = args.takeOption("--port", missing);
    entry.identityFile = args.takeOption("--identity-file", missing).value_or("");
    entry.sshConfig = args.takeOption("--ssh-config", missing).value_or("");
    entry.knownHosts = args.takeOption("--known-hosts", missing).value_or("");
    entry.moeTrain = args.takeOption("--remote-moe-train", missing).value_or(entry.moeTrain);
    entry.runsRoot = args.takeOption("--remote-runs-root", missing).value_or("");
    entry.cacheDir = args.takeOption("--remote-cache-dir", missing).value_or("");
    entry.address = args.takeOption("--address", missing).value_or("");
    const auto masterPort = args.takeOption("--master-port", missing);
    const bool acceptNew = args.takeFlag("--accept-new-host-key");
    const bool noTest = args.takeFlag("--no-test");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis, /*allowPositional=*/true))
        return *usage;
    if (args.rest().size() != 1)
        return reportUsage("hosts add takes one NAME", kSynopsis);
    entry.name = args.rest().front();
    if (port) {
        try {
            entry.port = std::stoi(*port);
        } catch (const std::exception&) {
            entry.port = -1;
        }
        if (entry.port < 1 || entry.port > 65535)
            return reportUsage("--port needs a number from 1 to 65535", kSynopsis);
    }
    if (masterPort) {
        try {
            entry.masterPort = std::stoi(*masterPort);
        } catch (const std::exception&) {
            entry.masterPort = -1;
        }
        if (entry.masterPort < 1 || entry.masterPort > 65535)
            return reportUsage("--master-port needs a number from 1 to 65535", kSynopsis);
    }
    remote::SshHostRegistry registry(remote::defaultHostsPath(context.dbPath));
    if (auto r = registry.put(entry); !r)
        return reportError(r.error());
    std::printf("saved host %s (%s) in %s\n", entry.name.c_str(), describe(entry).c_str(),
                registry.path().c_str());
    return noTest ? kExitOk : testHost(entry, acceptNew);
}

int listHosts(const CliContext& context, Args& args)
{
    const bool json = args.takeFlag("--json");
    if (!args.unknownOption().empty() || !args.rest().empty())
        return reportUsage("hosts list takes only --json", kSynopsis);
    remote::SshHostRegistry registry(remote::defaultHostsPath(context.dbPath));
    auto entries = registry.load();
    if (!entries)
        return reportError(entries.error());
    if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& e : *entries)
            out.push_back({{"name", e.name}, {"host", e.host.empty() ? e.name : e.host}, {"user", e.user},
                           {"port", e.port}, {"identity_file", e.identityFile}, {"ssh_config", e.sshConfig},
                           {"known_hosts", e.knownHosts}, {"moe_train", e.moeTrain}, {"runs_root", e.runsRoot},
                           {"cache_dir", e.cacheDir}, {"address", e.address}, {"master_port", e.masterPort}});
        std::printf("%s\n", out.dump(2).c_str());
        return kExitOk;
    }
    if (entries->empty())
        std::printf("no hosts; add one with: moe-workbench-cli hosts add NAME\n");
    for (const auto& e : *entries)
        std::printf("%-20s %-30s moe-train %s\n", e.name.c_str(), describe(e).c_str(),
                    e.provisioned() ? "auto (built on the host)" : e.moeTrain.c_str());
    return kExitOk;
}

}  // namespace

int hostsCommand(const CliContext& context, Args args)
{
    if (args.rest().empty())
        return reportUsage("hosts needs a subcommand: add, list, test, remove, slurm or script", kSynopsis);
    std::vector<std::string> rest = args.rest();
    const std::string sub = rest.front();
    rest.erase(rest.begin());
    Args subArgs(std::move(rest));
    if (sub == "add")
        return addHost(context, subArgs);
    if (sub == "script")
        return hostsScriptCommand(context, subArgs);
    if (sub == "slurm")
        return hostsSlurmCommand(context, subArgs);
    if (sub == "list")
        return listHosts(context, subArgs);
    if (sub == "test" || sub == "remove") {
        const bool acceptNew = sub == "test" && subArgs.takeFlag("--accept-new-host-key");
        if (!subArgs.unknownOption().empty() || subArgs.rest().size() != 1)
            return reportUsage("hosts " + sub + " takes one NAME", kSynopsis);
        remote::SshHostRegistry registry(remote::defaultHostsPath(context.dbPath));
        if (sub == "remove") {
            if (auto r = registry.remove(subArgs.rest().front()); !r)
                return reportError(r.error());
            std::printf("removed host %s\n", subArgs.rest().front().c_str());
            return kExitOk;
        }
        auto entry = registry.find(subArgs.rest().front());
        if (!entry)
            return reportError(entry.error());
        return testHost(*entry, acceptNew);
    }
    return reportUsage("unknown hosts subcommand '" + sub + "'", kSynopsis);
}

}  // namespace wb::app
