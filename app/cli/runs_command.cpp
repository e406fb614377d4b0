// `runs [--json]` lists the store; `show RUN [--json]` prints one run in full.
#include "app/cli/cli.h"

#include "core/run_follower.h"
#include "core/run_management.h"
#include "core/terminal_text.h"
#include <cmath>
#include <functional>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace wb::app {

namespace {

constexpr const char* kRunsSynopsis =
    "runs [--json] [--sync] | runs rename RUN NAME | runs delete RUN [--files] [--force]";
constexpr const char* kShowSynopsis = "show RUN [--json]";

using nlohmann::ordered_json;

// NaN (a diverged loss, stored as NULL) becomes JSON null instead of an invalid token.
ordered_json number(double value)
{
    return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr);
}

std::string localTime(double unixSeconds)
{
    const auto t = static_cast<std::time_t>(unixSeconds);
    std::tm local{};
    localtime_r(&t, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
    return text;
}

ordered_json summaryJson(const core::RunSummary& r)
{
    return ordered_json{
        {"id", r.id},
        {"name", r.name},
        {"target", r.target},
        {"kind", r.kind},
        {"source_path", r.sourcePath},
        {"status", core::runStateName(r.status)},
        {"exit_code", r.exitCode},
        {"created_at", r.createdAt},
        {"steps", r.steps},
        {"last_loss", r.lastLoss ? number(*r.lastLoss) : ordered_json(nullptr)},
        {"run_dir", r.runDir},
        {"data_source", r.dataSource},
        {"config_hash", r.configHash},
        {"stream_offset", r.streamOffset},
        {"malformed_lines", r.malformedLines},
        {"synced_at", r.syncedAt > 0.0 ? ordered_json(r.syncedAt) : ordered_json(nullptr)},
    };
}

ordered_json stepJson(const core::StepRecord& s)
{
    return ordered_json{
        {"step", s.step}, {"time", number(s.time)}, {"step_ms", number(s.stepMs)},
        {"data_ms", number(s.dataMs)}, {"vision_ms", number(s.visionMs)},
        {"projector_ms", number(s.projectorMs)}, {"decoder_ms", number(s.decoderMs)},
        {"backward_ms", number(s.backwardMs)}, {"optimizer_ms", number(s.optimizerMs)},
        {"images", s.images}, {"image_tokens", s.imageTokens}, {"text_tokens", s.textTokens},
        {"pad_tokens", s.padTokens}, {"effective_tokens", s.effectiveTokens},
        {"skipped_images", s.skippedImages}, {"loss", number(s.loss)},
        {"aux_loss", number(s.auxLoss)}, {"grad_norm", number(s.gradNorm)}, {"lr", number(s.lr)},
        {"mem_alloc_gib", number(s.memAllocGib)}, {"mem_reserved_gib", number(s.memReservedGib)},
        {"mem_peak_gib", number(s.memPeakGib)}, {"tokens_per_s_per_gpu", number(s.tokensPerSPerGpu)},
        {"tflops_per_gpu", number(s.tflopsPerGpu)}, {"mfu", number(s.mfu)},
    };
}

}  // namespace

// Opens the store, resolves RUN (an id or a unique prefix) and runs `body` on them; the exit code
// of the first failure otherwise.
int withRun(const CliContext& context, const std::string& run,
            const std::function<int(core::RunStore& store, const std::string& id)>& body)
{
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    auto id = (*store)->resolveRunId(run);
    if (!id)
        return reportError(id.error());
    return body(**store, *id);
}

int renameRunCommand(const CliContext& context, Args args)
{
    if (!args.unknownOption().empty() || args.rest().size() != 2)
        return reportUsage("runs rename takes a RUN id (or prefix) and the new NAME", kRunsSynopsis);
    const std::string name = args.rest()[1];
    return withRun(context, args.rest()[0], [&](core::RunStore& store, const std::string& id) {
        if (auto r = store.renameRun(id, name); !r)
            return reportError(r.error());
        std::fprintf(stderr, "renamed run %s to \"%s\"\n", id.c_str(), core::terminalSafe(name).c_str());
        return kExitOk;
    });
}

