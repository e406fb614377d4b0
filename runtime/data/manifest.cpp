// Manifest reader (see manifest.h). Any thread.
#include "runtime/data/manifest.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace wb::rt {

core::Result<std::vector<ManifestEntry>> loadManifest(const std::string& path)
{
    namespace fs = std::filesystem;
    std::ifstream in(path);
    if (!in)
        return core::makeError(core::ErrorCode::NotFound,
                               "cannot open the manifest; build a sample set with moe-sample-set "
                               "or point data.manifest at a JSONL file",
                               path);
    const fs::path folder = fs::absolute(fs::path(path)).parent_path();
    std::vector<ManifestEntry> entries;
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!json.is_object() || !json.contains("caption") || !json["caption"].is_string())
            return core::makeError(core::ErrorCode::Corrupt,
                                   "line " + std::to_string(lineNo) +
                                       " is not {\"image\": path, \"caption\": text}",
                                   path);
        ManifestEntry entry;
        entry.caption = json["caption"].get<std::string>();
        if (json.contains("image") && json["image"].is_string()) {
            fs::path image = json["image"].get<std::string>();
            entry.imagePath = (image.is_absolute() ? image : folder / image).lexically_normal().string();
        }
        entries.push_back(std::move(entry));
    }
    if (entries.empty())
        return core::makeError(core::ErrorCode::InvalidArgument, "the manifest has no samples", path);
    return entries;
}

}  // namespace wb::rt
