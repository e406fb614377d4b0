// Pieces the planner commands (plan, lint, generate, predict) share: finding the catalog, parsing
// small option values, reading input files, writing files atomically. Defined in planner_cli.cpp.
// Main thread only.
#pragma once

#include "core/planner/bridge_import.h"
#include "core/planner/catalog.h"
#include "core/planner/workload.h"
#include "core/result.h"
#include "core/text_file.h"  // core::readTextFile: every file a command reads

#include <optional>
#include <string>

namespace wb::app {

/// The built-in catalog (MOE_WORKBENCH_CATALOG, else <exe>/../share/moe-workbench/catalog, else the
/// source tree's resources/catalog), plus the user's files from `userDir` or, when empty,
/// $XDG_DATA_HOME/moe-workbench/catalog.
core::Result<core::planner::Catalog> loadCliCatalog(const std::string& userDir);

/// The smallest world a config's layout tiles: lcm(TP·PP·CP, PP·EP·ETP) (megatron-bridge.md §3).
int smallestWorld(const core::RunConfig& config);

/// A whole number from 1 to 1,000,000, or nullopt.
std::optional<int> parsePositive(const std::string& text);


/// `--workload FILE`: the packed shape `moe-train --data-stats` wrote (prediction.h parsePackedShape).
core::Result<core::planner::PackedShape> readWorkloadFile(const std::string& path);

/// What kind of layout file lint and predict were given: a runtime config (JSON), Megatron-Bridge
/// overrides (YAML, or a key=value dotlist) or a perf launcher command (a dotlist with flags that
/// also names its model, GPU and world).
struct LayoutFileKind {
    bool yaml = false;
    bool dotlist = false;     ///< a dotlist or a perf launcher command
    bool perfLaunch = false;
    core::planner::PerfLaunch perf;  ///< what the perf launcher command names
    bool bridge() const { return yaml || dotlist; }
};
LayoutFileKind layoutFileKind(const std::string& path, const std::string& text);
/// A layout file with nothing but blank lines and '#' comments (or nothing at all): the error that
/// says so and what the file should hold (a parser would report "invalid literal '#'" or "end of
/// input"); nullopt when it has content.
std::optional<core::Error> emptyLayoutFile(const std::string& path, const std::string& text);

/// Writes `content` to `path` atomically (a temporary file in the same folder, then rename).
core::Result<void> writeFileAtomically(const std::string& path, const std::string& content, bool executable);

}  // namespace wb::app
