// Plan JSON writer/reader and the JSON path → line mapper used by `lint`.
#include "core/planner/plan_json.h"

#include "core/json_number.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace wb::core::planner {
namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

double gib(double bytes) { return MemoryEstimate::gib(bytes); }

// Three decimals are plenty for GiB and ms, and keep the output diff-friendly.
double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

OrderedJson layoutJson(const Candidate& c)
{
    const Layout& l = c.layout;
    OrderedJson j;
    j["tp"] = l.tp;
    j["cp"] = l.cp;
    j["pp"] = l.pp;
    j["vpp"] = l.vpp;
    j["ep"] = l.ep;
    j["etp"] = l.etp;
    j["dp"] = l.dp();
    j["edp"] = l.edp();
    j["mbs"] = l.mbs;
    j["gbs"] = l.gbs;
    j["recompute"] = l.recomputeGranularity;
    j["dispatcher"] = l.dispatcherName();
    j["cuda_graph_scope"] = l.cudaGraphScope;
    j["fsdp"] = l.useMegatronFsdp ? l.fsdpStrategy : std::string("none");
    j["freeze_vision"] = l.freezeVision;
    OrderedJson mem;
    for (const char* category : {"weights", "grads", "optimizer", "activations", "other"})
        mem[category] = round3(gib(c.memory.category(category)));
    mem["total"] = round3(gib(c.memory.total()));
    j["memory_gib"] = mem;
    j["step_ms"] = round3(c.throughput.stepMs);
    j["tokens_per_s_per_gpu"] = round3(c.throughput.tokensPerSecPerGpu);
    j["tflops_per_gpu"] = round3(c.throughput.tflopsPerGpu);
    j["mfu"] = std::round(c.throughput.mfu * 1e5) / 1e5;
    OrderedJson lint = OrderedJson::array();
    for (const LintFinding& f : c.lint)
        lint.push_back({{"rule", f.rule}, {"severity", lintSeverityName(f.severity)}, {"field", f.field},
                        {"message", f.message}, {"fix", f.fix}});
    j["lint"] = lint;
    // Additions beyond the shape: what `generate` needs to rebuild the exact layout.
    j["sequence_parallel"] = l.sequenceParallel;
    j["first_stage_layers"] = l.firstStageLayers;
    j["last_stage_layers"] = l.lastStageLayers;
    j["recompute_method"] = l.recomputeMethod;
    j["recompute_num_layers"] = l.recomputeNumLayers;
    j["recompute_modules"] = l.recomputeModules;
    j["cuda_graph_impl"] = l.cudaGraphImpl;
    j["overlap_moe_expert_parallel_comm"] = l.overlapMoeExpertParallelComm;
    j["describe"] = l.describe();
    j["family"] = c.family;
    j["guide_knobs"] = c.guideKnobs;
    return j;
}

}  // namespace

std::string layoutToJson(const Candidate& candidate)
{
    return layoutJson(candidate).dump();
}

