// Catching the store up before a command answers (issue 18 item 1): `runs`, `show`, `compare` and
// `export` read the run directories of live runs on this machine first, so a run launched with
// `launch` and never watched is shown as it is now, not as it was at launch. Runs on SSH or Slurm
// targets are caught up only when asked (`runs --sync`): that takes a network connection, and a
// listing must not hang on a host that is down. Main thread only.
#include "app/cli/cli.h"

#include "core/run_follower.h"
#include "core/terminal_text.h"

#include <chrono>
#include <cstdio>
#include <map>

namespace wb::app {

namespace {

constexpr const char* kLocalTarget = "local";

}  // namespace

double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string syncedAgo(double syncedAt, double now)
{
    if (syncedAt <= 0.0)
        return "never";
    const double s = now - syncedAt;
    char text[64];
    if (s < 90.0)
        std::snprintf(text, sizeof text, "%.0f s ago", s < 0.0 ? 0.0 : s);
    else if (s < 90.0 * 60.0)
        std::snprintf(text, sizeof text, "%.0f min ago", s / 60.0);
    else if (s < 36.0 * 3600.0)
        std::snprintf(text, sizeof text, "%.1f h ago", s / 3600.0);
    else
        std::snprintf(text, sizeof text, "%.1f days ago", s / 86400.0);
    return text;
}

int catchUpRuns(const CliContext& context, core::RunStore& store, const std::vector<std::string>& runIds,
                bool remoteToo)
{
    std::vector<core::RunSummary> candidates;
    if (runIds.empty()) {
        auto runs = store.listRuns();
        if (!runs) {
            std::fprintf(stderr, "moe-workbench-cli: warning: cannot list the runs to catch them up: %s\n",
                         runs.error().toString().c_str());
            return 0;
        }
        candidates = std::move(*runs);
    } else {
        for (const auto& id : runIds)
            if (auto run = store.run(id))
                candidates.push_back(std::move(*run));
    }
    std::map<std::string, std::unique_ptr<core::RunTarget>> targets;  // made once per target name
    std::map<std::string, std::string> unreachable;                    // target -> why
    int caughtUp = 0;
    for (const auto& run : candidates) {
        if (!core::isFollowable(run) || (run.target != kLocalTarget && !remoteToo))
            continue;
        if (unreachable.count(run.target))
            continue;
        auto it = targets.find(run.target);
        if (it == targets.end()) {
            auto made = context.target(run.target);
            if (!made) {
                unreachable[run.target] = made.error().toString();
                std::fprintf(stderr, "moe-workbench-cli: warning: cannot reach target %s to catch up its runs: %s\n",
                             core::terminalSafe(run.target).c_str(), made.error().toString().c_str());
                continue;
            }
            it = targets.emplace(run.target, std::move(made).value()).first;
        }
        auto result = core::catchUpRun(store, *it->second, run.id);
        if (!result) {
            // The stored view stays; the command still answers from it, and says why it is not current.
            std::fprintf(stderr, "moe-workbench-cli: warning: run %s on %s was not caught up (%s); showing what the store has\n",
                         run.id.c_str(), core::terminalSafe(run.target).c_str(), result.error().toString().c_str());
            continue;
        }
        ++caughtUp;
    }
    return caughtUp;
}

void catchUpNamedRuns(const CliContext& context, const std::vector<std::string>& idsOrPrefixes)
{
    auto store = context.openStore();
    if (!store)
        return;  // the command opens it again and reports why it cannot
    std::vector<std::string> ids;
    for (const auto& given : idsOrPrefixes)
        if (auto id = (*store)->resolveRunId(given))
            ids.push_back(std::move(*id));
    if (!ids.empty())
        catchUpRuns(context, **store, ids);
}

}  // namespace wb::app
