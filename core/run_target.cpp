// The state of a run from what a target sees of it (status.json, its processes). Any thread.
#include "core/run_target.h"

#include "core/json_number.h"

#include <nlohmann/json.hpp>

#include <cctype>

#include <limits>
#include <random>

namespace wb::core {

StatusFileFields parseStatusFile(std::string_view text)
{
    StatusFileFields f;
    const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object())
        return f;
    if (auto it = json.find("status"); it != json.end() && it->is_string())
        f.status = it->get<std::string>();
    if (auto it = json.find("exit_code"); it != json.end())
        if (auto code = jsonWholeNumber(*it, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()))
            f.exitCode = static_cast<int>(*code);
    if (auto it = json.find("message"); it != json.end() && it->is_string())
        f.message = it->get<std::string>();
    if (auto it = json.find("pid"); it != json.end())
        f.pid = jsonWholeNumber(*it, 2, std::numeric_limits<int32_t>::max()).value_or(0);  // never init or "all"
    return f;
}

RunState finalStateOf(std::string_view statusWord)
{
    if (statusWord == "finished")
        return RunState::Finished;
    if (statusWord == "stopped")
        return RunState::Cancelled;
    return RunState::Failed;
}

RunStatus statusOfFile(const StatusFileFields& file)
{
    RunStatus status;
    status.status = file.status;
    status.exitCode = file.exitCode.value_or(status.exitCode);
    status.message = file.message;
    return status;
}

RunState runStateOf(const StatusFileFields& file, bool havePid, bool groupAlive, std::optional<bool> writerAlive)
{
    const bool finalWord = !file.status.empty() && file.status != "running" && file.status != "starting";
    // A live writer of a final word is a trainer on its way out (or its pid reused): the group decides.
    if ((writerAlive == true && !finalWord) || (groupAlive && !(finalWord && writerAlive == false)))
        return RunState::Running;
    if (!havePid && file.status.empty())
        return RunState::Pending;  // launched but no pid yet, or never started
    return finalStateOf(file.status);
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
