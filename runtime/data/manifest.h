// The data manifest: JSONL lines {"image": path, "caption": text}, image paths relative to the
// manifest's folder (or absolute). Pure functions; any thread.
#pragma once

#include "core/result.h"

#include <string>
#include <vector>

namespace wb::rt {

struct ManifestEntry {
    std::string imagePath;  ///< absolute (resolved against the manifest's folder); may be empty
    std::string caption;
};

/// Reads a manifest. Blank lines are skipped; a malformed line is an error naming its line number
/// (a manifest is input the user controls, so we refuse rather than silently train on less).
core::Result<std::vector<ManifestEntry>> loadManifest(const std::string& path);

}  // namespace wb::rt
