// Writing a file so that a reader sees the old file or the whole new one, never half of one: a
// temporary file beside it (same folder, same filesystem), fsync, then rename over. One place for
// run configs, pid files, generated scripts, reports and exports. Any thread.
#pragma once

#include "core/result.h"

#include <string>
#include <string_view>

namespace wb::core {

enum class FileMode { Regular, Executable };  ///< 0644 or 0755 (before the umask)

/// IoError naming the step, the system's reason and `path` (the folder must exist and be
/// writable); the temporary file is removed on any failure and the old file stays as it was.
Result<void> writeFileAtomically(const std::string& path, std::string_view content, FileMode mode = FileMode::Regular);

}  // namespace wb::core
