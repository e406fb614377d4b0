// RunState names: the words stored in runs.status and printed by the CLI. Any thread.
#include "core/run_target.h"

#include <cctype>

#include <array>
#include <random>
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

bool validRunId(const std::string& id)
{
    if (id.empty() || id == "." || id == ".." || id.front() == '-' || id.size() > 200)
        return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
            return false;
    return true;
}

std::string newLaunchToken()
{
    std::random_device random;  // /dev/urandom on Linux: no seeding, no shared state
    static constexpr char kHex[] = "0123456789abcdef";
    std::string token;
    for (int i = 0; i < 4; ++i)
        for (uint32_t word = random(), n = 0; n < 8; ++n, word >>= 4)
            token += kHex[word & 0xF];
    return token;
}

}  // namespace wb::core
