// `hosts slurm NAME [settings] | --remove`: how jobs are submitted through login host NAME
// (`--target slurm:NAME`), kept in slurm.json beside hosts.json (remote/slurm_target.h). Without
// settings it prints the current ones. The options change only what they name.
#include "app/cli/cli.h"

#include "remote/slurm_target.h"
#include "remote/ssh_hosts.h"

#include <cstdio>

namespace wb::app {

namespace {

constexpr const char* kSynopsis =
    "hosts slurm NAME [--partition P] [--account A] [--time HH:MM:SS] [--nodes N]\n"
    "                 [--gpus-per-node G] [--cpu-ranks-per-node R] [--master-port N] [--slurm-conf FILE]\n"
    "                 [--bridge-python PATH]   (the python with Megatron-Bridge that launch --bridge checks and uses)\n"
    "       moe-workbench-cli hosts slurm NAME --remove";

void printSettings(const std::string& name, const remote::SlurmSettings& s)
{
    const auto orDefault = [](const std::string& value, const char* fallback) {
        return value.empty() ? std::string(fallback) : value;
    };
    std::printf("slurm:%s\n", name.c_str());
    std::printf("  partition:          %s\n", orDefault(s.partition, "(the cluster's default)").c_str());
    std::printf("  account:            %s\n", orDefault(s.account, "(none)").c_str());
    std::printf("  time:               %s\n", orDefault(s.timeLimit, "(the partition's default)").c_str());
    std::printf("  nodes:              %d\n", s.nodes);
    if (s.gpusPerNode > 0)
        std::printf("  gpus per node:      %d\n", s.gpusPerNode);
    else
        std::printf("  gpus per node:      (not set: cuda configs are refused until it is)\n");
    std::printf("  cpu ranks per node: %d\n", s.cpuRanksPerNode);
    std::printf("  master port:        %d\n", s.masterPort);
    std::printf("  slurm.conf:         %s\n", orDefault(s.slurmConf, "(the login node's default)").c_str());
    std::printf("  bridge python:      %s\n", s.bridgePython.c_str());
}

// "--x N" within [low, high]; false (after the usage message) when it is not.
bool takeNumber(Args& args, const char* option, int low, int high, bool& missing, int& out, int& exitCode)
{
    const auto text = args.takeOption(option, missing);
    if (!text)
        return true;
    int value = low - 1;
    try {
        size_t used = 0;
        value = std::stoi(*text, &used);
        if (used != text->size())
            value = low - 1;
    } catch (const std::exception&) {
    }
    if (value < low || value > high) {
        exitCode = reportUsage(std::string(option) + " needs a number from " + std::to_string(low) + " to " +
                                   std::to_string(high) + ", not '" + *text + "'",
                               kSynopsis);
        return false;
    }
    out = value;
    return true;
}

}  // namespace

int hostsSlurmCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto partition = args.takeOption("--partition", missing);
    const auto account = args.takeOption("--account", missing);
    const auto time = args.takeOption("--time", missing);
    const auto slurmConf = args.takeOption("--slurm-conf", missing);
    const auto bridgePython = args.takeOption("--bridge-python", missing);
    int nodes = 0, gpus = 0, cpuRanks = 0, port = 0, exitCode = kExitUsage;
    if (!takeNumber(args, "--nodes", 1, 100000, missing, nodes, exitCode) ||
        !takeNumber(args, "--gpus-per-node", 1, 1024, missing, gpus, exitCode) ||
        !takeNumber(args, "--cpu-ranks-per-node", 1, 1024, missing, cpuRanks, exitCode) ||
        !takeNumber(args, "--master-port", 1, 65535, missing, port, exitCode))
        return exitCode;
    const bool remove = args.takeFlag("--remove");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis, /*allowPositional=*/true))
        return *usage;
    if (args.rest().size() != 1)
        return reportUsage("hosts slurm takes one NAME (a host from `hosts list`: the cluster's login node)",
                           kSynopsis);
    const std::string name = args.rest().front();
    const std::string hostsPath = remote::defaultHostsPath(context.dbPath);
    const std::string path = remote::slurmSettingsPath(hostsPath);
    if (remove) {
        if (auto removed = remote::removeSlurmSettings(path, name); !removed)
            return reportError(removed.error());
        std::printf("removed the Slurm settings of %s from %s\n", name.c_str(), path.c_str());
        return kExitOk;
    }
    if (auto host = remote::SshHostRegistry(hostsPath).find(name); !host)
        return reportError(host.error());
    auto settings = remote::loadSlurmSettings(path, name);
    if (!settings)
        return reportError(settings.error());
    const bool changes = partition || account || time || slurmConf || bridgePython || nodes || gpus || cpuRanks || port;
    if (changes) {
        if (partition)
            settings->partition = *partition;
        if (account)
            settings->account = *account;
        if (time)
            settings->timeLimit = *time;
        if (slurmConf)
            settings->slurmConf = *slurmConf;
        if (bridgePython)
            settings->bridgePython = *bridgePython;
        if (nodes)
            settings->nodes = nodes;
        if (gpus)
            settings->gpusPerNode = gpus;
        if (cpuRanks)
            settings->cpuRanksPerNode = cpuRanks;
        if (port)
            settings->masterPort = port;
        if (auto saved = remote::saveSlurmSettings(path, name, *settings); !saved)
            return reportError(saved.error());
        std::printf("saved in %s\n", path.c_str());
    }
    printSettings(name, *settings);
    return kExitOk;
}

}  // namespace wb::app
