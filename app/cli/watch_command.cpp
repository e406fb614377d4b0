// `watch RUN` follows a run until it ends, one line per step; `cancel RUN` stops one.
#include "app/cli/cli.h"

#include "core/bridge/bridge_follow.h"
#include "core/run_follower.h"
#include "core/terminal_text.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace wb::app {

namespace {

constexpr const char* kWatchSynopsis = "watch RUN [--interval-ms N] [--idle-exit-s N]";
constexpr const char* kCancelSynopsis = "cancel RUN [--grace-s N]";

void printStep(const core::StepRecord& s)
{
    // A figure a run did not record (a Megatron log's memory after its first report) reads "-".
    char mem[32] = "      -";
    if (std::isfinite(s.memPeakGib))
        std::snprintf(mem, sizeof mem, "%7.3f", s.memPeakGib);
    std::printf("step %6lld  loss %9.4f  step_ms %9.1f  tok/s/gpu %10.1f  mem %s GiB\n",
                static_cast<long long>(s.step), s.loss, s.stepMs, s.tokensPerSPerGpu, mem);
}

void printEvent(const core::EventRecord& e)
{
    if (e.step)
        std::printf("event [%s] step %lld: %s\n", e.level.c_str(), static_cast<long long>(*e.step),
                    e.msg.c_str());
    else
        std::printf("event [%s] %s\n", e.level.c_str(), e.msg.c_str());
}

void printMeta(const core::MetaRecord& m)
{
    const auto known = [](const std::string& v) { return v.empty() ? std::string("?") : v; };
    std::printf("meta: device %s, world %d, layout %s, data %s, seq %d, mbs %d, gbs %d%s\n",
                known(m.device).c_str(), m.worldSize, known(m.layout).c_str(), known(m.dataSource).c_str(),
                m.seqLength, m.microBatchSize, m.globalBatchSize,
                m.tokenCounting == "slots" ? " (token slots: GBS x seq, padding included)" : "");
}

// An event belongs after the step it names (a checkpoint at step 10 follows step 10), as in
// metrics.jsonl; the follower hands steps and events over in separate lists.
void printInFileOrder(const std::vector<core::StepRecord>& steps,
                      const std::vector<core::EventRecord>& events)
{
    size_t next = 0;
    for (const auto& step : steps) {
        while (next < events.size() && events[next].step.value_or(-1) < step.step)
            printEvent(events[next++]);
        printStep(step);
        while (next < events.size() && events[next].step == step.step)
            printEvent(events[next++]);
    }
    while (next < events.size())
        printEvent(events[next++]);
}

// 0 when the run finished; its own exit code (3 OOM, 4 comm, 5 stopped...) when it did not, so
// scripts can tell why; 1 when there is none.
int exitCodeForRun(const core::RunStatus& status)
{
    if (status.state == core::RunState::Finished)
        return kExitOk;
    if (status.exitCode > 0 && status.exitCode < 126)
        return status.exitCode;
    return kExitFailure;
}

// Opens the store, resolves the id, returns the run and its target.
struct OpenedRun {
    std::unique_ptr<core::RunStore> store;
    std::unique_ptr<core::RunTarget> target;
    core::RunSummary summary;
};

core::Result<OpenedRun> openRun(const CliContext& context, const std::string& idOrPrefix)
{
    auto store = context.openStore();
    if (!store)
        return store.error();
    auto id = (*store)->resolveRunId(idOrPrefix);
    if (!id)
        return id.error();
    auto summary = (*store)->run(*id);
    if (!summary)
        return summary.error();
    auto target = context.target(summary->target);
    if (!target)
        return target.error();
    return OpenedRun{std::move(*store), std::move(*target), std::move(*summary)};
}

}  // namespace

int watchCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto interval = args.takeOption("--interval-ms", missing);
    const auto idleText = args.takeOption("--idle-exit-s", missing);
    if (missing || !args.unknownOption().empty() || args.rest().size() != 1)
        return reportUsage("watch takes one RUN id (or prefix)", kWatchSynopsis);
    int intervalMs = 500;
    if (interval) {
        try {
            intervalMs = std::stoi(*interval);
        } catch (const std::exception&) {
            intervalMs = -1;
        }
        if (intervalMs < 10)
            return reportUsage("--interval-ms needs a number of milliseconds >= 10", kWatchSynopsis);
    }

    // --idle-exit-s: stop watching when nothing new arrived for that long (a followed log whose
    // job died says nothing more). The run stays as it is; `watch RUN` goes on later.
    double idleExitS = 0.0;
    if (idleText) {
        try {
            idleExitS = std::stod(*idleText);
        } catch (const std::exception&) {
            idleExitS = -1;
        }
        if (!(idleExitS > 0))
            return reportUsage("--idle-exit-s needs a number of seconds > 0", kWatchSynopsis);
    }

    auto opened = openRun(context, args.rest().front());
    if (!opened)
        return reportError(opened.error());
    auto& [store, target, summary] = *opened;
    std::printf("run %s (%s) on %s: %s\n", core::terminalSafe(summary.id).c_str(), core::terminalSafe(summary.name).c_str(),
                core::terminalSafe(summary.target).c_str(), core::terminalSafe(summary.runDir).c_str());

    // What earlier watches already stored is printed first, so a re-attached watch shows it all.
    if (auto meta = store->meta(summary.id))
        printMeta(*meta);
    if (auto stored = store->steps(summary.id))
        for (const auto& step : *stored)
            printStep(step);
    std::fflush(stdout);

    core::RunFollower follower(*store, *target, summary.id);
    int retryS = 1;  // after a lost connection: 1, 2, 4 … 30 s between attempts
    auto lastNews = std::chrono::steady_clock::now();
    for (;;) {
        auto update = follower.poll();
        if (!update) {
            // A target gives IoError once its own reconnect budget is spent (SSH: 60 s). The run
            // keeps going on its host and the store keeps its offset, so watching on loses
            // nothing: keep trying instead of ending in the middle of a long outage.
            // An error of the store itself (a full disk, a file made read-only meanwhile) is
            // not an outage: waiting does not fix it (issue 20 item 5: watch retried forever).
            if (update.error().code != core::ErrorCode::IoError || update.error().context == store->path())
                return reportError(update.error());
            std::fprintf(stderr,
                         "moe-workbench-cli: %s\n  the run keeps going on its host; trying again in %d s "
                         "(Ctrl-C stops watching; `watch %s` later resumes where this one stopped)\n",
                         update.error().toString().c_str(), retryS, summary.id.c_str());
            std::fflush(stderr);
            std::this_thread::sleep_for(std::chrono::seconds(retryS));
            retryS = std::min(retryS * 2, 30);
            continue;
        }
        retryS = 1;
        if (update->meta)
            printMeta(*update->meta);
        printInFileOrder(update->newSteps, update->newEvents);
        if (update->finished) {
            const auto& status = update->status;
            std::printf("run %s %s (exit %d)%s%s\n", summary.id.c_str(),
                        core::runStateName(status.state), status.exitCode,
                        status.message.empty() ? "" : ": ", status.message.c_str());
            std::fflush(stdout);
            return exitCodeForRun(status);
        }
        std::fflush(stdout);
        if (!update->newSteps.empty() || !update->newEvents.empty() || update->meta)
            lastNews = std::chrono::steady_clock::now();
        else if (idleExitS > 0 &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - lastNews).count() >= idleExitS) {
            std::printf("run %s: nothing new for %.0f s; stopped watching (the run stays %s; `watch %s` goes on "
                        "where this one stopped)\n",
                        summary.id.c_str(), idleExitS, core::runStateName(update->status.state), summary.id.c_str());
            return kExitOk;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(intervalMs));
    }
}

int cancelCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto graceText = args.takeOption("--grace-s", missing);
    if (missing || !args.unknownOption().empty() || args.rest().size() != 1)
        return reportUsage("cancel takes one RUN id (or prefix)", kCancelSynopsis);
    double graceS = 30.0;  // moe-train writes a checkpoint on SIGTERM before it exits
    if (graceText) {
        try {
            graceS = std::stod(*graceText);
        } catch (const std::exception&) {
            graceS = -1;
        }
        if (!(graceS >= 0))
            return reportUsage("--grace-s needs a number of seconds >= 0", kCancelSynopsis);
    }

    auto opened = openRun(context, args.rest().front());
    if (!opened)
        return reportError(opened.error());
    auto& [store, target, summary] = *opened;
    // A Bridge run is ours to stop only when the workbench submitted its job (launch --bridge).
    auto ours = core::bridge::launchedByWorkbench(*store, summary);
    if (!ours)
        return reportError(ours.error());
    if (summary.kind != core::kRunKindMoeTrain && !*ours)
        return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                           "this is a " + summary.kind + " run read from its log, not one the workbench "
                                           "started: stop the job where it runs (scancel JOBID on its cluster)",
                                           summary.id));
    if (summary.runDir.empty())
        return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                           "this run never started; nothing to cancel", summary.id));
    // A run that is over keeps its state: catch the store up from the run directory first (the
    // store may not have seen the end yet), and refuse if the run has ended. A run the store calls
    // cancelled whose processes still live (an interrupted cancel) is cancelled again.
    {
        core::RunFollower probe(*store, *target, summary.id);
        auto now = probe.poll();
        if (!now)
            return reportError(now.error());
        if (now->finished)
            return reportError(core::makeError(
                core::ErrorCode::InvalidArgument,
                std::string("the run already ended: ") + core::runStateName(now->status.state) + " (exit " +
                    std::to_string(now->status.exitCode) + "); a finished run's state is final, nothing to cancel",
                summary.id));
    }
    // Recorded first: a follower that sees the group die must not call this a failure.
    if (auto r = store->setStatus(summary.id, core::RunState::Cancelled, summary.exitCode); !r)
        return reportError(r.error());
    const auto grace = std::chrono::milliseconds(static_cast<int64_t>(graceS * 1000));
    if (auto r = target->cancel(summary.runDir, grace); !r)
        return reportError(r.error());

    // Store what the run wrote while stopping (checkpoint event, end line) and its final state.
    core::RunFollower follower(*store, *target, summary.id);
    for (int round = 0; round < 100; ++round) {
        auto update = follower.poll();
        if (!update)
            return reportError(update.error());
        if (update->finished) {
            std::printf("run %s %s (exit %d)\n", summary.id.c_str(),
                        core::runStateName(update->status.state), update->status.exitCode);
            return kExitOk;
        }
    }
    std::printf("run %s cancelled\n", summary.id.c_str());
    return kExitOk;
}

}  // namespace wb::app