std::string planToJson(const SearchRequest& req, const GuideRecommendation& rec, const SearchResult& result,
                       const Calibration* calibration, const TermCalibration* termCalibration,
                       const GuideAnswers* answers)
{
    OrderedJson root;
    root["schema"] = kPlanSchemaVersion;
    root["request"] = {{"model", req.model.name},
                       {"hardware", req.hardware.name},
                       {"gpus", req.gpus},
                       {"nodes", req.nodes > 0 ? req.nodes : (req.gpus + std::max(1, req.hardware.gpusPerNode) - 1) / std::max(1, req.hardware.gpusPerNode)},
                       {"seq", req.workload.seqLength},
                       {"images_per_sample", req.workload.imagesPerSample},
                       {"image_size", std::to_string(req.workload.imageWidth) + "x" + std::to_string(req.workload.imageHeight)},
                       {"gbs", req.gbs},
                       {"goal", goalName(req.goal)}};
    if (req.workload.bf16AdamMoments)  // absent = false: plans written before the option read the same
        root["request"]["bf16_adam_moments"] = true;
    root["request"]["for"] = trainingRuntimeName(req.throughput.runtime);
    if (req.freezeVision)
        root["request"]["freeze_vision"] = true;
    if (answers)
        root["request"]["answers"] = OrderedJson::parse(guideAnswersToJson(*answers));
    root["request"]["data"] = req.workload.mock ? "mock" : "real";
    // Mock against real data for layout 0, term by term (the guide's caution 1, issue 15 item 5).
    if (!result.ranked.empty()) {
        const MockRealComparison c =
            compareMockAndReal(req.model.model, result.ranked.front().layout, req.realData(), req.hardware, req.throughput);
        OrderedJson terms = OrderedJson::array();
        for (const MockRealTerm& t : c.terms)
            terms.push_back({{"name", t.name}, {"real_ms", t.realMs}, {"mock_ms", t.mockMs}});
        root["mock_vs_real"] = {{"planned_for", req.workload.mock ? "mock" : "real"},
                                {"mock", c.mockDescription},
                                {"layout", 0},
                                {"real_step_ms", c.real.stepMs},
                                {"mock_step_ms", c.mock.stepMs},
                                {"mock_speedup", c.mockSpeedup()},
                                {"routing_imbalance", {{"real", c.realRoutingImbalance}, {"mock", c.mockRoutingImbalance}}},
                                {"summary", describeMockRealComparison(c)},
                                {"terms", terms}};
    }
    OrderedJson r;
    r["path"] = rec.path;
    OrderedJson rules = OrderedJson::array();
    for (const GuideRule& rule : rec.rules)
        rules.push_back({{"id", rule.id}, {"path", rule.path}, {"text", describeRule(rule)}, {"text_zh", rule.guideTextZh},
                         {"answered", rule.answered}});
    r["rules"] = rules;
    OrderedJson missing = OrderedJson::array();
    for (const GuideRule& rule : rec.missingFor3d)
        missing.push_back({{"id", rule.id}, {"text", describeRule(rule)}, {"answered", rule.answered}});
    r["missing_for_3d"] = missing;
    OrderedJson knobs = OrderedJson::array();
    for (const GuideKnob& k : rec.nextKnobs)
        knobs.push_back({{"order", k.order}, {"id", k.id}, {"text", k.text}, {"applies", k.applies}});
    r["next_knobs"] = knobs;
    OrderedJson cautions = OrderedJson::array();
    for (const GuideCaution& c : rec.cautions)
        cautions.push_back({{"id", c.id}, {"text", c.text}});
    r["cautions"] = cautions;
    root["recommendation"] = r;
    OrderedJson layouts = OrderedJson::array();
    for (const Candidate& c : result.ranked)
        layouts.push_back(layoutJson(c));
    root["layouts"] = layouts;
    OrderedJson nearby = OrderedJson::array();
    for (const NearbyGpuCount& n : result.nearby)
        nearby.push_back({{"gpus", n.gpus}, {"why", n.why}});
    root["search"] = {{"enumerated", result.enumerated},
                      {"rejected_structure", result.rejectedStructure},
                      {"rejected_lint", result.rejectedLint},
                      {"rejected_memory", result.rejectedMemory},
                      {"fitted", result.fitted},
                      {"considered", result.rejectedStructure + result.rejectedMemory + result.rejectedLint + result.fitted},
                      {"summary", describeSearchCounts(result)},
                      {"elapsed_ms", round3(result.elapsedMs)},
                      {"no_layout_reason", result.noLayoutReason},
                      {"nearby", nearby}};
    if (calibration) {
        OrderedJson runs = OrderedJson::array();
        for (const CalibrationRun& r : calibration->runs)
            runs.push_back({{"id", r.id}, {"name", r.name}, {"gpus", r.gpus}, {"predicted_step_ms", round3(r.predictedStepMs)},
                            {"measured_step_ms", round3(r.measuredStepMs)}, {"ratio", round3(r.ratio())},
                            {"steady_steps", r.steadySteps}});
        root["calibration"] = {{"hardware", calibration->hardware},
                               {"runs", runs},
                               {"step_time_factor", round3(calibration->stepTimeFactor)},
                               {"applied", calibration->applied()},
                               {"min_runs", calibration->minRuns},
                               {"skipped", calibration->skipped},
                               {"describe", calibration->describe()}};
    } else {
        root["calibration"] = nullptr;
    }
    if (termCalibration && termCalibration->applied())
        root["term_calibration"] = {{"run", termCalibration->run},
                                    {"compute", round3(termCalibration->compute)},
                                    {"vision", round3(termCalibration->vision)},
                                    {"optimizer", round3(termCalibration->optimizer)},
                                    {"describe", termCalibration->describe()}};
    else
        root["term_calibration"] = nullptr;
    return root.dump(2);
}

bool looksLikePlan(std::string_view text)
{
    const Json j = Json::parse(text.begin(), text.end(), nullptr, false);
    return j.is_object() && j.contains("layouts");
}

