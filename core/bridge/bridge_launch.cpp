// Reading a Bridge launch folder and the launch sequence (see the header). The order mirrors
// startRun (core/run_launch.cpp): every check before anything is recorded, the record before the
// submission, so a job never runs without a run in the store to follow it.
#include "core/bridge/bridge_launch.h"

#include "core/bridge/bridge_follow.h"
#include "core/log.h"
#include "core/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace wb::core::bridge {

namespace fs = std::filesystem;

namespace {

// What travels inside one remote command: a generated folder is a few KiB.
constexpr std::uintmax_t kMaxFolderBytes = 1u << 20;

Error folderError(const std::string& path, const std::string& message)
{
    return makeError(ErrorCode::InvalidArgument, message, path);
}

// A name the manifest gives for a file of the folder: a plain file name, no path.
bool plainName(const std::string& name)
{
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

Result<void> readManifest(const std::string& path, BridgeLaunchFolder& folder)
{
    auto text = readTextFile(path, "Bridge job manifest", 64 * 1024);
    if (!text)
        return text.error();
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object())
        return folderError(path, "not JSON; expected {\"version\": 1, \"script\": \"bridge.sbatch\", ...} (write the "
                                 "folder again with generate --format megatron-bridge)");
    if (j.contains("version") && (!j["version"].is_number_integer() || j["version"].get<int>() > 1))
        return makeError(ErrorCode::Incompatible, "\"version\": written by a newer moe-workbench", path);
    auto textOf = [&](const char* key, bool required) -> Result<std::optional<std::string>> {
        if (!j.contains(key)) {
            if (required)
                return folderError(path, std::string("\"") + key + "\" is missing: it names the sbatch script to submit");
            return std::optional<std::string>();
        }
        if (!j[key].is_string() || j[key].get<std::string>().empty())
            return folderError(path, std::string("\"") + key + "\" must be a non-empty string");
        return std::optional<std::string>(j[key].get<std::string>());
    };
    auto script = textOf("script", true);
    if (!script)
        return script.error();
    auto config = textOf("config", false);
    auto model = textOf("model", false);
    auto hardware = textOf("hardware", false);
    for (auto* r : {&config, &model, &hardware})
        if (!*r)
            return r->error();
    for (const auto& [key, name] : {std::pair{"script", **script}, {"config", config->value_or("x")}})
        if (!plainName(name))
            return folderError(path, std::string("\"") + key + "\" '" + name + "' must name a file of this folder (no '/')");
    folder.script = **script;
    if (*config)
        folder.configPath = (fs::path(folder.dir) / **config).string();
    folder.model = *model;
    folder.hardware = *hardware;
    if (j.contains("gpus")) {
        if (!j["gpus"].is_number_integer() || j["gpus"].get<int64_t>() < 1 || j["gpus"].get<int64_t>() > 1000000)
            return folderError(path, "\"gpus\" must be a whole number of GPUs (the job's world size)");
        folder.gpus = j["gpus"].get<int>();
    }
    return {};
}

}  // namespace

