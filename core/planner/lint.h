// Layout lint: every rule of megatron-bridge.md §3 (sizes) and §6 (framework assertions and
// documented limits), plus hardware rules (HybridEP/DeepEP SM support, NVLink-domain limits).
// Rules RunConfig's validateRunConfig/validateLayout already check are reused, not re-implemented:
// their problems are mapped to rule ids here. Pure functions; any thread.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout.h"

#include <string>
#include <vector>

namespace wb::core::planner {

enum class LintSeverity {
    Error,    ///< the framework asserts or the launcher refuses: the layout cannot run
    Warning,  ///< runs, but does not do what was asked or is known to hurt
    Note,     ///< something the generated config/environment must carry
};

const char* lintSeverityName(LintSeverity severity);

struct LintFinding {
    std::string rule;      ///< stable id, e.g. "cuda-graph-moe-preprocess-needs-router"
    std::string source;    ///< where the rule comes from: "megatron-bridge.md §6", "hardware", ...
    LintSeverity severity = LintSeverity::Error;
    std::string field;     ///< RunConfig path the fix touches ("cuda_graph.scope")
    std::string message;   ///< what is wrong, naming the rule
    std::string fix;       ///< what to do
    std::string toString() const;
};

struct LintContext {
    const ModelConfig* model = nullptr;      ///< required
    const HardwareSpec* hardware = nullptr;  ///< optional: hardware rules are skipped without it
    int seqLength = 4096;
    bool bf16AdamMoments = false;            ///< Workload::bf16AdamMoments / train.exp_avg*_dtype bf16
};

std::vector<LintFinding> lintLayout(const Layout& layout, const LintContext& context);

/// Lints a whole RunConfig for a world size (used by `moe-workbench-cli lint`).
std::vector<LintFinding> lintRunConfig(const RunConfig& config, int worldSize, const HardwareSpec* hardware);

bool hasErrors(const std::vector<LintFinding>& findings);

/// The ids of every rule lintLayout can report (for docs and the test that each one can fire).
const std::vector<std::string>& lintRuleIds();

}  // namespace wb::core::planner
