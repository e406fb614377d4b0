// The FSDP-versus-3D decision guide (reference/decision-guide.md, from the Megatron-Bridge MoE VLM
// training guide) as data: the user's answers → the path, the rules that fired (quoting the
// guide and saying what was answered), the tuning knobs in the guide's order, and the cautions
// that apply. The one place the path is decided: the CLI's plan and the GUI's planning view both
// call recommend() with the answers as given. Pure; any thread.
#pragma once

#include "core/result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core::planner {

/// The guide's questions: yes, no, or not answered (nullopt). A rule fires only on the answer its
/// sentence names; an unanswered question makes no condition hold.
struct GuideAnswers {
    std::optional<bool> firstLaunch;           ///< first launch of this VLM?
    std::optional<bool> stableUnderFsdp;       ///< already runs stably under FSDP?
    std::optional<bool> cleanStageBoundaries;  ///< PP stage boundaries clean and reproducible?
    std::optional<bool> memoryFitFirst;        ///< fitting in memory matters more than throughput?
    std::optional<bool> visionFrozen;          ///< decoder-focused tuning with the vision module frozen?
    std::optional<bool> timeForDeepTesting;    ///< time to test MBS, recompute and graph scope together?
    // Facts about the planned run, for the cautions.
    bool mockData = false;
    bool hasImages = true;
    bool textOnlyModel = false;       ///< the model has no vision tower (Qwen3-30B-A3B): the VLM knobs do not apply
    bool comparingRuns = false;       ///< the user compares FSDP against 3D runs
    bool usesEtp = false;
    bool fullRecompute = false;
    bool cudaGraphs = false;
    bool gb200Class = false;          ///< NVLink domain > 8 (HybridEP default)
};

struct GuideRule {
    std::string id;       ///< "fsdp-first-launch"
    std::string path;     ///< "fsdp" | "3d"
    std::string guideText;    ///< the guide's wording (English restatement)
    std::string guideTextZh;  ///< the guide's original wording
    std::string question;     ///< the question whose answer decides it ("" for the workflow rule)
    bool firesOn = true;      ///< the answer that makes the condition hold
    /// What was answered, for the texts: "answered yes", "answered no", "not answered".
    std::string answered;
};

struct GuideKnob {
    int order = 0;        ///< the guide's order, 1-based
    std::string id;
    std::string text;
    bool applies = true;  ///< false: listed for completeness, not relevant to these answers
};

struct GuideCaution {
    std::string id;
    std::string text;
};

struct GuideRecommendation {
    std::string path;                  ///< "fsdp" | "3d"
    std::vector<GuideRule> rules;      ///< the rules that fired (for the path chosen)
    /// On the FSDP path: the guide's "choose 3D" conditions that do not hold, each with what was
    /// answered (3D needs all of them and no "choose FSDP" condition). Empty on the 3D path.
    std::vector<GuideRule> missingFor3d;
    std::vector<GuideKnob> nextKnobs;  ///< in the guide's order
    std::vector<GuideCaution> cautions;
    std::string workflow;              ///< the guide's three-step workflow
};

/// Every rule the engine knows (for docs and the UI's explanations).
const std::vector<GuideRule>& guideRules();

/// The guide's decision: 3D parallel only when every "choose 3D" condition holds and no "choose
/// FSDP" condition does; otherwise FSDP first (its workflow starts there).
GuideRecommendation recommend(const GuideAnswers& answers);

/// The answers as `plan --answers FILE` reads them: {"first_launch": true|false|null, ...} for the
/// six questions (null = not answered) and the two facts mock_data, comparing_runs (compact JSON).
std::string guideAnswersToJson(const GuideAnswers& answers);
/// The inverse; every key optional, an unknown key or a value other than true/false/null is
/// InvalidArgument naming it (and the known keys).
Result<GuideAnswers> parseGuideAnswers(std::string_view json);

/// "Choose FSDP: it is the first launch of a new VLM (answered yes: ...)": a rule's text with
/// what was answered.
std::string describeRule(const GuideRule& rule);

}  // namespace wb::core::planner