Result<BridgeLaunchFolder> readBridgeLaunchFolder(const std::string& dir)
{
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return makeError(ErrorCode::NotFound,
                         "no such folder; give the folder generate --format megatron-bridge --out DIR wrote", dir);
    BridgeLaunchFolder folder;
    folder.dir = dir;
    const fs::path manifest = fs::path(dir) / kBridgeJobManifest;
    if (!fs::exists(manifest, ec)) {
        if (fs::exists(fs::path(dir) / "run.sbatch", ec))
            return folderError(dir, "not a Megatron-Bridge folder: it holds run.sbatch, a moe-train job (generate "
                                    "--format slurm); launch that with launch --config " + dir +
                                    "/run.json --target slurm:HOST, or write a Bridge job with generate --format "
                                    "megatron-bridge --out DIR");
        return folderError(dir, std::string("not a Megatron-Bridge folder: no ") + kBridgeJobManifest +
                                    "; write one with generate --format megatron-bridge --out DIR");
    }
    if (auto read = readManifest(manifest.string(), folder); !read)
        return read.error();
    const fs::path script = fs::path(dir) / folder.script;
    if (!fs::is_regular_file(script, ec))
        return folderError(script.string(), std::string("the sbatch script that ") + kBridgeJobManifest +
                                                " names (\"script\") is missing; write the folder again with generate "
                                                "--format megatron-bridge --out DIR, or correct \"script\"");
    if (folder.configPath && !fs::is_regular_file(*folder.configPath, ec))
        return folderError(*folder.configPath, std::string("the Bridge config that ") + kBridgeJobManifest +
                                                   " names (\"config\") is missing; restore it or remove \"config\"");
    const fs::path predictionPath = fs::path(dir) / "prediction.json";
    if (fs::exists(predictionPath, ec)) {
        auto prediction = loadPrediction(predictionPath.string());
        if (!prediction) {
            Error error = prediction.error();
            error.code = ErrorCode::InvalidArgument;
            error.message += " (remove it to launch without a prediction)";
            return error;
        }
        folder.prediction = std::move(*prediction);
    }
    // The folder's regular files go to the run directory: the script's overrides and environment
    // files sit beside it as they do here (hidden files, an editor's swap files, stay). Sorted, so
    // a repeated launch sends the same bytes.
    std::uintmax_t total = 0;
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.is_regular_file(ec) && entry.path().filename().string().front() != '.')
            paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    for (const fs::path& p : paths) {
        total += fs::file_size(p, ec);
        if (total > kMaxFolderBytes)
            return folderError(dir, "the folder holds more than 1 MiB; launch sends only the generated job's small files "
                                    "(keep data and checkpoints elsewhere, on the cluster's filesystem)");
        auto content = readTextFile(p.string(), "file of the Bridge folder");
        if (!content)
            return content.error();
        folder.files.emplace_back(p.filename().string(), std::move(*content));
    }
    return folder;
}

Result<StartedRun> startBridgeLaunch(RunStore& store, const planner::Catalog& catalog, RunTarget& target,
                                     const BridgeLaunchFolder& folder, const std::string& name,
                                     std::vector<std::string>* notes)
{
    // The id first: the run directory, and so the log's path, are named after it.
    const std::string id = newRunId();
    auto runDir = target.prepareBridgeLaunch(id);
    if (!runDir)
        return runDir.error();
    if (auto intact = store.checkIntegrity(); !intact)
        return intact.error();

    BridgeImportRequest request;
    request.logPath = *runDir + "/" + kBridgeJobLog;
    request.configPath = folder.configPath;
    request.name = name.empty() ? fs::path(fs::absolute(folder.dir).lexically_normal()).filename().string() : name;
    if (request.name.empty())
        request.name = "megatron-bridge";
    // The manifest names the model and the GPU; the prediction, when it is there, says both GPU and world.
    request.model = folder.model;
    request.hardware = folder.hardware ? folder.hardware
                       : folder.prediction && !folder.prediction->hardware.empty() ? std::optional(folder.prediction->hardware)
                                                                                   : std::nullopt;
    request.gpus = folder.gpus ? folder.gpus
                   : folder.prediction && folder.prediction->gpus > 0 ? std::optional(folder.prediction->gpus)
                                                                      : std::nullopt;
    FollowedRunPlace place;
    place.id = id;
    place.targetName = target.name();
    place.runDir = *runDir;
    place.launched = true;
    place.prediction = folder.prediction;
    place.state = RunState::Pending;
    auto recorded = startBridgeFollow(store, catalog, request, place, notes);
    if (!recorded)
        return recorded.error();

    BridgeJobRequest job;
    job.runId = id;
    job.name = request.name;
    job.files = folder.files;
    job.script = folder.script;
    job.launchToken = newLaunchToken();
    auto launched = target.launchBridge(job);
    if (!launched) {
        (void)store.setStatus(id, RunState::Failed, -1);
        Error error = launched.error();
        error.message += " (run " + id + " is recorded as failed)";
        return error;
    }
    if (auto r = store.setStatus(id, RunState::Running, -1); !r)
        return r.error();
    wb::log::get("core")->info("submitted Megatron-Bridge run {} on {} in {}", id, launched->target, launched->runDir);
    return StartedRun{id, std::move(*launched)};
}

}  // namespace wb::core::bridge
