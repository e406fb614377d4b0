// RunFollower: the watch loop's one step, shared by the CLI (`watch`) and the GUI's worker:
// read new bytes of metrics.jsonl from the target at the store's offset, ingest them, and report
// what arrived and the run's status. Blocking (target I/O, SQLite writes): never on the GUI thread.
// Threading: one follower per run, used from one thread.
#pragma once

#include "core/metrics_schema.h"
#include "core/result.h"
#include "core/run_store.h"
#include "core/run_target.h"

#include <optional>
#include <string>
#include <vector>

namespace wb::core {

struct FollowUpdate {
    std::vector<StepRecord> newSteps;
    std::vector<EventRecord> newEvents;
    std::optional<MetaRecord> meta;  ///< set on the poll that ingested the meta line
    RunStatus status;
    bool finished = false;           ///< process gone and every byte ingested: stop polling
    std::vector<GpuRecord> newGpu;   ///< GPU system samples stored by this poll
};

class RunFollower {
public:
    RunFollower(RunStore& store, RunTarget& target, std::string runId);

    /// One round: read, ingest, status. Updates the store's status when the run ends, and the
    /// run's synced_at (at most every few seconds, and always when something arrived or it ended).
    Result<FollowUpdate> poll();

private:
    Result<FollowUpdate> pollTarget();
    void noteReported(const FollowUpdate& update);

    RunStore& m_store;
    RunTarget& m_target;
    std::string m_runId;
    // What this follower has reported: the store's offset after it, and the last step. When the
    // store is further on, another follower of the run (a second watch, cancel's catch-up) stored
    // the bytes between; their steps are reported from the store, so no step goes unshown.
    std::optional<int64_t> m_seenOffset;  // set at the first poll
    int64_t m_lastStep = -1;
    size_t m_eventsSeen = 0;  // events stored for the run when this follower last looked (in store order)
    // A metrics line longer than one read (no newline in kMaxBytesPerPoll bytes): where it starts
    // and how far this follower has looked for its end. Skipped as one malformed line once found.
    struct OverlongLine {
        int64_t start = 0, scanned = 0;
    };
    std::optional<OverlongLine> m_overlong;
    double m_markedSyncedAt = 0.0;  // unix seconds of this follower's last markSynced
};

/// The run may still change: pending or running in the store.
bool isLive(const RunSummary& run);
/// A live run with something to read: moe-train's run directory, or a followed trainer's log.
bool isFollowable(const RunSummary& run);

/// What a catch-up did: steps stored, and whether the run is over (its end recorded).
struct CatchUp {
    int64_t stepsAdded = 0;
    bool finished = false;
    RunStatus status;
};

/// Brings the store's view of one run up to date from its target, as far as the bytes written so
/// far go: polls until a round stores nothing new (or the run ended, or `maxRounds` rounds of
/// RunFollower's 4 MiB have passed). What `runs`, `show`, `compare` and `export` do before they
/// answer, so a run nobody watched is never shown as it was at launch. Blocking (target I/O).
Result<CatchUp> catchUpRun(RunStore& store, RunTarget& target, const std::string& runId, int maxRounds = 64);

}  // namespace wb::core
