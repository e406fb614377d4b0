// RunFollower::poll — one round of the watch loop (see run_follower.h). One thread per follower.
//
// Order matters: the target's status (is the process alive?) is read BEFORE the metrics. A process
// seen dead has written its last byte, so a read after that sees everything; reading metrics first
// could miss the final lines written between the two calls and end the watch early.
#include "core/run_follower.h"

#include "core/bridge/bridge_follow.h"

#include "core/log.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <vector>

namespace wb::core {

namespace {

// 4 MiB per round keeps one transaction short (the GUI reads the store concurrently) while still
// catching up on a long run in a few rounds.
constexpr int64_t kMaxBytesPerPoll = 4 << 20;
// How often an idle follower records that it looked (RunStore::markSynced).
constexpr double kSyncMarkIntervalS = 5.0;

double unixNow()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct FinalState {
    RunState state;
    std::string message;
};

FinalState finalStateOf(const RunStatus& status)
{
    if (status.status == "finished")
        return {RunState::Finished, status.message};
    if (status.status == "stopped")
        return {RunState::Cancelled, status.message};
    if (status.status.empty())
        return {RunState::Failed, "the process ended without writing status.json" +
                                      (status.message.empty() ? "" : " (" + status.message + ")")};
    if (status.status == "running")
        return {RunState::Failed,
                "the process vanished while status.json still said running (killed?)"};
    return {RunState::Failed, status.message.empty() ? status.status : status.message};
}

template <typename T>
void appendMoved(std::vector<T>& to, std::vector<T>& from)
{
    if (to.empty())
        to = std::move(from);
    else
        to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

RunFollower::RunFollower(RunStore& store, RunTarget& target, std::string runId)
    : m_store(store), m_target(target), m_runId(std::move(runId))
{
}

void RunFollower::noteReported(const FollowUpdate& update)
{
    for (const auto& step : update.newSteps)
        m_lastStep = std::max(m_lastStep, step.step);
    m_eventsSeen += update.newEvents.size();
}

Result<FollowUpdate> RunFollower::poll()
{
    auto update = pollTarget();
    if (!update)
        return update;
    // A successful round read the target: the store's view is current as of now. Written at most
    // every few seconds while nothing happens (the GUI polls every 300 ms).
    const double now = unixNow();
    if (!update->newSteps.empty() || update->finished || now - m_markedSyncedAt >= kSyncMarkIntervalS) {
        if (auto r = m_store.markSynced(m_runId, now); !r && r.error().code != ErrorCode::Busy)
            return r.error();
        m_markedSyncedAt = now;
    }
    return update;
}

bool isLive(const RunSummary& run)
{
    return isLive(run.status);
}

bool isFollowable(const RunSummary& run)
{
    if (!isLive(run))
        return false;
    return run.kind == kRunKindBridge ? !run.sourcePath.empty() : !run.runDir.empty();
}

Result<CatchUp> catchUpRun(RunStore& store, RunTarget& target, const std::string& runId, int maxRounds)
{
    RunFollower follower(store, target, runId);
    CatchUp out;
    for (int round = 0; round < maxRounds; ++round) {
        auto before = store.run(runId);
        if (!before)
            return before.error();
        auto update = follower.poll();
        if (!update)
            return update.error();
        auto after = store.run(runId);
        if (!after)
            return after.error();
        out.stepsAdded += after->steps - before->steps;
        out.status = update->status;
        if (update->finished) {
            out.finished = true;
            break;
        }
        if (after->streamOffset == before->streamOffset)
            break;  // everything written so far is stored; the run goes on
    }
    return out;
}

Result<FollowUpdate> RunFollower::pollTarget()
{
    auto summary = m_store.run(m_runId);
    if (!summary)
        return summary.error();
    // Another trainer's log (a Megatron-Bridge job): read and stored by its own reader.
    if (summary->kind == kRunKindBridge)
        return bridge::pollBridgeLog(m_store, m_target, *summary, kMaxBytesPerPoll);
    if (summary->runDir.empty())
        return makeError(ErrorCode::InvalidArgument,
                         "this run has no run directory (it never launched); nothing to follow",
                         m_runId);

    FollowUpdate update;
    auto status = m_target.status(summary->runDir);
    if (!status)
        return status.error();
    update.status = *status;

    const int64_t offset = summary->streamOffset;
    if (!m_seenOffset) {  // what was stored before this follower started is not its to report
        auto last = m_store.lastStep(m_runId);
        if (!last)
            return last.error();
        auto events = m_store.events(m_runId);
        if (!events)
            return events.error();
        m_seenOffset = offset;
        m_lastStep = *last;
        m_eventsSeen = events->size();
    } else if (offset != *m_seenOffset) {
        // Stored by another follower meanwhile: report its steps and events from the store.
        auto others = m_store.steps(m_runId, m_lastStep);
        if (!others)
            return others.error();
        auto events = m_store.events(m_runId);
        if (!events)
            return events.error();
        update.newSteps = std::move(*others);
        if (events->size() > m_eventsSeen)
            update.newEvents.assign(std::make_move_iterator(events->begin() + static_cast<std::ptrdiff_t>(m_eventsSeen)),
                                    std::make_move_iterator(events->end()));
        m_seenOffset = offset;
    }
    if (m_overlong && m_overlong->start != offset)
        m_overlong.reset();  // another follower got past it
    if (m_overlong) {
        // Look for the end of the over-long line, one read per poll; the stream goes on after it
        // (issue 20 item 4: without this the follower read the same 4 MiB forever).
        auto scan = m_target.readMetrics(summary->runDir, m_overlong->scanned, kMaxBytesPerPoll);
        if (!scan)
            return scan.error();
        const size_t newline = scan->bytes.find('\n');
        const bool atEnd = scan->offset + static_cast<int64_t>(scan->bytes.size()) >= scan->fileSize;
        if (newline == std::string::npos && !(atEnd && !status->processAlive)) {
            m_overlong->scanned = scan->offset + static_cast<int64_t>(scan->bytes.size());
            noteReported(update);
            return update;
        }
        // Past its newline, or (the writer is gone) to the end of the file: a torn last line.
        const int64_t end = newline == std::string::npos ? scan->fileSize
                                                         : scan->offset + static_cast<int64_t>(newline) + 1;
        auto skipped = m_store.skipLine(m_runId, offset, end);
        if (!skipped && skipped.error().code != ErrorCode::Busy)
            return skipped.error();
        m_overlong.reset();
        if (skipped)
            m_seenOffset = end;
        noteReported(update);
        return update;  // the next poll reads on from the new offset
    }
    auto chunk = m_target.readMetrics(summary->runDir, offset, kMaxBytesPerPoll);
    if (!chunk)
        return chunk.error();
    const bool readToEnd =
        chunk->offset + static_cast<int64_t>(chunk->bytes.size()) >= chunk->fileSize;

    std::optional<EndRecord> end;
    if (!chunk->bytes.empty()) {
        auto ingested = m_store.ingest(m_runId, offset, chunk->bytes);
        if (!ingested && ingested.error().code == ErrorCode::Busy) {
            // Another follower stored these bytes between our read and now: the next poll
            // reports them from the store. Not finished yet: there may be more.
            noteReported(update);
            return update;
        }
        if (!ingested)
            return ingested.error();
        end = ingested->end;
        m_seenOffset = ingested->newOffset;
        if (ingested->newOffset == offset && static_cast<int64_t>(chunk->bytes.size()) >= kMaxBytesPerPoll)
            m_overlong = OverlongLine{offset, offset + static_cast<int64_t>(chunk->bytes.size())};
        // Report exactly what was stored: the records ingest read from the bytes it consumed
        // (after what another follower stored, already in `update`).
        appendMoved(update.newSteps, ingested->steps);
        appendMoved(update.newEvents, ingested->events);
        appendMoved(update.newGpu, ingested->gpu);
        if (ingested->meta)
            update.meta = std::move(ingested->meta);
    }

    noteReported(update);
    if (status->processAlive) {
        if (summary->status == RunState::Pending)
            (void)m_store.setStatus(m_runId, RunState::Running, -1);
        return update;
    }
    // Dead: done once everything up to the end of the file is read. A torn last line from a
    // killed writer will never complete, so it does not keep the watch alive.
    if (!readToEnd)
        return update;

    update.finished = true;
    FinalState final = finalStateOf(*status);
    int exitCode = status->exitCode;
    if (exitCode < 0 && end)
        exitCode = end->exitCode;
    // A cancel that had to SIGKILL leaves status.json at "running"; the user's intent wins.
    if (summary->status == RunState::Cancelled && final.state == RunState::Failed)
        final.state = RunState::Cancelled;
    update.status.state = final.state;
    update.status.exitCode = exitCode;
    update.status.message = final.message;
    if (auto r = m_store.setStatus(m_runId, final.state, exitCode); !r)
        return r.error();
    wb::log::get("core")->debug("run {} ended: {} (exit {}) {}", m_runId,
                                runStateName(final.state), exitCode, final.message);
    return update;
}

}  // namespace wb::core
