// Pieces the planner commands (plan, lint, generate) share: finding the catalog, parsing small
// option values, writing files atomically. Defined in plan_command.cpp. Main thread only.
#pragma once

#include "core/planner/catalog.h"
#include "core/result.h"

#include <optional>
#include <string>

namespace wb::app {

/// The built-in catalog (MOE_WORKBENCH_CATALOG, else <exe>/../share/moe-workbench/catalog, else the
/// source tree's resources/catalog), plus the user's files from `userDir` or, when empty,
/// $XDG_DATA_HOME/moe-workbench/catalog.
core::Result<core::planner::Catalog> loadCliCatalog(const std::string& userDir);

/// A whole number from 1 to 1,000,000, or nullopt.
std::optional<int> parsePositive(const std::string& text);

/// Writes `content` to `path` atomically (a temporary file in the same folder, then rename).
core::Result<void> writeFileAtomically(const std::string& path, const std::string& content, bool executable);

}  // namespace wb::app
