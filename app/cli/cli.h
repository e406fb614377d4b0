// moe-workbench-cli: shared pieces of the commands (global options, store/target access, exit
// codes, error printing). Each command lives in its own *_command.cpp. Main thread only.
#pragma once

#include "core/result.h"
#include "core/run_store.h"
#include "core/run_target.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wb::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  ///< anything but bad input
inline constexpr int kExitUsage = 2;    ///< bad usage or input; the message names the fix

/// Global options, resolved to their defaults.
struct CliContext {
    std::string dbPath;        ///< --db
    std::string runsRoot;      ///< --runs-root
    std::string moeTrainPath;  ///< --moe-train

    core::Result<std::unique_ptr<core::RunStore>> openStore() const;
    /// Password / keyboard-interactive prompts on the controlling terminal (echo off for
    /// secrets) when stdin is a terminal; otherwise none (only the agent and key files are
    /// tried). Single-host ssh: targets and `hosts test`; not yet ssh:A,B or slurm:.
    static std::optional<std::string> askOnTerminal(const std::string& prompt, bool echo);
    /// The target a run was launched on ("local"). InvalidArgument for targets this CLI lacks.
    core::Result<std::unique_ptr<core::RunTarget>> target(const std::string& name) const;
};

/// Command arguments after the command word, with small helpers for option parsing.
class Args {
public:
    explicit Args(std::vector<std::string> args) : m_args(std::move(args)) {}

    /// Removes "--name VALUE" (or "--name=VALUE"); empty optional when absent. Sets `missing`
    /// when the option is present without a value.
    std::optional<std::string> takeOption(const std::string& name, bool& missing);
    /// Removes "--name"; true when present.
    bool takeFlag(const std::string& name);
    /// What is left after the options were taken. An unknown "--x" left over is a usage error.
    const std::vector<std::string>& rest() const { return m_args; }
    /// The first leftover starting with '-', or empty.
    std::string unknownOption() const;

private:
    std::vector<std::string> m_args;
};

/// Prints "moe-workbench-cli: <context>: <message>" to stderr; returns the exit code for it.
int reportError(const core::Error& error);
/// Prints a usage problem and the command's synopsis; returns kExitUsage.
int reportUsage(const std::string& problem, const char* synopsis);
/// After a command took its options: the usage error for an option without its value, an unknown
/// "--x", or (unless `allowPositional`) any argument left over; nullopt when the line is clean.
std::optional<int> rejectLeftovers(const Args& args, bool missing, const char* synopsis,
                                   bool allowPositional = false);

/// Brings the store's view of live runs up to date before a command answers (catch_up.cpp): the
/// runs named (every run when empty) that live on this machine are read from their run
/// directories; with `remoteToo` (`runs --sync`) runs on SSH and Slurm targets too. A run that
/// cannot be caught up is named on stderr and the command answers from the store. Returns how
/// many runs were caught up.
int catchUpRuns(const CliContext& context, core::RunStore& store, const std::vector<std::string>& runIds,
                bool remoteToo = false);
/// The same for runs given as ids or prefixes (compare, export), on a store connection of its
/// own; ids that do not resolve are left for the command to report.
void catchUpNamedRuns(const CliContext& context, const std::vector<std::string>& idsOrPrefixes);
/// "5 min ago" / "never" for a run's synced_at.
std::string syncedAgo(double syncedAt, double now);
double unixNow();

int launchCommand(const CliContext& context, Args args);
int watchCommand(const CliContext& context, Args args);
int runsCommand(const CliContext& context, Args args);
int showCommand(const CliContext& context, Args args);
int cancelCommand(const CliContext& context, Args args);
int hostsCommand(const CliContext& context, Args args);  // SSH hosts: hosts_command.cpp
int hostsScriptCommand(const CliContext& context, Args args);  // hosts script: hosts_script_command.cpp
int hostsSlurmCommand(const CliContext& context, Args args);   // hosts slurm: hosts_slurm_command.cpp
int planCommand(const CliContext& context, Args args);
int lintCommand(const CliContext& context, Args args);
int generateCommand(const CliContext& context, Args args);
int predictCommand(const CliContext& context, Args args);
int compareCommand(const CliContext& context, Args args);
int exportCommand(const CliContext& context, Args args);
int importCommand(const CliContext& context, Args args);  // import --bridge: import_command.cpp

/// Entry point behind main(): global options, then the command.
int runCli(int argc, char** argv);

}  // namespace wb::app