Result<PlanFile> parsePlanJson(std::string_view text)
{
    const Json j = Json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return makeError(ErrorCode::InvalidArgument, "not a JSON object; expected the output of `plan --json`");
    // nlohmann's typed getters throw on a type mismatch; turn that into one message naming the field.
    std::string field;
    try {
        PlanFile plan;
        field = "request";
        const Json& req = j.at("request");
        field = "request.model";
        plan.model = req.at("model").get<std::string>();
        field = "request.hardware";
        plan.hardware = req.at("hardware").get<std::string>();
        field = "request.gpus";
        plan.gpus = jsonInt(req.at("gpus"));
        field = "request.nodes";
        plan.nodes = jsonInt(req.at("nodes"));
        field = "request.seq";
        plan.workload.seqLength = jsonInt(req.at("seq"));
        field = "request.images_per_sample";
        plan.workload.imagesPerSample = jsonInt(req.at("images_per_sample"));
        field = "request.image_size";
        const std::string size = req.at("image_size").get<std::string>();
        if (std::sscanf(size.c_str(), "%dx%d", &plan.workload.imageWidth, &plan.workload.imageHeight) != 2)
            throw std::runtime_error("not WxH");
        field = "request.gbs";
        plan.gbs = jsonInt(req.at("gbs"));
        field = "request.bf16_adam_moments";
        plan.workload.bf16AdamMoments = req.value("bf16_adam_moments", false);
        field = "request.for";  // absent: a plan written before the option, for Megatron-Bridge
        plan.runtime = req.value("for", std::string("megatron-bridge"));
        if (plan.runtime != "megatron-bridge" && plan.runtime != "moe-train")
            throw std::runtime_error("not megatron-bridge or moe-train");
        field = "request.goal";
        plan.goal = req.value("goal", std::string("throughput"));
        if (!parseGoal(plan.goal))
            throw std::runtime_error("not first-run, throughput or memory");
        field = "request.freeze_vision";
        plan.freezeVision = req.value("freeze_vision", false);
        if (req.contains("answers")) {
            field = "request.answers";
            auto answers = parseGuideAnswers(req.at("answers").dump());
            if (!answers)
                throw std::runtime_error(answers.error().message);
            plan.answers = *answers;
        }
        const Json& layouts = j.at("layouts");
        for (size_t i = 0; i < layouts.size(); ++i) {
            const Json& o = layouts.at(i);
            field = "layouts[" + std::to_string(i) + "]";
            plan.layoutStepMs.push_back(o.value("step_ms", 0.0));
            Layout l;
            l.worldSize = plan.gpus;
            l.tp = jsonInt(o.at("tp"));
            l.cp = jsonInt(o.at("cp"));
            l.pp = jsonInt(o.at("pp"));
            l.vpp = jsonInt(o.at("vpp"));
            l.ep = jsonInt(o.at("ep"));
            l.etp = jsonInt(o.at("etp"));
            l.mbs = jsonInt(o.at("mbs"));
            l.gbs = jsonInt(o.at("gbs"));
            l.recomputeGranularity = o.at("recompute").get<std::string>();
            const std::string dispatcher = o.at("dispatcher").get<std::string>();
            const size_t plus = dispatcher.find('+');
            l.dispatcherType = dispatcher.substr(0, plus);
            l.dispatcherBackend = plus == std::string::npos ? "" : dispatcher.substr(plus + 1);
            l.cudaGraphScope = o.at("cuda_graph_scope").get<std::vector<std::string>>();
            const std::string fsdp = o.at("fsdp").get<std::string>();
            l.useMegatronFsdp = fsdp != "none";
            l.fsdpStrategy = l.useMegatronFsdp ? fsdp : "no_shard";
            l.freezeVision = o.at("freeze_vision").get<bool>();
            l.sequenceParallel = o.value("sequence_parallel", l.tp > 1);
            l.firstStageLayers = o.contains("first_stage_layers") ? jsonInt(o.at("first_stage_layers"), 0) : 0;
            l.lastStageLayers = o.contains("last_stage_layers") ? jsonInt(o.at("last_stage_layers"), 0) : 0;
            l.recomputeMethod = o.value("recompute_method", std::string("uniform"));
            l.recomputeNumLayers = o.contains("recompute_num_layers") ? jsonInt(o.at("recompute_num_layers"), 0)
                                                                   : (l.recomputeGranularity == "full" ? 1 : 0);
            l.recomputeModules = o.value("recompute_modules", std::vector<std::string>{});
            l.cudaGraphImpl = o.value("cuda_graph_impl", std::string(l.cudaGraphScope.empty() ? "none" : "transformer_engine"));
            l.overlapMoeExpertParallelComm = o.value("overlap_moe_expert_parallel_comm", false);
            plan.layouts.push_back(std::move(l));
        }
        field = "calibration";
        if (j.contains("calibration") && j["calibration"].is_object() && j["calibration"].value("applied", false)) {
            plan.stepTimeFactor = j["calibration"].at("step_time_factor").get<double>();
            plan.calibration = j["calibration"].value("describe", std::string("calibrated"));
            if (!(plan.stepTimeFactor > 0))
                throw std::runtime_error("step_time_factor must be > 0");
        }
        field = "term_calibration";
        if (j.contains("term_calibration") && j["term_calibration"].is_object()) {
            const Json& t = j["term_calibration"];
            plan.termCalibration.run = t.at("run").get<std::string>();
            plan.termCalibration.compute = t.at("compute").get<double>();
            plan.termCalibration.vision = t.at("vision").get<double>();
            plan.termCalibration.optimizer = t.at("optimizer").get<double>();
            if (plan.termCalibration.run.empty() || !(plan.termCalibration.compute > 0) ||
                !(plan.termCalibration.vision > 0) || !(plan.termCalibration.optimizer > 0))
                throw std::runtime_error("a per-term calibration needs its run and factors > 0");
        }
        return plan;
    } catch (const std::exception& e) {
        return makeError(ErrorCode::InvalidArgument,
                         "plan field '" + field + "' is missing or has the wrong type (" + e.what() + ")",
                         "regenerate the plan with `moe-workbench-cli plan ... --json`");
    }
}

