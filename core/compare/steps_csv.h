// Step metrics as CSV: one header row with the metrics.jsonl key names (DESIGN.md §3.2), then one
// row per step. Numbers are written in the shortest form that reads back to the same double, so
// export → import is lossless; a NaN (a diverged loss) is an empty cell.
// Pure functions plus one atomic file write; any thread.
#pragma once

#include "core/metrics_schema.h"
#include "core/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

/// The column names, in order ("step", "time", "step_ms", ...).
const std::vector<std::string>& stepCsvColumns();

std::string stepsToCsv(const std::vector<StepRecord>& steps);

/// Parses what stepsToCsv wrote. Columns are matched by header name (any order; unknown columns
/// ignored, missing ones stay 0). Corrupt with the line number on a bad cell or a missing "step".
Result<std::vector<StepRecord>> stepsFromCsv(std::string_view csv);

/// Writes the CSV to `path` atomically: a temporary file beside it, flushed, then renamed over it,
/// so a reader never sees half a file and a failed write leaves the old one. IoError on failure.
Result<void> writeStepsCsv(const std::string& path, const std::vector<StepRecord>& steps);

}  // namespace wb::core