int deleteRunCommand(const CliContext& context, Args args)
{
    core::DeleteRunRequest request;
    request.files = args.takeFlag("--files");
    request.force = args.takeFlag("--force");
    if (!args.unknownOption().empty() || args.rest().size() != 1)
        return reportUsage("runs delete takes one RUN id (or prefix)", kRunsSynopsis);
    return withRun(context, args.rest()[0], [&](core::RunStore& store, const std::string& id) {
        request.runId = id;
        catchUpRuns(context, store, {id});  // a run that ended unwatched is not "live" any more
        auto deleted = core::deleteRun(store, request);
        if (!deleted)
            return reportError(deleted.error());
        if (deleted->filesRemoved)
            std::fprintf(stderr, "deleted run %s and its run directory %s (%llu files)\n", id.c_str(),
                         core::terminalSafe(deleted->runDir).c_str(),
                         static_cast<unsigned long long>(deleted->removedEntries));
        else
            std::fprintf(stderr, "deleted run %s from the store%s\n", id.c_str(),
                         deleted->runDir.empty() ? "" : ("; its run directory stays at " + core::terminalSafe(deleted->runDir)).c_str());
        return kExitOk;
    });
}

int runsCommand(const CliContext& context, Args args)
{
    if (!args.rest().empty() && args.rest().front() == "rename")
        return renameRunCommand(context, Args(std::vector<std::string>(args.rest().begin() + 1, args.rest().end())));
    if (!args.rest().empty() && args.rest().front() == "delete")
        return deleteRunCommand(context, Args(std::vector<std::string>(args.rest().begin() + 1, args.rest().end())));
    const bool json = args.takeFlag("--json");
    const bool sync = args.takeFlag("--sync");
    if (!args.rest().empty())
        return reportUsage("unexpected argument '" + args.rest().front() + "'", kRunsSynopsis);
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    // Live runs on this machine are read from their run directories first (with --sync, those
    // on SSH and Slurm targets too), so the list is never the view of a run at its launch.
    catchUpRuns(context, **store, {}, sync);
    auto runs = (*store)->listRuns();
    if (!runs)
        return reportError(runs.error());

    if (json) {
        ordered_json out = ordered_json::array();
        for (const auto& run : *runs)
            out.push_back(summaryJson(run));
        std::printf("%s\n", out.dump(2).c_str());
        return kExitOk;
    }
    std::printf("%-22s %-20s %-10s %7s %10s  %s\n", "ID", "NAME", "STATUS", "STEPS", "LAST_LOSS",
                "CREATED");
    std::vector<const core::RunSummary*> stale;  // live elsewhere, not caught up now
    for (const auto& run : *runs) {
        char loss[32] = "-";
        if (run.lastLoss)
            std::snprintf(loss, sizeof loss, "%.4f", *run.lastLoss);
        // Names are chosen by whoever started the run: a newline would forge a row, ESC/BEL reach
        // the terminal (issue 20 item 12).
        std::printf("%-22s %-20.20s %-10s %7lld %10s  %s\n", core::terminalSafe(run.id).c_str(),
                    core::terminalSafe(run.name).c_str(),
                    core::runStateName(run.status), static_cast<long long>(run.steps), loss,
                    localTime(run.createdAt).c_str());
        if (core::isFollowable(run) && run.target != "local" && !sync)
            stale.push_back(&run);
    }
    const double now = unixNow();
    for (const auto* run : stale)
        std::printf("note: %s on %s: %s as far as the store knows (%s); `runs --sync` catches it up\n",
                    run->id.c_str(), core::terminalSafe(run->target).c_str(), core::runStateName(run->status),
                    run->syncedAt > 0.0 ? ("last synced " + syncedAgo(run->syncedAt, now)).c_str() : "never synced");
    return kExitOk;
}

