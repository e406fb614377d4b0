// RunState names: the words stored in runs.status and printed by the CLI. Any thread.
#include "core/run_state.h"

#include <array>
#include <utility>

namespace wb::core {

namespace {

constexpr std::array<std::pair<RunState, const char*>, 6> kStateNames = {{
    {RunState::Pending, "pending"},
    {RunState::Running, "running"},
    {RunState::Finished, "finished"},
    {RunState::Failed, "failed"},
    {RunState::Cancelled, "cancelled"},
    {RunState::Unknown, "unknown"},
}};

}  // namespace

const char* runStateName(RunState state)
{
    for (const auto& [value, name] : kStateNames)
        if (value == state)
            return name;
    return "unknown";
}

RunState runStateFromName(std::string_view name)
{
    for (const auto& [value, word] : kStateNames)
        if (name == word)
            return value;
    return RunState::Unknown;
}

}  // namespace wb::core
