#include "core/run_management.h"

#include "core/run_follower.h"

#include <filesystem>

namespace wb::core {

namespace fs = std::filesystem;

std::string whyRunDirIsNotRemovable(const RunSummary& run)
{
    if (run.target != "local")
        return "it is on " + run.target + ", not on this machine; remove it there";
    if (run.runDir.empty())
        return "the run has no run directory";
    const fs::path dir(run.runDir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return "";  // already gone: nothing to remove
    if (dir.filename() != run.id || !(fs::exists(dir / "run.json", ec) || fs::exists(dir / "status.json", ec)))
        return run.runDir + " does not look like this run's directory (named after the run, holding its run.json)";
    return "";
}

Result<DeletedRun> deleteRun(RunStore& store, const DeleteRunRequest& request)
{
    auto run = store.run(request.runId);
    if (!run)
        return run.error();
    if (isLive(*run) && !request.force)
        return makeError(ErrorCode::InvalidArgument,
                         "the run is still " + std::string(runStateName(run->status)) + " on " + run->target +
                             "; nothing was deleted. Cancel it first, or force the delete to forget it in "
                             "the store (its process is not stopped)",
                         request.runId);
    if (request.files) {
        if (const std::string why = whyRunDirIsNotRemovable(*run); !why.empty())
            return makeError(ErrorCode::InvalidArgument,
                             "its run directory cannot be removed from here: " + why +
                                 "; nothing was deleted. Delete only the stored run instead",
                             request.runId);
    }
    // The store first: a directory left behind is harmless and can be removed by hand; a stored
    // run whose files went is not, but neither is reached without the other on success.
    if (auto r = store.deleteRun(request.runId); !r)
        return r.error();
    DeletedRun out{request.runId, run->runDir, false, 0};
    if (request.files && !run->runDir.empty()) {
        std::error_code ec;
        out.removedEntries = fs::remove_all(run->runDir, ec);
        if (ec)
            return makeError(ErrorCode::Failed,
                             "the run was deleted from the store, but its run directory " + run->runDir +
                                 " was not fully removed: " + ec.message(),
                             request.runId);
        out.filesRemoved = true;
    }
    return out;
}

}  // namespace wb::core
