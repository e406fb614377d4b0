// Search. Enumeration is nested from the most to the least constraining dimension so that whole
// subtrees die early: sizes that cannot tile the world (§3) before any model is evaluated, and a
// weight+optimizer lower bound before activations. Only survivors are linted and predicted.
#include "core/planner/layout_search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <numeric>

namespace wb::core::planner {
namespace {

std::vector<int> divisorsUpTo(int n, int limit)
{
    std::vector<int> out;
    for (int d = 1; d <= std::min(n, limit); ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

// Even split, plus the uneven first/last split that balances stages best when the vision encoder
// and embedding sit on the first stage and the logits on the last (Bridge's 235B recipe: 10/12).
std::vector<std::pair<int, int>> stageSplits(int layers, int pp)
{
    std::vector<std::pair<int, int>> out;
    if (pp == 1)
        return {{0, 0}};
    if (layers % pp == 0)
        out.push_back({0, 0});
    if (pp == 2) {
        for (int first = layers / 2 - 2; first <= layers / 2 - 1; ++first)
            if (first > 0)
                out.push_back({first, layers - first});
        return out;
    }
    const int base = layers / pp;
    std::pair<int, int> best{-1, -1};
    int bestMax = 1 << 30;
    for (int first = std::max(1, base - 3); first <= base; ++first)
        for (int last = std::max(1, base - 3); last <= base + 3; ++last) {
            const int middle = layers - first - last;
            if (middle <= 0 || middle % (pp - 2) != 0)
                continue;
            const int each = middle / (pp - 2);
            const int worst = std::max({first, last, each});
            if (worst < bestMax) {
                bestMax = worst;
                best = {first, last};
            }
        }
    if (best.first > 0 && !(layers % pp == 0 && best.first == base && best.second == base))
        out.push_back(best);
    return out;
}

struct Recompute {
    const char* granularity;
    std::vector<std::string> modules;
    int numLayers;
};

const std::vector<Recompute>& recomputeOptions()
{
    static const std::vector<Recompute> options = {
        {"none", {}, 0},
        {"selective", {"core_attn"}, 0},
        {"selective", {"core_attn", "moe_act", "layernorm"}, 0},
        {"full", {}, 1},
    };
    return options;
}

struct Dispatcher {
    const char* type;
    const char* backend;
};

std::vector<Dispatcher> dispatchersFor(const HardwareSpec& hw)
{
    std::vector<Dispatcher> out = {{"alltoall", ""}};
    const int sm = hw.smMajor();
    if (sm >= 8 && sm <= 10)
        out.push_back({"flex", "hybridep"});
    if (sm == 8 || sm == 9 || hw.name == "b200" || hw.name == "b300")
        out.push_back({"flex", "deepep"});
    return out;
}

// GB200/GB300-class systems (an NVLink domain wider than a node): the guide's default dispatcher
// is HybridEP, so any other dispatcher with expert traffic ranks behind it.
bool hybridEpDefault(const HardwareSpec& hw) { return hw.nvlinkDomainSize > hw.gpusPerNode; }

// Tiers, then the goal: the guide's family first (the other family after, never above), within
// it HybridEP rows first where it is the default; then the goal's own order.
double rankKey(const Candidate& c, const SearchRequest& req)
{
    const Layout& l = c.layout;
    double tier = c.family == req.path ? 0 : (c.family == "other" ? 2 : 1);
    if (hybridEpDefault(req.hardware) && l.ep > 1 && l.dispatcherBackend != "hybridep")
        tier += 0.5;
    double key = 0;
    switch (req.goal) {
    case Goal::Throughput: key = -c.throughput.tokensPerSecPerGpu; break;
    case Goal::Memory: key = MemoryEstimate::gib(c.memory.total()); break;
    case Goal::FirstRun: {
        // The guide's first launch: no CUDA graphs, recompute full first then relaxed; by throughput.
        const double simple = (l.cudaGraphImpl == "none" ? 0 : 2) + (l.recomputeGranularity == "full" ? 0 : 1);
        key = simple * 1e9 - c.throughput.tokensPerSecPerGpu;
        break;
    }
    }
    return tier * 1e12 + key;
}

struct Searcher {
    const SearchRequest& req;
    SearchResult& res;
    double budgetBytes;
    bool keepAll = true;
    std::vector<Candidate> fits;

    // Memory first (numbers only, cheapest), then lint, then throughput; texts are filled in
    // for the ranked few at the end.
    // Why the HybridEP form of a layout is not among the fits (keyed by hybridEpKey), for the
    // note on its other-dispatcher rows.
    std::map<std::string, std::string> hybridEpRejected;

    static std::string hybridEpKey(Layout l)
    {
        l.dispatcherType = "flex";
        l.dispatcherBackend = "hybridep";
        l.overlapMoeExpertParallelComm = false;
        return l.describe();
    }

    std::string hybridEpWhy(const Layout& l) const
    {
        if (auto it = hybridEpRejected.find(hybridEpKey(l)); it != hybridEpRejected.end())
            return "HybridEP cannot be used for this layout (" + it->second + ")";
        if (req.hardware.smMajor() < 8 || req.hardware.smMajor() > 10)
            return "HybridEP needs SM 8.0 to 10.x";
        return "its HybridEP form ranks higher";
    }

    void evaluate(Layout l)
    {
        // The key (a describe() string) only for a rejected HybridEP candidate: this runs ~10^5 times.
        if (req.cancelled())
            return;  // the caller throws the result away; the loops above run out quickly
        const bool hybrid = l.dispatcherBackend == "hybridep";
        ++res.enumerated;
        MemoryOptions fastMemory = req.memory;
        fastMemory.explain = false;
        const double total = estimateMemory(req.model.model, l, req.workload, fastMemory).total();
        if (res.smallestMemoryGib == 0 || MemoryEstimate::gib(total) < res.smallestMemoryGib)
            res.smallestMemoryGib = MemoryEstimate::gib(total);
        if (total > budgetBytes) {
            ++res.rejectedMemory;
            if (hybrid)
                hybridEpRejected[hybridEpKey(l)] = "over the memory budget";
            return;
        }
        LintContext ctx{&req.model.model, &req.hardware, req.workload.seqLength, req.workload.bf16AdamMoments};
        std::vector<LintFinding> lint = lintLayout(l, ctx);
        if (hasErrors(lint)) {
            ++res.rejectedLint;
            if (hybrid)
                for (const LintFinding& f : lint)
                    if (f.severity == LintSeverity::Error) {
                        hybridEpRejected[hybridEpKey(l)] = f.rule + ": " + f.message;
                        break;
                    }
            for (const LintFinding& f : lint)
                if (f.severity == LintSeverity::Error)
                    ++res.lintRejections[f.rule];
            return;
        }
        ThroughputOptions fastThroughput = req.throughput;
        fastThroughput.explain = false;
        fastThroughput.predictedPeakBytes = total;  // for train.overlap_optimizer "auto"
        Candidate c{std::move(l), {}, {}, std::move(lint)};
        c.memory.terms.push_back({{}, "total", total, {}});
        c.throughput = estimateThroughput(req.model.model, c.layout, req.workload, req.hardware, fastThroughput);
        fits.push_back(std::move(c));
    }

    void run()
    {
        const ModelConfig& m = req.model.model;
        const DecoderConfig& d = m.decoder;
        const HardwareSpec& hw = req.hardware;
        const int world = req.gpus;
        int headGcd = std::gcd(d.numAttentionHeads, d.numQueryGroups);
        if (m.vision.numLayers > 0)
            headGcd = std::gcd(headGcd, m.vision.numAttentionHeads);
        const ParameterCounts counts = countParameters(m);
        for (int tp : divisorsUpTo(headGcd, std::min(8, hw.gpusPerNode)))
            for (int cp : {1, 2, 4}) {
                // CP only pays for long sequences (it splits attention's s² and adds a K/V ring);
                // at ≤ 4096 tokens Bridge's Qwen3-VL recipes all use CP 1.
                if (cp > 1 && (req.workload.seqLength < 8192 || req.workload.seqLength % (2 * cp) != 0))
                    continue;
                for (int pp : divisorsUpTo(world, 16)) {
                    if (world % (tp * cp * pp) != 0 || pp > d.numLayers) {
                        ++res.rejectedStructure;
                        continue;
                    }
                    for (auto [first, last] : stageSplits(d.numLayers, pp))
                        for (int ep : divisorsUpTo(d.numMoeExperts, world / pp))
                            for (int etp : {1, 2, 4, 8, 16}) {
                                if (world % (pp * ep * etp) != 0 || etp > hw.nvlinkDomainSize) {
                                    ++res.rejectedStructure;
                                    continue;
                                }
                                Layout base;
                                base.worldSize = world;
                                base.tp = tp, base.cp = cp, base.pp = pp, base.ep = ep, base.etp = etp;
                                base.sequenceParallel = tp > 1;
                                base.firstStageLayers = first, base.lastStageLayers = last;
                                base.gbs = req.gbs;
                                base.freezeVision = req.freezeVision;
                                if (!weightsCanFit(base, counts))
                                    continue;
                                expandVpp(base);
                            }
                }
            }
    }

    // Lower bound: weights + grads + optimizer of the densest stage with the best sharding.
    bool weightsCanFit(const Layout& l, const ParameterCounts& counts)
    {
        const DecoderConfig& d = req.model.model.decoder;
        const std::vector<int> stages = layersPerStage(l, d.numLayers);
        if (stages.empty()) {
            ++res.rejectedStructure;
            return false;
        }
        const int layers = *std::max_element(stages.begin(), stages.end());
        const double dense = layers * decoderLayerDenseParams(d) / l.tp;
        const double experts = layers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp;
        const double dpN = std::max(1, l.dp()) * double(l.cp), edpN = std::max(1, l.edp());
        // FSDP optim_grads_params is the most sharded option (only offered at PP=1).
        const double perParam = l.pp == 1 ? 18.0 : 6.0;
        const double denseN = l.pp == 1 ? dpN : 1.0, expertN = l.pp == 1 ? edpN : 1.0;
        const double bytes = dense * (perParam / denseN + (l.pp == 1 ? 0 : 12.0 / dpN)) +
                             experts * (perParam / expertN + (l.pp == 1 ? 0 : 12.0 / edpN));
        (void)counts;
        if (bytes > budgetBytes) {
            ++res.rejectedMemory;
            ++res.rejectedMemoryBound;
            if (res.smallestMemoryGib == 0 || MemoryEstimate::gib(bytes) < res.smallestMemoryGib)
                res.smallestMemoryGib = MemoryEstimate::gib(bytes);  // a lower bound: weights alone
            return false;
        }
        return true;
    }

    void expandVpp(const Layout& base)
    {
        std::vector<int> vpps = {1};
        if (base.pp > 1) {
            const std::vector<int> stages = layersPerStage(base, req.model.model.decoder.numLayers);
            for (int v : {2, 3, 4, 6, 8})
                if (std::all_of(stages.begin(), stages.end(), [v](int n) { return n % v == 0 && n / v >= 1; }))
                    vpps.push_back(v);
        }
        for (int vpp : vpps)
            for (int mbs : {1, 2, 4, 8, 16}) {
                Layout l = base;
                l.vpp = vpp;
                l.mbs = mbs;
                if (l.numMicroBatches() == 0) {
                    ++res.rejectedStructure;
                    continue;
                }
                expandRuntime(l);
            }
    }

    void expandRuntime(const Layout& base)
    {
        for (const Dispatcher& disp : dispatchersFor(req.hardware)) {
            if (base.ep == 1 && std::string(disp.type) != "alltoall")
                continue;  // no expert traffic: the dispatcher choice is moot
            for (const Recompute& rc : recomputeOptions())
                for (bool graphs : {false, true}) {
                    if (graphs && std::string(rc.granularity) == "full")
                        continue;  // needs full_iteration graphs (§6); not offered
                    for (bool fsdp : {false, true}) {
                        if (fsdp && base.pp > 1)
                            continue;  // the guide's FSDP families are PP=1
                        Layout l = base;
                        l.dispatcherType = disp.type;
                        l.dispatcherBackend = disp.backend;
                        l.recomputeGranularity = rc.granularity;
                        l.recomputeModules = rc.modules;
                        l.recomputeNumLayers = rc.numLayers;
                        if (graphs) {
                            l.cudaGraphImpl = "transformer_engine";
                            l.cudaGraphScope = {"moe_router", "moe_preprocess"};
                        }
                        l.useMegatronFsdp = fsdp;
                        l.fsdpStrategy = fsdp ? "optim_grads_params" : "no_shard";
                        // EP overlap where §6 allows it; all-to-all is what it hides best.
                        l.overlapMoeExpertParallelComm = l.ep > 1 && l.dispatcherType == "alltoall" && (l.pp == 1 || l.vpp > 1);
                        evaluate(std::move(l));
                    }
                }
        }
    }
};

std::string gibText(double gib)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", gib);
    return text;
}

std::string describeRejections(const SearchResult& r, const SearchRequest& req, double budgetGib)
{
    std::string why;
    if (r.enumerated == 0 && r.rejectedMemory == 0)
        why = "no combination of TP, CP, PP, EP and ETP tiles " + std::to_string(req.gpus) +
              " GPUs with GBS " + std::to_string(req.gbs) + " (§3: world divisible by TP·PP·CP and PP·EP·ETP, GBS by MBS·DP)";
    else if (r.rejectedMemory > 0 && (r.smallestMemoryGib > budgetGib || r.enumerated == 0))
        why = "every valid layout needs more memory than the " + gibText(budgetGib) +
              " GiB budget (HBM less headroom); the smallest needs " + gibText(r.smallestMemoryGib) + " GiB";
    else
        why = "every candidate failed lint";
    if (!r.lintRejections.empty()) {
        auto top = std::max_element(r.lintRejections.begin(), r.lintRejections.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
        why += "; most frequent lint rule: " + top->first;
    }
    return why;
}

SearchResult runSearch(const SearchRequest& req)
{
    SearchResult res;
    Searcher s{req, res, req.hardware.hbmGib * (1.0 - req.headroom) * 1073741824.0, true, {}};
    s.run();
    res.fitted = static_cast<long>(s.fits.size());
    for (Candidate& c : s.fits)
        c.family = layoutFamily(c.layout);
    std::stable_sort(s.fits.begin(), s.fits.end(),
                     [&](const Candidate& a, const Candidate& b) { return rankKey(a, req) < rankKey(b, req); });
    if (int(s.fits.size()) > req.maxResults)
        s.fits.resize(size_t(std::max(0, req.maxResults)));
    for (Candidate& c : s.fits) {  // the full, explained estimates for what is shown
        c.memory = estimateMemory(req.model.model, c.layout, req.workload, req.memory);
        ThroughputOptions withPeak = req.throughput;  // for train.overlap_optimizer "auto"
        withPeak.predictedPeakBytes = c.memory.total();
        c.throughput = estimateThroughput(req.model.model, c.layout, req.workload, req.hardware, withPeak);
        c.guideKnobs = appliedGuideKnobs(c.layout, req.hardware);
        if (c.family != req.path)
            c.lint.push_back({"guide-other-family", "decision-guide.md", LintSeverity::Note, "",
                              "the " + std::string(c.family == "3d" ? "3D-parallel" : c.family == "fsdp" ? "FSDP-first" : "mixed FSDP + TP/CP") +
                                  " family, shown after the recommended " + (req.path == "3d" ? "3D-parallel" : "FSDP-first") + " rows",
                              ""});
        if (hybridEpDefault(req.hardware) && c.layout.ep > 1 && c.layout.dispatcherBackend != "hybridep")
            c.lint.push_back({"guide-hybridep-default", "decision-guide.md", LintSeverity::Note, "moe.dispatcher",
                              "HybridEP is the guide's default dispatcher on this system; this " + c.layout.dispatcherName() +
                                  " row ranks after the HybridEP rows: " + s.hybridEpWhy(c.layout),
                              ""});
    }
    res.ranked = std::move(s.fits);
    return res;
}

}  // namespace

void applyGuide(const GuideAnswers& answers, SearchRequest& request)
{
    request.path = recommend(answers).path;
    if (answers.mockData && !request.workload.mock) {  // planned for what a mock run of the runtime trains
        request.realWorkload = request.workload;
        request.workload = mockWorkload(request.workload, request.throughput.runtime);
    }
    if (answers.visionFrozen.value_or(false))  // decoder-focused work: the layouts freeze it
        request.freezeVision = true;
}

GuideRecommendation recommendForPlan(GuideAnswers answers, const SearchRequest& request, const Candidate* chosen)
{
    answers.mockData = answers.mockData || request.workload.mock || request.workload.mockTextOnly;
    answers.textOnlyModel = request.model.model.vision.numLayers <= 0;
    answers.hasImages = workloadSeenBy(request.workload, request.model.model).imagesPerSample > 0 && !answers.mockData;
    answers.gb200Class = hybridEpDefault(request.hardware);
    answers.usesEtp = chosen && chosen->layout.etp > 1;
    answers.fullRecompute = chosen && chosen->layout.recomputeGranularity == "full";
    answers.cudaGraphs = chosen && chosen->layout.cudaGraphImpl != "none";
    return recommend(answers);
}

std::string layoutFamily(const Layout& l)
{
    if (!l.useMegatronFsdp)
        return "3d";
    return l.tp == 1 && l.cp == 1 && l.pp == 1 ? "fsdp" : "other";
}

std::vector<std::string> appliedGuideKnobs(const Layout& l, const HardwareSpec& hw)
{
    std::vector<std::string> knobs;
    if (l.freezeVision)
        knobs.push_back("freeze-vision");
    if (l.mbs > 1)
        knobs.push_back("mbs " + std::to_string(l.mbs));
    if (l.recomputeGranularity == "selective")
        knobs.push_back("selective recompute");
    else if (l.recomputeGranularity == "full")
        knobs.push_back("full recompute (bring-up)");
    if (l.cudaGraphImpl != "none") {
        std::string scope;
        for (const std::string& m : l.cudaGraphScope)
            scope += (scope.empty() ? "" : " ") + m;
        knobs.push_back("cuda graphs " + scope);
    }
    if (l.etp > 1)
        knobs.push_back("etp " + std::to_string(l.etp));
    if (l.dispatcherBackend == "hybridep" && hybridEpDefault(hw))
        knobs.push_back("hybridep");
    return knobs;
}

const char* goalName(Goal g)
{
    switch (g) {
    case Goal::FirstRun: return "first-run";
    case Goal::Throughput: return "throughput";
    case Goal::Memory: return "memory";
    }
    return "throughput";
}

Result<Goal> parseGoal(const std::string& text)
{
    if (text == "first-run")
        return Goal::FirstRun;
    if (text == "throughput")
        return Goal::Throughput;
    if (text == "memory")
        return Goal::Memory;
    return makeError(ErrorCode::InvalidArgument, "unknown goal \"" + text + "\"; use first-run, throughput or memory");
}

namespace {

// The nearest GPU counts below and above with a layout that fits: first the whole-node counts on
// either side of a count that is not one (63 → 60 and 64), then steps of a node.
std::vector<NearbyGpuCount> nearbyCountsThatFit(const SearchRequest& req)
{
    std::vector<NearbyGpuCount> nearby;
    const int perNode = std::max(1, req.hardware.gpusPerNode);
    const int step = req.gpus >= perNode ? perNode : 1;
    SearchRequest probe = req;
    probe.maxResults = 1;
    probe.nodes = 0;
    for (int dir : {-1, +1}) {
        int n = req.gpus + dir * step;
        if (step > 1 && req.gpus % perNode != 0)
            n = dir < 0 ? req.gpus / perNode * perNode : (req.gpus / perNode + 1) * perNode;
        for (int tries = 0; n >= 1 && tries < 64 && !req.cancelled(); n += dir * step, ++tries) {
            probe.gpus = n;
            SearchResult r = runSearch(probe);
            if (r.ranked.empty())
                continue;
            const Candidate& c = r.ranked.front();
            // One decimal: a ceiling printed "fits at 72 GiB" beside a 71.x GiB budget.
            nearby.push_back({n, std::to_string(n) + " GPUs: " + c.layout.describe() + " fits at " +
                                     gibText(MemoryEstimate::gib(c.memory.total())) + " GiB of the " +
                                     gibText(req.hardware.hbmGib * (1.0 - req.headroom)) + " GiB budget"});
            break;
        }
    }
    return nearby;
}

// The largest expert-parallel size a GPU count allows: EP divides both the experts and the GPUs (§3).
int largestEp(int experts, int gpus)
{
    int best = 1;
    for (int ep = 1; ep <= std::min(experts, gpus); ++ep)
        if (experts % ep == 0 && gpus % ep == 0)
            best = ep;
    return best;
}

// Not "too few GPUs" but "these GPUs do not tile": fewer GPUs fit, or the next whole-node count
// splits the experts further.
bool countIsTheProblem(const SearchRequest& req, const std::vector<NearbyGpuCount>& nearby)
{
    if (std::any_of(nearby.begin(), nearby.end(), [&](const NearbyGpuCount& n) { return n.gpus < req.gpus; }))
        return true;
    const int perNode = std::max(1, req.hardware.gpusPerNode);
    const int experts = req.model.model.decoder.numMoeExperts;
    const int up = (req.gpus / perNode + 1) * perNode;
    return req.gpus > perNode && req.gpus % perNode != 0 && largestEp(experts, up) > largestEp(experts, req.gpus);
}

// What a GPU count allows of the model's expert split, for the no-layout message.
std::string describeTiling(const SearchRequest& req)
{
    const int experts = req.model.model.decoder.numMoeExperts;
    const auto largest = [experts](int gpus) { return largestEp(experts, gpus); };
    std::string text = "the GPU count is the problem: ";
    const int perNode = std::max(1, req.hardware.gpusPerNode);
    if (req.gpus > perNode && req.gpus % perNode != 0)
        text += std::to_string(req.gpus) + " is not a whole number of " + std::to_string(perNode) + "-GPU nodes, and ";
    text += "expert parallelism must divide both the " + std::to_string(experts) + " experts and the GPU count, so " +
            std::to_string(req.gpus) + " GPUs allow at most EP " + std::to_string(largest(req.gpus));
    const int up = (req.gpus / perNode + 1) * perNode;
    if (largest(up) > largest(req.gpus))
        text += " (" + std::to_string(up) + " allow EP " + std::to_string(largest(up)) + ")";
    return text + ". ";
}

}  // namespace

std::string describeSearchCounts(const SearchResult& r)
{
    const long considered = r.rejectedStructure + r.rejectedMemory + r.rejectedLint + r.fitted;
    char text[320];
    std::snprintf(text, sizeof text,
                  "%ld layouts considered in %.0f ms: %ld cannot tile the GPUs (§3), %ld need more memory than the "
                  "budget, %ld fail lint, %ld fit; ",
                  considered, r.elapsedMs, r.rejectedStructure, r.rejectedMemory, r.rejectedLint, r.fitted);
    std::string out = text;
    if (r.ranked.empty())
        return out + "none is ranked.";
    if (static_cast<long>(r.ranked.size()) == r.fitted)
        return out + (r.fitted == 1 ? "it is ranked." : "all are ranked.");
    return out + "the best " + std::to_string(r.ranked.size()) + " are ranked.";
}

Result<SearchResult> searchLayouts(const SearchRequest& req)
{
    const auto start = std::chrono::steady_clock::now();
    if (req.gpus < 1)
        return makeError(ErrorCode::InvalidArgument, "the GPU count must be at least 1");
    if (req.nodes > 0 && req.gpus % req.nodes != 0)
        return makeError(ErrorCode::InvalidArgument, std::to_string(req.gpus) + " GPUs do not split over " +
                                                         std::to_string(req.nodes) + " nodes; give GPUs = nodes × GPUs per node");
    const int perNode = std::max(1, req.hardware.gpusPerNode);
    if (req.nodes > 0 && req.gpus / req.nodes > perNode) {
        const int needed = (req.gpus + perNode - 1) / perNode;
        return makeError(ErrorCode::InvalidArgument,
                         std::to_string(req.gpus) + " GPUs over " + std::to_string(req.nodes) + " node(s) is " +
                             std::to_string(req.gpus / req.nodes) + " GPUs per node, but a " + req.hardware.displayName +
                             " node has " + std::to_string(perNode) + "; give at least " + std::to_string(needed) +
                             " nodes, or at most " + std::to_string(req.nodes * perNode) + " GPUs on " +
                             std::to_string(req.nodes));
    }
    const VisionConfig& v = req.model.model.vision;
    // The runtime's own rule (validateRunConfig): one sample = its image tokens + the caption
    // (the generated config's caption_max_tokens) + bos/eos must fit one sequence.
    const int64_t imageTokens = req.workload.imageTokensPerSample(v);
    const int64_t sampleTokens = imageTokens + DataConfig{}.captionMaxTokens + 2;
    if (sampleTokens > req.workload.seqLength)
        return makeError(ErrorCode::InvalidArgument,
                         "one sample needs " + std::to_string(sampleTokens) + " tokens (" + std::to_string(imageTokens) +
                             " image + " + std::to_string(DataConfig{}.captionMaxTokens) + " caption + 2), more than seq " +
                             std::to_string(req.workload.seqLength) + "; raise seq to at least " +
                             std::to_string(sampleTokens) + " or lower the image size/count");
    SearchResult res = runSearch(req);
    if (req.cancelled())
        return makeError(ErrorCode::Failed, "the search was cancelled");
    if (res.ranked.empty()) {
        const double budgetGib = req.hardware.hbmGib * (1.0 - req.headroom);
        res.nearby = nearbyCountsThatFit(req);
        res.noLayoutReason = std::to_string(req.gpus) + " GPUs: " + describeRejections(res, req, budgetGib);
        // When a count close by works, the count is the problem (issue 18 item 13: 63 GB200 said
        // only "needs more memory"): say what it does not tile.
        if (countIsTheProblem(req, res.nearby))
            res.noLayoutReason = describeTiling(req) + res.noLayoutReason;
        if (req.cancelled())
            return makeError(ErrorCode::Failed, "the search was cancelled");
    }
    res.elapsedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return res;
}

}  // namespace wb::core::planner
