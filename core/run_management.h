// Managing stored runs: delete (optionally with the run directory on this machine) and the rule
// for which run directories may be removed. One place for the CLI (`runs delete`) and the GUI's
// run list menu, so both refuse the same things with the same words.
// Threading: the caller's thread, with a RunStore used from that thread only.
#pragma once

#include "core/result.h"
#include "core/run_store.h"

#include <string>

namespace wb::core {

struct DeleteRunRequest {
    std::string runId;
    bool files = false;  ///< also remove the run directory (this machine's "local" runs only)
    bool force = false;  ///< forget a live run in the store (its process is not stopped)
};

struct DeletedRun {
    std::string runId;
    std::string runDir;       ///< where its files were (or stay)
    bool filesRemoved = false;
    uint64_t removedEntries = 0;
};

/// Why `run`'s directory may not be removed from here; empty when it may (or is already gone).
/// Only a directory on this machine, named after the run, holding run.json or status.json: the
/// path comes from the store, which another program could have written.
std::string whyRunDirIsNotRemovable(const RunSummary& run);

/// Deletes the run from the store (every row of it, one transaction) and, with `files`, its run
/// directory. InvalidArgument naming the fix: a live run without `force` (cancel it first), or
/// `files` for a directory that may not be removed — nothing is deleted then. Failed: the store
/// row is gone but the directory could not be fully removed (the message says which).
Result<DeletedRun> deleteRun(RunStore& store, const DeleteRunRequest& request);

}  // namespace wb::core
