// `plan --model M --hardware H --gpus N ...`: the decision guide's recommendation plus the ranked
// layouts, as a table or as JSON (docs/cli.md "plan"; the JSON is a public interface).
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/planner/calibration.h"
#include "core/planner/decision_guide.h"
#include "core/planner/layout_search.h"
#include "core/planner/plan_json.h"
#include "core/terminal_text.h"
#include "core/run_store.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace wb::app {

using namespace core::planner;

namespace {

constexpr const char* kSynopsis =
    "plan --model M --hardware H --gpus N [--nodes K] [--seq S] [--images-per-sample I] [--image-size WxH]\n"
    "       [--gbs G] [--goal first-run|throughput|memory] [--answers FILE] [--freeze-vision] [--bf16-moments]\n"
    "       [--max-results N] [--for megatron-bridge|moe-train] [--data real|mock]"
    " [--catalog DIR] [--calibrate | --calibrate-run RUN] [--json]\n"
    "       (--calibrate: a step-time factor from >= 3 stored runs on this hardware; --calibrate-run: each group\n"
    "       of terms from one stored moe-train run's time split; both read the store: the default one or --db)";

// The guide's answers file: {"first_launch": true, ...}; every key optional, unknown keys refused
// (core's parseGuideAnswers: the same as a plan file's request.answers).
core::Result<GuideAnswers> readAnswers(const std::string& path)
{
    auto text = core::readTextFile(path, "answers file");
    if (!text)
        return text.error();
    auto answers = parseGuideAnswers(*text);
    if (!answers) {
        core::Error error = answers.error();
        error.context = path;
        return error;
    }
    return answers;
}

std::string fixed(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void printTable(const SearchRequest& req, const GuideRecommendation& rec, const SearchResult& result)
{
    const Workload seen = workloadSeenBy(req.workload, req.model.model);
    char images[96];
    if (req.model.model.vision.numLayers <= 0)
        std::snprintf(images, sizeof images, "text only (the model has no vision tower)");
    else
        std::snprintf(images, sizeof images, "%d image(s) %dx%d per sample", seen.imagesPerSample, seen.imageWidth, seen.imageHeight);
    if (req.workload.mock)
        std::snprintf(images, sizeof images, "MOCK DATA");
    // Nodes as given (or as many whole nodes as the GPUs need); a node not filled is said so.
    const int perNode = std::max(1, req.hardware.gpusPerNode);
    const int nodes = req.nodes > 0 ? req.nodes : (req.gpus + perNode - 1) / perNode;
    char nodeText[96];
    if (req.nodes > 0 && req.gpus % nodes == 0 && req.gpus / nodes < perNode && nodes > 1)
        std::snprintf(nodeText, sizeof nodeText, "%d nodes x %d of their %d GPUs", nodes, req.gpus / nodes, perNode);
    else if (req.nodes == 0 && req.gpus % perNode != 0 && nodes > 1)
        std::snprintf(nodeText, sizeof nodeText, "%d nodes, the last with %d of its %d GPUs", nodes,
                      req.gpus - (nodes - 1) * perNode, perNode);
    else
        std::snprintf(nodeText, sizeof nodeText, "%d node(s)", nodes);
    std::printf("%s on %d x %s (%s), seq %d, %s, GBS %d, goal %s%s\n\n", req.model.displayName.c_str(), req.gpus,
                req.hardware.displayName.c_str(), nodeText,
                req.workload.seqLength, images, req.gbs, goalName(req.goal), req.workload.bf16AdamMoments ? ", bf16 Adam moments" : "");
    std::printf("Recommendation: %s\n", rec.path == "fsdp" ? "FSDP first" : "3D parallel (TP/PP/EP)");
    for (const GuideRule& r : rec.rules)
        std::printf("  rule  %s: %s\n", r.id.c_str(), describeRule(r).c_str());
    for (const GuideRule& r : rec.missingFor3d)
        std::printf("  3D needs  %s\n", describeRule(r).c_str());
    for (const GuideKnob& k : rec.nextKnobs)
        if (k.applies)
            std::printf("  knob  %d. %s\n", k.order, k.text.c_str());
    for (const GuideCaution& c : rec.cautions)
        std::printf("  note  %s\n", c.text.c_str());
    if (result.ranked.empty()) {
        std::printf("\nNo layout fits (see below).\n");
        return;
    }
    std::printf("\n %2s %3s %3s %3s %3s %3s %3s %4s %4s %3s %-9s %-18s %-26s %-18s %8s %8s %9s %8s %6s\n", "#", "TP",
                "CP", "PP", "VPP", "EP", "ETP", "DP", "EDP", "MBS", "recompute", "dispatcher", "graph scope", "fsdp",
                "mem GiB", "step ms", "tok/s/GPU", "TFLOP/s", "MFU");
    int index = 0;
    for (const Candidate& c : result.ranked) {
        const Layout& l = c.layout;
        std::string scope;
        for (const std::string& s : l.cudaGraphScope)
            scope += (scope.empty() ? "" : ",") + s;
        std::printf(" %2d %3d %3d %3d %3d %3d %3d %4d %4d %3d %-9s %-18s %-26s %-18s %8s %8s %9s %8s %5s%%\n", index++,
                    l.tp, l.cp, l.pp, l.vpp, l.ep, l.etp, l.dp(), l.edp(), l.mbs, l.recomputeGranularity.c_str(),
                    (l.dispatcherName() + (l.overlapMoeExpertParallelComm ? " +ovl" : "")).c_str(), scope.empty() ? "-" : scope.c_str(),
                    l.useMegatronFsdp ? l.fsdpStrategy.c_str() : "-",
                    fixed(MemoryEstimate::gib(c.memory.total()), 1).c_str(), fixed(c.throughput.stepMs, 0).c_str(),
                    fixed(c.throughput.tokensPerSecPerGpu, 0).c_str(), fixed(c.throughput.tflopsPerGpu, 0).c_str(),
                    fixed(c.throughput.mfu * 100, 1).c_str());
    }
    if (!result.ranked.empty()) {
        const Layout& best = result.ranked.front().layout;
        std::printf("\nLayout 0: %s%s\n", best.describe().c_str(), best.overlapMoeExpertParallelComm ? " ep-overlap" : "");
        for (const LintFinding& f : result.ranked.front().lint)
            std::printf("  %s\n", f.toString().c_str());
        // The guide's caution 1, as numbers: what mock data would show for layout 0, and why.
        const MockRealComparison c =
            compareMockAndReal(req.model.model, best, req.realData(), req.hardware, req.throughput);
        if (req.workload.mock)
            std::printf("\nWARNING: this plan is for MOCK DATA (%s). No throughput conclusion for real training: on the "
                        "real data (--data real) layout 0 is predicted %s ms per step, not %s; %s\n",
                        c.mockDescription.c_str(), fixed(c.real.stepMs, 0).c_str(), fixed(c.mock.stepMs, 0).c_str(),
                        describeMockRealComparison(c).c_str());
        else
            std::printf("  mock vs real: %s. Mock = %s\n", describeMockRealComparison(c).c_str(), c.mockDescription.c_str());
    }
    std::printf("\n%s Write the configs: moe-workbench-cli plan ... --json > plan.json; "
                "moe-workbench-cli generate --from plan.json --format runtime --out DIR\n",
                describeSearchCounts(result).c_str());
}

// The command line, as given.
struct PlanArgs {
    std::optional<std::string> model, hardware, gpus, nodes, seq, images, imageSize, gbs, goal, answersPath, maxResults,
        catalogDir, forRuntime, data, calibrateRun;
    bool freezeVision = false, bf16Moments = false, json = false, calibrate = false;
};

// Each step returns the exit code when the command must stop there (the message already printed).
using Stop = std::optional<int>;

// --for: whose step and memory the plan predicts. Megatron-Bridge (the default) is what users run
// on their clusters; moe-train is the bundled runtime (its own passes and state layout, at the
// rates the catalog's runtime profile measured on this hardware).
Stop chooseRuntime(const PlanArgs& a, const Catalog& catalog, SearchRequest& req)
{
    if (a.forRuntime && *a.forRuntime == "moe-train") {
        req.throughput.runtime = TrainingRuntime::MoeTrain;
        req.throughput.rates = catalog.runtimeRates("moe-train", req.hardware.name);
        req.memory.moeTrain = true;
        const auto problems = core::moeTrainModelProblems(req.model.model.decoder);
        if (!problems.empty()) {
            std::fprintf(stderr, "moe-workbench-cli: --for moe-train: moe-train cannot build %s:\n", req.model.name.c_str());
            for (const core::ConfigProblem& p : problems)
                std::fprintf(stderr, "  %s\n", p.toString().c_str());
            return kExitUsage;
        }
    } else if (a.forRuntime && *a.forRuntime != "megatron-bridge") {
        return reportUsage("--for needs megatron-bridge or moe-train, got '" + *a.forRuntime + "'", kSynopsis);
    }
    return std::nullopt;
}

// The cluster and the workload: GPU and node counts, sequence, images, GBS, goal.
Stop readShape(const PlanArgs& a, SearchRequest& req)
{
    const auto positive = [&](const std::optional<std::string>& text, const char* name, int& out) -> bool {
        if (!text)
            return true;
        const auto v = parsePositive(*text);
        if (!v) {
            reportUsage(std::string(name) + " needs a whole number from 1 to " + std::to_string(kMaxCliCount) +
                            ", got '" + *text + "'",
                        kSynopsis);
            return false;
        }
        out = *v;
        return true;
    };
    if (!positive(a.gpus, "--gpus", req.gpus) || !positive(a.nodes, "--nodes", req.nodes) ||
        !positive(a.seq, "--seq", req.workload.seqLength) || !positive(a.gbs, "--gbs", req.gbs) ||
        !positive(a.maxResults, "--max-results", req.maxResults))
        return kExitUsage;
    if (a.images) {
        char* end = nullptr;
        const long v = std::strtol(a.images->c_str(), &end, 10);
        if (a.images->empty() || *end != '\0' || v < 0 || v > 64)
            return reportUsage("--images-per-sample needs a whole number from 0 to 64", kSynopsis);
        req.workload.imagesPerSample = static_cast<int>(v);
    }
    if (a.imageSize) {
        int w = 0, h = 0;
        char tail = 0;
        if (std::sscanf(a.imageSize->c_str(), "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1)
            return reportUsage("--image-size needs WxH in pixels, e.g. 448x448", kSynopsis);
        req.workload.imageWidth = w;
        req.workload.imageHeight = h;
    }
    req.workload.bf16AdamMoments = a.bf16Moments;
    if (req.nodes > 0 && req.gpus % req.nodes != 0)
        return reportUsage("--gpus " + std::to_string(req.gpus) + " does not split over --nodes " +
                               std::to_string(req.nodes) + "; give a GPU count that is a multiple of the nodes",
                           kSynopsis);
    if (a.goal) {
        auto parsed = parseGoal(*a.goal);
        if (!parsed)
            return reportError(parsed.error());
        req.goal = *parsed;
    }
    return std::nullopt;
}

// The guide's answers (--answers, --data) applied to the request: the guide decides which family
// is ranked first (applyGuide); --goal orders within it. The answers are used as given: a goal is
// not an answer (the planning view does the same).
Stop applyAnswers(const PlanArgs& a, SearchRequest& req, GuideAnswers& answers)
{
    if (a.answersPath) {
        auto read = readAnswers(*a.answersPath);
        if (!read)
            return reportError(read.error());
        answers = *read;
    }
    // --data mock plans for what a mock-data run trains (mockWorkload): the answers' mock_data fact
    // says the same; --data real overrides it.
    if (a.data) {
        if (*a.data != "real" && *a.data != "mock")
            return reportUsage("--data needs real or mock, got '" + *a.data + "'", kSynopsis);
        answers.mockData = *a.data == "mock";
    }
    req.freezeVision = a.freezeVision;
    applyGuide(answers, req);
    return std::nullopt;
}

// --calibrate: the efficiency factors scaled by what stored runs on this hardware measured;
// --calibrate-run: each group of terms (compute, vision, optimizer) scaled by one stored run of
// this runtime on this hardware (every ranked row's terms say it).
struct PlanCalibration {
    std::optional<Calibration> steps;
    std::string storePath;
    TermCalibration terms;
};

Stop calibrate(const PlanArgs& a, const CliContext& context, SearchRequest& req, PlanCalibration& out)
{
    if (a.calibrate) {
        auto store = context.openStore();
        if (!store)
            return reportError(store.error());
        CalibrationOptions options;
        options.runtime = trainingRuntimeName(req.throughput.runtime);
        auto fitted = calibrateFromStore(**store, req.hardware.name, options);
        if (!fitted)
            return reportError(fitted.error());
        out.steps = *fitted;
        out.storePath = (*store)->path();
        applyCalibration(*out.steps, req.throughput.eff);
    }
    if (a.calibrateRun) {
        CalibrationOptions options;
        options.runtime = trainingRuntimeName(req.throughput.runtime);
        options.hardware = req.hardware.name;
        auto fitted = termCalibrationFromRun(context, *a.calibrateRun, options);
        if (!fitted)
            return reportError(fitted.error());
        out.terms = *fitted;
        applyTermCalibration(out.terms, req.throughput.eff);
    }
    return std::nullopt;
}

void printCalibration(const PlanCalibration& cal)
{
    if (cal.steps) {
        std::printf("Calibration (%s): %s\n", cal.storePath.c_str(), cal.steps->describe().c_str());
        for (const CalibrationRun& r : cal.steps->runs)
            std::printf("  run  %s %s: %d GPU(s), measured %.1f ms / predicted %.1f ms = %.2f over %zu steady steps\n",
                        core::terminalSafe(r.id).c_str(), core::terminalSafe(r.name).c_str(), r.gpus, r.measuredStepMs,
                        r.predictedStepMs, r.ratio(), r.steadySteps);
        for (const std::string& why : cal.steps->skipped)
            std::printf("  skip %s\n", why.c_str());
        std::printf("\n");
    }
    if (cal.terms.applied())
        std::printf("Calibration per term: %s (every row's compute, vision and optimizer terms)\n\n",
                    core::terminalSafe(cal.terms.describe()).c_str());
}

}  // namespace

int planCommand(const CliContext& context, Args args)
{
    bool missing = false;
    PlanArgs a;
    for (auto [flag, value] : {std::pair{"--model", &a.model},
                               {"--hardware", &a.hardware},
                               {"--gpus", &a.gpus},
                               {"--nodes", &a.nodes},
                               {"--seq", &a.seq},
                               {"--images-per-sample", &a.images},
                               {"--image-size", &a.imageSize},
                               {"--gbs", &a.gbs},
                               {"--goal", &a.goal},
                               {"--answers", &a.answersPath},
                               {"--max-results", &a.maxResults},
                               {"--catalog", &a.catalogDir},
                               {"--for", &a.forRuntime},
                               {"--data", &a.data}})
        *value = args.takeOption(flag, missing);
    a.freezeVision = args.takeFlag("--freeze-vision");
    // Megatron's precision-aware optimizer: bf16 Adam moments (8 instead of 12 optimizer bytes per
    // parameter); the generated configs then carry it (train.exp_avg*_dtype, optimizer.* overrides).
    a.bf16Moments = args.takeFlag("--bf16-moments");
    a.json = args.takeFlag("--json");
    a.calibrate = args.takeFlag("--calibrate");
    a.calibrateRun = args.takeOption("--calibrate-run", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (a.calibrate && a.calibrateRun)
        return reportUsage(
            "--calibrate and --calibrate-run are two ways to calibrate: give one (--calibrate-run RUN "
            "scales each group of terms by one run; --calibrate the step time by >= 3 runs)",
            kSynopsis);
    if (!a.model || !a.hardware || !a.gpus)
        return reportUsage("--model, --hardware and --gpus are required", kSynopsis);

    auto catalog = loadCliCatalog(a.catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    SearchRequest req;
    auto modelSpec = catalog->model(*a.model);
    if (!modelSpec)
        return reportError(modelSpec.error());
    auto hardwareSpec = catalog->hardware(*a.hardware);
    if (!hardwareSpec)
        return reportError(hardwareSpec.error());
    req.model = *modelSpec;
    req.hardware = *hardwareSpec;
    GuideAnswers answers;
    PlanCalibration cal;
    if (Stop stop = chooseRuntime(a, *catalog, req))
        return *stop;
    if (Stop stop = readShape(a, req))
        return *stop;
    if (Stop stop = applyAnswers(a, req, answers))
        return *stop;
    if (Stop stop = calibrate(a, context, req, cal))
        return *stop;

    auto result = searchLayouts(req);
    if (!result)
        return reportError(result.error());
    const GuideRecommendation rec =
        recommendForPlan(answers, req, result->ranked.empty() ? nullptr : &result->ranked.front());
    if (a.json) {
        std::printf("%s\n", planToJson(req, rec, *result, cal.steps ? &*cal.steps : nullptr,
                                       cal.terms.applied() ? &cal.terms : nullptr, &answers)
                                .c_str());
    } else {
        printCalibration(cal);
        printTable(req, rec, *result);
    }
    if (result->ranked.empty()) {
        std::fprintf(stderr, "moe-workbench-cli: no layout: %s\n", result->noLayoutReason.c_str());
        for (const NearbyGpuCount& n : result->nearby)
            std::fprintf(stderr, "  works: %s\n", n.why.c_str());
        return kExitUsage;
    }
    return kExitOk;
}

}  // namespace wb::app
