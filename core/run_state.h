// RunState: where a run is in its life, as the store keeps it (runs.status) and targets report it.
// Text only at the edges: the SQL line (RunStore) and what the CLI and the UI print; everything in
// between compares the enum, so a misspelt word cannot silently never match. Any thread (pure).
#pragma once

#include <string_view>

namespace wb::core {

enum class RunState { Pending, Running, Finished, Failed, Cancelled, Unknown };

/// The word stored in runs.status and printed: "pending", "running", "finished", "failed",
/// "cancelled", "unknown".
const char* runStateName(RunState state);
/// The inverse of runStateName; any other text (a store written by something else) is Unknown.
RunState runStateFromName(std::string_view name);

/// The run may still change: launched and not yet seen to end (pending or running).
constexpr bool isLive(RunState state)
{
    return state == RunState::Pending || state == RunState::Running;
}

}  // namespace wb::core
