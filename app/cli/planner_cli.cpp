// The helpers planner_cli.h declares for plan, lint and generate: where the catalog is, small
// option parsing, atomic file writes. Main thread only.
#include "app/cli/planner_cli.h"

#include "core/atomic_file.h"

#include "core/paths.h"
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
    return core::writeFileAtomically(path, content, executable ? core::FileMode::Executable : core::FileMode::Regular);
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
