// Decision-guide engine. Each rule is a row: an id, the path it argues for, the guide's sentence,
// the question that decides it and the answer that makes it hold. The decision is the guide's
// own (reference/decision-guide.md): its workflow starts with FSDP and moves to 3D parallel "only
// if the throughput headroom is worth it", which it spells out as four conditions that must all
// hold. So 3D parallel needs every "choose 3D" condition and no "choose FSDP" condition; anything
// else, unanswered questions included, is FSDP first. No counting of votes: a vote count let one
// stray 3D answer outweigh an unanswered guide.
#include "core/planner/decision_guide.h"

#include <nlohmann/json.hpp>

namespace wb::core::planner {
namespace {

using Question = std::optional<bool> GuideAnswers::*;

struct RuleRow {
    GuideRule rule;
    Question question;
};

const std::vector<RuleRow>& rows()
{
    static const std::vector<RuleRow> table = {
        {{"fsdp-first-launch", "fsdp", "Choose FSDP: it is the first launch of a new VLM.", "首次启动新的视觉语言模型",
          "Is this the first launch of this VLM?", true, {}},
         &GuideAnswers::firstLaunch},
        {{"fsdp-awkward-stage-boundaries", "fsdp",
          "Choose FSDP: stage boundaries between embedding, vision module and decoder are awkward.",
          "模型在嵌入层、视觉模块和解码器之间的阶段边界不理想", "Are the pipeline stage boundaries clean and reproducible?", false, {}},
         &GuideAnswers::cleanStageBoundaries},
        {{"fsdp-memory-fit-first", "fsdp", "Choose FSDP: fitting in memory matters more than absolute throughput.",
          "内存适配比绝对吞吐量更重要", "Does fitting in memory matter more than throughput?", true, {}},
         &GuideAnswers::memoryFitFirst},
        {{"fsdp-vision-frozen", "fsdp", "Choose FSDP: the vision module may be frozen during decoder-focused tuning.",
          "在以解码器为重点的调优期间，可能会冻结视觉模块", "Decoder-focused tuning with the vision module frozen?", true, {}},
         &GuideAnswers::visionFrozen},
        {{"3d-stable-under-fsdp", "3d", "Choose 3D parallel: the model already runs stably under FSDP.", "模型已经在 FSDP 下稳定运行",
          "Does the model already run stably under FSDP?", true, {}},
         &GuideAnswers::stableUnderFsdp},
        {{"3d-clean-pp-layout", "3d", "Choose 3D parallel: the PP layout is clean and reproducible.", "PP 布局清晰且可重复",
          "Are the pipeline stage boundaries clean and reproducible?", true, {}},
         &GuideAnswers::cleanStageBoundaries},
        {{"3d-deep-testing", "3d", "Choose 3D parallel: MBS, recompute and CUDA-graph scope can be tested together.",
          "可以同时测试 MBS、重计算和 CUDA 图范围", "Is there time to test MBS, recompute and CUDA-graph scope together?", true, {}},
         &GuideAnswers::timeForDeepTesting},
        {{"3d-steady-state-throughput", "3d",
          "Choose 3D parallel: the goal is best steady-state throughput, not an easy first launch.",
          "目标是获得最佳稳态吞吐量，而不是简化首次启动", "Does fitting in memory matter more than throughput?", false, {}},
         &GuideAnswers::memoryFitFirst},
    };
    return table;
}

bool no(const std::optional<bool>& a) { return a.has_value() && !*a; }

std::string answeredText(const std::optional<bool>& a)
{
    return !a.has_value() ? "not answered" : (*a ? "answered yes" : "answered no");
}

std::vector<GuideKnob> knobs(const GuideAnswers& a, const std::string& path)
{
    std::vector<GuideKnob> k = {
        {1, "freeze-vision",
         "Freeze the vision module when the work is decoder-focused: a small but real throughput gain (measured ≈ +5%) and less memory pressure.",
         !no(a.visionFrozen) && !a.textOnlyModel},
        {2, "test-mbs",
         "Test MBS aggressively: VLMs are more MBS-sensitive than text-only MoE (measured: MBS 4 nearly doubled 3D-parallel throughput vs MBS 1), as long as the vision encoder does not become the new bottleneck.",
         true},
        {3, "prefer-selective-recompute",
         "Once the model fits, prefer selective recompute; full recompute is a bring-up tool.", true},
        {4, "match-cuda-graph-scope",
         "Match the CUDA-graph scope to the workload: the guide's safer MoE default is attn moe_router moe_preprocess; for Qwen3-VL in Megatron-Bridge use moe_router moe_preprocess (attn capture is incompatible, megatron-bridge.md §6).",
         !a.firstLaunch.value_or(false) || path == "3d"},
        {5, "etp-only-if-ep-insufficient",
         "Use ETP only when EP is not enough: it unlocks some layouts but adds communication and tuning dimensions.", true},
    };
    return k;
}

std::vector<GuideCaution> cautions(const GuideAnswers& a)
{
    std::vector<GuideCaution> c;
    if (a.mockData && !a.textOnlyModel)
        c.push_back({"mock-data-misleads",
                     "Mock multimodal data misleads: runs without images looked about 2× faster than real multimodal input. Draw no throughput conclusion without real or realistic image payloads."});
    if (a.hasImages)
        c.push_back({"vision-encoder-dominance",
                     "The vision encoder can dominate unexpectedly: profile encoder, projector and decoder separately before blaming the dispatcher."});
    if (a.comparingRuns)
        c.push_back({"normalize-effective-work",
                     "Never compare FSDP and 3D runs whose effective work differs: normalize by effective tokens and workload shape, not step time alone."});
    if (a.usesEtp)
        c.push_back({"etp-not-free", "ETP is not free: a fitting/topology tool, not a default."});
    if (a.fullRecompute || a.cudaGraphs)
        c.push_back({"recompute-graph-coupling",
                     "Recompute and CUDA-graph choices are coupled: the setting that makes a model fit is often not the fastest steady-state setting (and full recompute with CUDA graphs needs cuda_graph_impl=full_iteration)."});
    return c;
}

}  // namespace

const std::vector<GuideRule>& guideRules()
{
    static const std::vector<GuideRule> all = [] {
        std::vector<GuideRule> v;
        for (const RuleRow& r : rows())
            v.push_back(r.rule);
        return v;
    }();
    return all;
}

std::string describeRule(const GuideRule& rule)
{
    if (rule.question.empty() || rule.answered.empty())
        return rule.guideText;
    return rule.guideText + " (" + rule.answered + ": " + rule.question + ")";
}

GuideRecommendation recommend(const GuideAnswers& a)
{
    GuideRecommendation rec;
    std::vector<GuideRule> fsdpHolds, threeDHolds, threeDMissing;
    for (const RuleRow& r : rows()) {
        const std::optional<bool>& answer = a.*(r.question);
        GuideRule rule = r.rule;
        rule.answered = answeredText(answer);
        const bool holds = answer.has_value() && *answer == rule.firesOn;
        if (rule.path == "fsdp") {
            if (holds)
                fsdpHolds.push_back(rule);
        } else {
            (holds ? threeDHolds : threeDMissing).push_back(rule);
        }
    }
    const bool threeD = fsdpHolds.empty() && threeDMissing.empty();
    rec.path = threeD ? "3d" : "fsdp";
    if (threeD) {
        rec.rules = threeDHolds;
    } else {
        rec.rules = fsdpHolds;
        rec.missingFor3d = threeDMissing;
        if (rec.rules.empty())
            rec.rules.push_back({"fsdp-default-workflow", "fsdp",
                                 "The guide's workflow starts with a first reliable run with FSDP and moves to 3D parallel "
                                 "only when all of its 3D conditions hold; " +
                                     std::to_string(threeDMissing.size()) + " of 4 do not hold yet.",
                                 "先用 FSDP 获得首次可靠运行", "", true, ""});
    }
    rec.nextKnobs = knobs(a, rec.path);
    rec.cautions = cautions(a);
    if (a.gb200Class)
        rec.cautions.push_back({"hybridep-default",
                                "HybridEP is the reliable default dispatcher on GB200-class systems (flex + hybridep)."});
    rec.workflow = "1. first reliable run with FSDP; 2. stabilize real-data input, recompute and memory behaviour; "
                   "3. move to 3D parallel only if the throughput headroom is worth it.";
    return rec;
}


namespace {

struct AnswerKeys {
    std::pair<const char*, std::optional<bool> GuideAnswers::*> questions[6] = {
        {"first_launch", &GuideAnswers::firstLaunch},
        {"stable_under_fsdp", &GuideAnswers::stableUnderFsdp},
        {"clean_stage_boundaries", &GuideAnswers::cleanStageBoundaries},
        {"memory_fit_first", &GuideAnswers::memoryFitFirst},
        {"vision_frozen", &GuideAnswers::visionFrozen},
        {"time_for_deep_testing", &GuideAnswers::timeForDeepTesting}};
    std::pair<const char*, bool GuideAnswers::*> facts[2] = {{"mock_data", &GuideAnswers::mockData},
                                                             {"comparing_runs", &GuideAnswers::comparingRuns}};
};

}  // namespace

std::string guideAnswersToJson(const GuideAnswers& a)
{
    const AnswerKeys keys;
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [key, member] : keys.questions)
        j[key] = (a.*member) ? nlohmann::ordered_json(*(a.*member)) : nlohmann::ordered_json(nullptr);
    for (const auto& [key, member] : keys.facts)
        j[key] = a.*member;
    return j.dump();
}