int showCommand(const CliContext& context, Args args)
{
    const bool json = args.takeFlag("--json");
    if (!args.unknownOption().empty() || args.rest().size() != 1)
        return reportUsage("show takes one RUN id (or prefix)", kShowSynopsis);
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    auto id = (*store)->resolveRunId(args.rest().front());
    if (!id)
        return reportError(id.error());
    catchUpRuns(context, **store, {*id});
    auto run = (*store)->run(*id);
    if (!run)
        return reportError(run.error());
    auto meta = (*store)->meta(*id);
    auto steps = (*store)->steps(*id);
    if (!steps)
        return reportError(steps.error());
    auto events = (*store)->events(*id);
    if (!events)
        return reportError(events.error());
    const core::StepRecord* last = steps->empty() ? nullptr : &steps->back();

    if (json) {
        ordered_json out = summaryJson(*run);
        out["meta"] = meta ? ordered_json::parse(core::toJsonLine(*meta)) : ordered_json(nullptr);
        out["last_step"] = last ? stepJson(*last) : ordered_json(nullptr);
        ordered_json eventList = ordered_json::array();
        for (const auto& e : *events)
            eventList.push_back({{"time", number(e.time)}, {"level", e.level}, {"msg", e.msg},
                                 {"step", e.step ? ordered_json(*e.step) : ordered_json(nullptr)}});
        out["events"] = std::move(eventList);
        auto gpu = (*store)->gpuRecords(*id);
        out["gpu_samples"] = gpu ? static_cast<int64_t>(gpu->size()) : 0;
        out["last_gpu"] = gpu && !gpu->empty() ? ordered_json::parse(core::toJsonLine(gpu->back())) : ordered_json(nullptr);
        std::printf("%s\n", out.dump(2).c_str());
        return kExitOk;
    }

    std::printf("run       %s\nname      %s\nstatus    %s (exit %d)\ntarget    %s\nrun dir   %s\n"
                "created   %s\nsteps     %lld\nconfig    %s\n",
                core::terminalSafe(run->id).c_str(), core::terminalSafe(run->name).c_str(), core::runStateName(run->status),
                run->exitCode, core::terminalSafe(run->target).c_str(), core::terminalSafe(run->runDir).c_str(),
                localTime(run->createdAt).c_str(),
                static_cast<long long>(run->steps), run->configHash.c_str());
    if (core::isFollowable(*run) && run->target != "local")
        std::printf("synced    %s (`runs --sync` catches it up)\n", syncedAgo(run->syncedAt, unixNow()).c_str());
    if (run->kind != core::kRunKindMoeTrain)
        std::printf("kind      %s (read from %s)\n", run->kind.c_str(), core::terminalSafe(run->sourcePath).c_str());
    if (meta && run->kind != core::kRunKindMoeTrain)
        std::printf("device    %s (world %d, %s)\ndata      %s\ntokens    %s\n",
                    meta->device.empty() ? "?" : meta->device.c_str(), meta->worldSize,
                    meta->layout.empty() ? "layout unknown" : meta->layout.c_str(),
                    meta->dataSource.empty() ? "unknown (mock or real)" : meta->dataSource.c_str(),
                    meta->tokenCounting == "slots" ? "token slots (GBS x seq, padding included)" : "effective");
    else if (meta)
        std::printf("device    %s (world %d, %s)\ndata      %s\nversions  moe-train %s\n",
                    meta->device.c_str(), meta->worldSize, meta->layout.c_str(),
                    meta->dataSource.c_str(),
                    meta->versions.count("moe-train") ? meta->versions.at("moe-train").c_str() : "?");
    if (last) {
        // No peak FLOP/s known (CPU runs): "n/a", not a 0 % that reads like a measurement.
        char mfu[32] = "MFU n/a";
        if (last->mfu > 0.0)
            std::snprintf(mfu, sizeof mfu, "MFU %.2f%%", last->mfu * 100.0);
        std::printf("last step %lld: loss %.4f, %.1f ms/step, %.1f tok/s/GPU, %.2f TFLOP/s/GPU, "
                    "%s, mem peak %.3f GiB\n",
                    static_cast<long long>(last->step), last->loss, last->stepMs,
                    last->tokensPerSPerGpu, last->tflopsPerGpu, mfu, last->memPeakGib);
        if (last->visionMs + last->projectorMs + last->decoderMs + last->backwardMs + last->optimizerMs > 0.0)
            std::printf("time split data %.1f · vision %.1f · projector %.1f · decoder %.1f · backward %.1f · "
                        "optimizer %.1f ms\n",
                        last->dataMs, last->visionMs, last->projectorMs, last->decoderMs, last->backwardMs,
                        last->optimizerMs);
    }
    // The newest GPU system sample, one line per GPU (a CUDA run of moe-train samples NVML).
    if (auto gpu = (*store)->gpuRecords(*id); gpu && !gpu->empty()) {
        const core::GpuRecord& g = gpu->back();
        for (const core::GpuSample& s : g.gpus) {
            const auto value = [](double v, const char* format) {
                char text[32];
                if (!std::isfinite(v))
                    return std::string("?");
                std::snprintf(text, sizeof text, format, v);
                return std::string(text);
            };
            std::printf("gpu %-5d %s %% busy · %s/%s GiB · %s W · %s °C · SM %s MHz (%zu samples; the last after step %lld)\n",
                        s.index, value(s.utilPct, "%.0f").c_str(), value(s.memUsedGib, "%.1f").c_str(),
                        value(s.memTotalGib, "%.1f").c_str(), value(s.powerW, "%.0f").c_str(), value(s.tempC, "%.0f").c_str(),
                        value(s.smClockMhz, "%.0f").c_str(), gpu->size(), static_cast<long long>(g.step.value_or(0)));
        }
    }
    if (run->malformedLines > 0)
        std::printf("warning   %lld malformed metrics line(s) were skipped\n",
                    static_cast<long long>(run->malformedLines));
    for (const auto& e : *events)
        std::printf("event     [%s]%s %s\n", e.level.c_str(),
                    e.step ? (" step " + std::to_string(*e.step) + ":").c_str() : "", e.msg.c_str());
    return kExitOk;
}

}  // namespace wb::app