RunConfig runConfigForLayout(const ModelSpec& model, const Layout& layout, const Workload& w, const std::string& manifest)
{
    RunConfig c;
    c.name = model.name + "-" + std::to_string(layout.worldSize) + "gpu";
    c.model = model.model;
    applyLayout(layout, c);
    c.train.seqLength = w.seqLength;
    c.train.precision = "bf16";
    if (w.bf16AdamMoments)  // the precision-aware optimizer's moments, in moe-train and the Bridge overrides
        c.train.expAvgDtype = c.train.expAvgSqDtype = "bf16";
    c.runtime.device = "cuda";
    c.data.source = "real";
    c.data.manifest = manifest;
    c.data.imagesPerSample = w.imagesPerSample;
    c.data.maxPixels = int64_t(w.imageWidth) * w.imageHeight;
    c.data.minPixels = std::min<int64_t>(c.data.minPixels, c.data.maxPixels);
    if (model.model.vision.numLayers <= 0) {
        // A text-only model takes no images: moe-train trains it on its text-only mock data (the
        // captions alone); a Bridge run uses its own text dataset.
        c.data.source = "mock";
        c.data.mockImageSize = 0;
    }
    return c;
}

int jsonPathLine(std::string_view text, const std::string& dottedPath)
{
    struct Frame {
        bool object;
        std::string path;
        bool expectKey = true;
        std::string lastKey;
    };
    std::map<std::string, int> lines;  // first occurrence wins (duplicate keys: nlohmann keeps the last; rare)
    std::vector<Frame> stack;
    auto childPath = [&]() -> std::string {
        if (stack.empty())
            return {};
        const Frame& top = stack.back();
        if (!top.object)
            return top.path;
        return top.path.empty() ? top.lastKey : top.path + "." + top.lastKey;
    };
    int line = 1;
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch == '\n') {
            ++line;
        } else if (ch == '"') {
            std::string s;
            for (++i; i < text.size() && text[i] != '"'; ++i) {
                if (text[i] == '\\' && i + 1 < text.size())
                    ++i;  // the escaped character is part of the string, never its end
                if (text[i] == '\n')
                    ++line;
                s += text[i];
            }
            if (!stack.empty() && stack.back().object && stack.back().expectKey) {
                Frame& top = stack.back();
                top.lastKey = s;
                top.expectKey = false;
                lines.emplace(top.path.empty() ? s : top.path + "." + s, line);
            }
        } else if (ch == '{' || ch == '[') {
            std::string path = childPath();
            stack.push_back({ch == '{', std::move(path), true, {}});
        } else if (ch == '}' || ch == ']') {
            if (!stack.empty())
                stack.pop_back();
        } else if (ch == ',' && !stack.empty() && stack.back().object) {
            stack.back().expectKey = true;
        }
    }
    std::string path = dottedPath;
    while (!path.empty()) {
        if (auto it = lines.find(path); it != lines.end())
            return it->second;
        const size_t dot = path.rfind('.');
        path = dot == std::string::npos ? std::string() : path.substr(0, dot);
    }
    return 0;
}

}  // namespace wb::core::planner
