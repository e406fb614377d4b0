// Default locations of the workbench's files: the store, the local runs root, the sample data and
// the planner catalogs (XDG base directory spec: XDG_DATA_HOME, XDG_CACHE_HOME, falling back to
// $HOME, then the passwd entry). Defined in paths.cpp. Any thread (they read the environment only).
#pragma once

#include <string>

namespace wb::core {

/// Default store path: $XDG_DATA_HOME/moe-workbench/runs.sqlite (~/.local/share/...).
std::string defaultStorePath();
/// Default folder for run directories of the local target: ~/.cache/moe-workbench/runs.
std::string defaultRunsRoot();
/// Default folder for the bundled sample data: $XDG_DATA_HOME/moe-workbench/samples.
std::string defaultSamplesDir();
/// The user's own planner catalog files: $XDG_DATA_HOME/moe-workbench/catalog.
std::string defaultUserCatalogDir();
/// The built-in planner catalog: $MOE_WORKBENCH_CATALOG, else the install's
/// share/moe-workbench/catalog beside the running executable, else `fallback` (the source tree's).
std::string builtinCatalogDir(const std::string& fallback);

}  // namespace wb::core
