// Pieces the planner commands (plan, lint, generate, predict) share: finding the catalog, parsing
// small option values, reading input files, writing files atomically. Defined in planner_cli.cpp.
// Main thread only.
#pragma once

#include "app/cli/cli.h"
#include "core/planner/bridge_import.h"
#include "core/planner/calibration.h"
#include "core/planner/catalog.h"
#include "core/planner/layout_file.h"  // layoutFileKind, emptyLayoutFile, smallestWorld
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

/// The largest count the planner commands take (--gpus, --seq, --gbs, ...).
inline constexpr int kMaxCliCount = 1'000'000;
/// A whole number from 1 to kMaxCliCount, or nullopt.
std::optional<int> parsePositive(const std::string& text);


/// `--workload FILE`: the packed shape `moe-train --data-stats` wrote (prediction.h parsePackedShape).
core::Result<core::planner::PackedShape> readWorkloadFile(const std::string& path);

/// `--calibrate-run RUN` (predict, plan): the per-term calibration from that stored run, in the
/// store the context names; errors name the run and what it lacks.
core::Result<core::planner::TermCalibration> termCalibrationFromRun(const CliContext& context, const std::string& run,
                                                                     const core::planner::CalibrationOptions& options);

/// Writes `content` to `path` atomically (a temporary file in the same folder, then rename).
core::Result<void> writeFileAtomically(const std::string& path, const std::string& content, bool executable);

}  // namespace wb::app
