// A growing Megatron log, followed: what the run knows at its start goes into the reader state
// ("follow"), beside the reader's own state ("reader"), so every poll (in any process: a CLI watch
// today, the GUI tomorrow) goes on from the store alone.
#include "core/bridge/bridge_follow.h"

#include "core/text_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <limits>

namespace wb::core::bridge {

namespace {

// What the follower keeps between polls besides the reader's state.
struct FollowFacts {
    int worldGiven = 0;  ///< --gpus (0: from the log)
    int seqFromConfig = 0;
    int gbsFromConfig = 0;
    double peakTflops = 0.0;
    bool launched = false;  ///< the workbench submitted the job (FollowedRunPlace::launched)
    MetaRecord meta;     ///< as last stored
};

std::string followStateJson(const LogState& reader, const FollowFacts& f)
{
    nlohmann::json follow = {{"world_given", f.worldGiven},
                             {"seq_from_config", f.seqFromConfig},
                             {"gbs_from_config", f.gbsFromConfig},
                             {"peak_tflops", f.peakTflops},
                             {"launched", f.launched},
                             {"meta", nlohmann::json::parse(toJsonLine(f.meta), nullptr, false)}};
    return nlohmann::json{{"reader", nlohmann::json::parse(toJson(reader))}, {"follow", follow}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void readFollowState(const std::string& text, LogState& reader, FollowFacts& f)
{
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object())
        return;
    if (j.contains("reader"))
        reader = logStateFromJson(j["reader"].dump());
    if (!j.contains("follow") || !j["follow"].is_object())
        return;
    const auto& o = j["follow"];
    const auto num = [&](const char* key) { return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0; };
    f.worldGiven = static_cast<int>(num("world_given"));
    f.seqFromConfig = static_cast<int>(num("seq_from_config"));
    f.gbsFromConfig = static_cast<int>(num("gbs_from_config"));
    f.peakTflops = num("peak_tflops");
    f.launched = o.contains("launched") && o["launched"].is_boolean() && o["launched"].get<bool>();
    if (o.contains("meta") && o["meta"].is_object())
        if (auto record = parseMetricsLine(o["meta"].dump()); record && std::holds_alternative<MetaRecord>(*record))
            f.meta = std::get<MetaRecord>(*record);
}

// The run's stored follower state (empty before the first poll: every field at its default).
Result<void> loadFollowState(RunStore& store, const std::string& runId, LogState& reader, FollowFacts& facts)
{
    auto text = store.sourceState(runId);
    if (!text)
        return text.error();
    readFollowState(*text, reader, facts);
    return {};
}

std::optional<int> positiveInt(const std::map<std::string, std::string>& values, const char* key)
{
    auto it = values.find(key);
    if (it == values.end())
        return std::nullopt;
    try {
        const int v = std::stoi(it->second);
        if (v > 0)
            return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

// What the log has said so far, over what was known at the start.
StepContext contextNow(const FollowFacts& f, const LogState& s, const std::vector<IterationRecord>& iterations)
{
    StepContext c;
    c.worldSize = f.worldGiven > 0 ? f.worldGiven
                  : s.facts.worldSize ? *s.facts.worldSize
                  : s.facts.highestRankPrefix >= 0 ? s.facts.highestRankPrefix + 1
                                                   : 0;
    c.seqLength = f.seqFromConfig > 0 ? f.seqFromConfig
                  : positiveInt(s.facts.settings, "model.seq_length")
                      .value_or(positiveInt(s.facts.arguments, "seq_length").value_or(0));
    c.globalBatchSize = f.gbsFromConfig > 0 ? f.gbsFromConfig : f.meta.globalBatchSize;
    for (const IterationRecord& it : iterations)
        if (it.globalBatchSize) {
            c.globalBatchSize = static_cast<int>(*it.globalBatchSize);
            break;
        }
    c.peakTflops = f.peakTflops;
    return c;
}

}  // namespace

Result<std::string> startBridgeFollow(RunStore& store, const planner::Catalog& catalog,
                                      const BridgeImportRequest& request, const FollowedRunPlace& place,
                                      std::vector<std::string>* notes)
{
    std::string configText;
    if (request.configPath) {
        auto text = readTextFile(*request.configPath, "config");
        if (!text)
            return text.error();
        configText = std::move(*text);
    }
    // The plan's own prediction, when there is one, is the one the run is measured against.
    auto setup = resolveBridgeRun(catalog, request, configText, LogState{}, {}, /*predict=*/!place.prediction);
    if (!setup)
        return setup.error();
    FollowFacts facts;
    facts.worldGiven = request.gpus.value_or(0);
    facts.seqFromConfig = setup->context.seqLength;
    facts.gbsFromConfig = setup->context.globalBatchSize;
    facts.peakTflops = setup->context.peakTflops;
    facts.launched = place.launched;
    facts.meta = setup->meta;

    NewRun run;
    run.id = place.id;
    run.name = setup->meta.name;
    run.target = place.targetName;
    run.runDir = place.runDir.empty() ? std::filesystem::path(request.logPath).parent_path().string() : place.runDir;
    run.kind = kRunKindBridge;
    run.sourcePath = request.logPath;  // a path on the target, read there
    run.configJson = setup->haveLayout ? setup->configJson : "{}";
    run.configHash = setup->configHash;
    ParsedChunk start;  // nothing read yet: the meta and the follower's memory
    start.meta = setup->meta;
    start.sourceState = followStateJson(LogState{}, facts);
    auto id = store.importRun(run, start, place.prediction ? place.prediction : setup->prediction,
                              place.state, -1);
    if (!id)
        return id.error();
    if (notes)
        *notes = setup->notes;
    return id;
}

Result<std::string> startBridgeFollow(RunStore& store, const planner::Catalog& catalog,
                                      const BridgeImportRequest& request, const std::string& targetName,
                                      std::vector<std::string>* notes)
{
    FollowedRunPlace place;
    place.targetName = targetName;
    return startBridgeFollow(store, catalog, request, place, notes);
}

Result<bool> launchedByWorkbench(RunStore& store, const RunSummary& run)
{
    if (run.kind != kRunKindBridge)
        return false;
    LogState state;
    FollowFacts facts;
    if (auto read = loadFollowState(store, run.id, state, facts); !read)
        return read.error();
    return facts.launched;
}

Result<FollowUpdate> pollBridgeLog(RunStore& store, RunTarget& target, const RunSummary& run, int64_t maxBytes)
{
    FollowUpdate update;
    update.status.state = RunState::Running;
    update.status.processAlive = true;  // unknown: a log does not say; the run is over at train_iters
    if (run.sourcePath.empty())
        return makeError(ErrorCode::InvalidArgument, "this Megatron-Bridge run has no log to follow", run.id);
    LogState state;
    FollowFacts facts;
    if (auto read = loadFollowState(store, run.id, state, facts); !read)
        return read.error();
    // A cancelled job of ours still has its last lines to read (cancel records the state first).
    const bool cancelled = run.status == RunState::Cancelled;
    if (!isLive(run.status) && !(facts.launched && cancelled)) {
        update.finished = true;
        update.status.state = run.status;
        update.status.exitCode = run.exitCode;
        return update;
    }
    // Our own job: its state is asked BEFORE the read, so a job seen gone has written its last
    // byte before that read began, and reading to the end then stores the whole log.
    std::optional<RunStatus> job;
    if (facts.launched) {
        auto now = target.status(run.runDir);
        if (!now)
            return now.error();
        job = *now;
        update.status = *now;
    }
    const bool jobGone = job && !job->processAlive;

    auto chunk = target.readFile(run.sourcePath, run.streamOffset, maxBytes);
    if (!chunk)
        return chunk.error();
    const int64_t lineBefore = state.counts.lines;
    // Once the job is gone nothing more comes: a last line without its newline is read or counted torn.
    const bool chunkToEnd = chunk->offset + static_cast<int64_t>(chunk->bytes.size()) >= chunk->fileSize;
    const LogChunk read = parseLogChunk(chunk->bytes, state, /*atEnd=*/jobGone && chunkToEnd, lineBefore + 1);
    const bool readToEnd = chunk->offset + read.consumedBytes >= chunk->fileSize;

    const StepContext context = contextNow(facts, state, read.iterations);
    ParsedChunk parsed;
    parsed.offset = run.streamOffset;
    parsed.newOffset = run.streamOffset + read.consumedBytes;
    for (const IterationRecord& it : read.iterations)
        parsed.steps.push_back(toStepRecord(it, context));
    for (const MemoryReport& m : read.memory)
        parsed.memory.push_back(toStoreMemory(m));
    parsed.events = read.events;
    // The meta record again when the log told something new (the world size, the sequence, GBS).
    MetaRecord meta = facts.meta;
    if (context.worldSize > 0)
        meta.worldSize = context.worldSize;
    meta.seqLength = context.seqLength;
    meta.globalBatchSize = context.globalBatchSize;
    if (!state.facts.flavor.empty())
        meta.versions["trainer"] = state.facts.flavor;
    if (toJsonLine(meta) != toJsonLine(facts.meta)) {
        parsed.meta = meta;
        update.meta = meta;
        facts.meta = meta;
    }
    parsed.sourceState = followStateJson(state, facts);
    parsed.malformedLines = 0;
    if (read.consumedBytes > 0 || parsed.meta) {
        auto stored = store.ingestParsed(run.id, parsed);
        if (!stored && stored.error().code == ErrorCode::Busy)
            return FollowUpdate{{}, {}, std::nullopt, update.status, false};  // another follower got there first
        if (!stored)
            return stored.error();
        update.newSteps = parsed.steps;
        update.newEvents = parsed.events;
    }
    if (run.status == RunState::Pending)
        (void)store.setStatus(run.id, RunState::Running, -1);
    if (jobGone && readToEnd) {
        // The job's end, as Slurm (or the target) tells it; a cancel we recorded stays a cancel.
        update.finished = true;
        if (cancelled)
            update.status.state = RunState::Cancelled;
        if (auto r = store.setStatus(run.id, update.status.state, update.status.exitCode); !r)
            return r.error();
    } else if (!facts.launched && state.trainIters > 0 && state.maxIteration >= state.trainIters && readToEnd) {
        update.finished = true;
        update.status.state = RunState::Finished;
        update.status.exitCode = 0;
        update.status.processAlive = false;
        update.status.message = "the log reached iteration " + std::to_string(state.maxIteration) + " of " +
                                std::to_string(state.trainIters);
        if (auto r = store.setStatus(run.id, RunState::Finished, 0); !r)
            return r.error();
    }
    return update;
}

}  // namespace wb::core::bridge
