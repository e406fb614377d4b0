// The helpers planner_cli.h declares for plan, lint and generate: where the catalog is, small
// option parsing, atomic file writes. Main thread only.
#include "app/cli/planner_cli.h"

#include "core/planner/prediction.h"
#include "core/run_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>

namespace wb::app {

namespace fs = std::filesystem;
using namespace core::planner;


core::Result<PackedShape> readWorkloadFile(const std::string& path)
{
    auto text = core::readTextFile(path, "workload file");
    if (!text)
        return text.error();
    return parsePackedShape(*text, path);
}

core::Result<Catalog> loadCliCatalog(const std::string& userDir)
{
    return loadCatalog(core::builtinCatalogDir(WB_BUILTIN_CATALOG_DIR),
                       userDir.empty() ? core::defaultUserCatalogDir() : userDir);
}

std::optional<int> parsePositive(const std::string& text)
{
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 1 || v > kMaxCliCount)
        return std::nullopt;
    return static_cast<int>(v);
}

core::Result<void> writeFileAtomically(const std::string& path, const std::string& content, bool executable)
{
    // Same folder, so the rename is atomic; a reader sees the old file or the whole new one.
    std::string tmp = path + ".tmp-XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0)
        return core::makeError(core::ErrorCode::IoError, "cannot create a temporary file beside it", path);
    size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n <= 0) {
            ::close(fd);
            ::unlink(tmp.c_str());
            return core::makeError(core::ErrorCode::IoError, "write failed (disk full?)", path);
        }
        written += static_cast<size_t>(n);
    }
    const mode_t mode = executable ? 0755 : 0644;
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        return core::makeError(core::ErrorCode::IoError, "cannot write the file", path);
    }
    return {};
}

core::Result<core::planner::TermCalibration> termCalibrationFromRun(const CliContext& context, const std::string& run,
                                                                     const core::planner::CalibrationOptions& options)
{
    auto store = context.openStore();
    if (!store)
        return store.error();
    auto id = (*store)->resolveRunId(run);
    if (!id)
        return id.error();
    return core::planner::calibrateTermsFromStore(**store, *id, options);
}

}  // namespace wb::app
