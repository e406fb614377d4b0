// The comparison report as one self-contained HTML file (what `compare --report FILE.html` and the
// GUI's "HTML report…" write): the warnings banner at the top, the figures with deltas against the
// baseline, predicted vs measured, the config diff, and the four charts inline as SVG — no file
// beside it, so it can be mailed or attached to a review as is. Written as XHTML (well-formed XML,
// every text escaped), so an XML parser can check it. Pure function + one atomic file write; any thread.
#pragma once

#include "core/compare/compare_report.h"

#include <string>

namespace wb::core {

/// The whole report; `options.chart` sets the charts, `options.title` the heading.
std::string comparisonToHtml(const Comparison& comparison, const ReportOptions& options = {});

/// Writes comparisonToHtml atomically to `path` (its folder must exist). IoError names the file.
Result<void> writeComparisonHtml(const Comparison& comparison, const std::string& path,
                                 const ReportOptions& options = {});

/// True when `path` names an HTML file (.html / .htm, any case): the report is one HTML file then,
/// a folder with report.md and the chart files otherwise.
bool isHtmlReportPath(const std::string& path);

}  // namespace wb::core