Result<GuideAnswers> parseGuideAnswers(std::string_view text)
{
    const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return makeError(ErrorCode::InvalidArgument, "expected a JSON object of true/false answers");
    const AnswerKeys keys;
    std::string known;
    for (const auto& [key, _] : keys.questions)
        known += std::string(known.empty() ? "" : ", ") + key;
    for (const auto& [key, _] : keys.facts)
        known += std::string(", ") + key;
    GuideAnswers a;
    for (auto it = j.begin(); it != j.end(); ++it) {
        // null: not answered (the same as leaving the key out).
        if (!it->is_boolean() && !it->is_null())
            return makeError(ErrorCode::InvalidArgument, "\"" + it.key() + "\" must be true, false or null (not answered)");
        bool matched = false;
        for (const auto& [key, member] : keys.questions)
            if (it.key() == key) {
                a.*member = it->is_null() ? std::nullopt : std::optional<bool>(it->get<bool>());
                matched = true;
            }
        for (const auto& [key, member] : keys.facts)
            if (it.key() == key) {
                a.*member = it->is_boolean() && it->get<bool>();
                matched = true;
            }
        if (!matched)
            return makeError(ErrorCode::InvalidArgument, "unknown answer \"" + it.key() + "\"; known: " + known);
    }
    return a;
}

}  // namespace wb::core::planner
