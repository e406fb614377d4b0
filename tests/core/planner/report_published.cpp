// Predicted vs published TFLOP/s/GPU for the rows of megatron-bridge.md §8 and the guide's card
// rows (decision-guide.md "Measured anchors"). Its output is pasted into docs/planner.md.
// Where a published row leaves a setting out, the assumption is printed in the row's note.
#include "core/planner/memory_model.h"
#include "core/planner/throughput_model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

using namespace wb::core::planner;

namespace {

struct Row {
    const char* label;
    const char* model;
    const char* hw;
    Layout layout;
    bool textOnly;
    bool fp8;
    double published;
    const char* note;
};

Layout make(int world, int tp, int pp, int vpp, int ep, int etp, int mbs, int gbs, const char* disp, const char* recompute,
            bool fsdp, bool graphs, int first = 0, int last = 0)
{
    Layout l;
    l.worldSize = world, l.tp = tp, l.pp = pp, l.vpp = vpp, l.ep = ep, l.etp = etp, l.mbs = mbs, l.gbs = gbs;
    l.sequenceParallel = tp > 1;
    l.firstStageLayers = first, l.lastStageLayers = last;
    if (std::string(disp) == "hybridep")
        l.dispatcherType = "flex", l.dispatcherBackend = "hybridep";
    l.recomputeGranularity = recompute;
    if (std::string(recompute) == "full")
        l.recomputeNumLayers = 1;
    l.useMegatronFsdp = fsdp;
    l.fsdpStrategy = fsdp ? "optim_grads_params" : "no_shard";
    if (graphs)
        l.cudaGraphImpl = "transformer_engine", l.cudaGraphScope = {"moe_router", "moe_preprocess"};
    return l;
}

}  // namespace

int main(int argc, char** argv)
{
    // --terms: each row's step terms too. --check (ctest planner_published_rows): exit 1 when a row's
    // predicted/published ratio moves more than 10 % from today's (a regression guard around
    // errors that are NOT all inside the issue's ±20 % target: docs/planner.md says which and why),
    // or when the software-version effect below leaves ±10 % of the published one.
    const bool terms = argc > 1 && std::string(argv[1]) == "--terms";
    const bool check = argc > 1 && std::string(argv[1]) == "--check";
    const std::map<std::string, double> today = {
        {"§8 Qwen3-30B-A3B 8×GB200 MXFP8 (26.08)", 1.79},
        {"§8 Qwen3-30B-A3B 8×GB300 MXFP8 (26.08)", 1.62},
        {"§8 Qwen3-235B-A22B 256×GB200 MXFP8 (26.08)", 1.46},
        {"archive Qwen3-235B-A22B 256×GB300 MXFP8 (26.08)", 1.29},
        {"archive Qwen3-30B-A3B 8×GB200 MXFP8 (26.04.01)", 1.82},
        {"archive Qwen3-30B-A3B 8×GB300 MXFP8 (26.04.01)", 1.51},
        {"§8 Qwen3-30B-A3B 8×B200 MXFP8 (26.04.01)", 1.66},
        {"§8 Qwen3-30B-A3B 16×H100 FP8 (26.04.01)", 1.04},
        {"archive Qwen3-235B-A22B 256×GB200 MXFP8 (26.04.01)", 1.35},
        {"archive Qwen3-235B-A22B 256×B200 MXFP8 (26.04.01)", 1.56},
        {"archive Qwen3-235B-A22B 256×H100 FP8 (26.04.01)", 0.76},
        {"§8 Qwen3-30B-A3B 16×H100 BF16 HybridEP", 1.11},
        {"card FSDP 64×GB200 (235B-VL)", 1.15},
        {"card FSDP 128×B200 (235B-VL)", 0.03},
        {"card 3D 64×GB200 (235B-VL)", 0.59},
        {"card FSDP+EDP 32×GB200 (35B-A3B)", 2.92},
    };
    int failures = 0;
    std::map<std::string, double> predicted;
    auto catalog = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().toString().c_str());
        return 1;
    }
    // §8 rows and the archive's (Bridge docs/performance-summary*.md), each with the layout of the
    // perf config of its container (scripts/performance/configs/qwen/qwen3_workload_base_configs.py:
    // 26.04.01 = v0.4.1; 26.06+/26.08 = the file before the July refactor). "graphs" = TE graphs of
    // moe_router + moe_preprocess ("+attn" adds attn); "full" = full-iteration graphs, which come
    // with a2a overlap, the fused grouped MLP (TE op fuser) and FP8 attention in those configs.
    auto fused = [](Layout l) {
        l.cudaGraphImpl = "full_iteration", l.cudaGraphScope.clear();
        l.overlapMoeExpertParallelComm = true, l.teOpFuser = true, l.fp8DotProductAttention = true;
        return l;
    };
    auto withAttn = [](Layout l) {
        l.cudaGraphScope = {"attn", "moe_router", "moe_preprocess"};
        return l;
    };
    Layout h100fp8 = make(16, 1, 1, 1, 16, 1, 1, 1024, "hybridep", "none", false, false);
    Layout h100bf16 = make(16, 1, 2, 12, 8, 1, 1, 512, "hybridep", "none", false, true);
    Layout h100_235 = make(256, 2, 8, 4, 32, 1, 1, 8192, "alltoall", "none", false, false, 10, 12);
    h100_235.overlapMoeExpertParallelComm = true;
    Layout b200frozen = make(128, 1, 1, 1, 8, 16, 8, 1024, "alltoall", "full", true, false);
    b200frozen.freezeVision = true;
    const Row rows[] = {
        {"§8 Qwen3-30B-A3B 8×GB200 MXFP8 (26.08)", "qwen3-30b-a3b", "gb200", fused(make(8, 1, 1, 1, 8, 1, 4, 512, "hybridep", "none", false, false)), true, true, 923,
         "full graphs + fused MLP + FP8 attention + a2a overlap (the config since 26.06)"},
        {"§8 Qwen3-30B-A3B 8×GB300 MXFP8 (26.08)", "qwen3-30b-a3b", "gb300", fused(make(8, 1, 1, 1, 8, 1, 8, 512, "hybridep", "none", false, false)), true, true, 1029,
         "MBS 8; as the GB200 row"},
        {"§8 Qwen3-235B-A22B 256×GB200 MXFP8 (26.08)", "qwen3-235b-a22b", "gb200", fused(make(256, 1, 8, 3, 32, 1, 1, 8192, "hybridep", "none", false, false, 10, 12)), true, true, 1077,
         "PP8 VP3 EP32; stage split 10/12×6/12 assumed (94 layers)"},
        {"archive Qwen3-235B-A22B 256×GB300 MXFP8 (26.08)", "qwen3-235b-a22b", "gb300", fused(make(256, 1, 4, 12, 32, 1, 2, 8192, "hybridep", "none", false, false, 22, 24)), true, true, 1306,
         "PP4 VP12 EP32 MBS2; stage split 22/24×2/24 assumed"},
        {"archive Qwen3-30B-A3B 8×GB200 MXFP8 (26.04.01)", "qwen3-30b-a3b", "gb200", make(8, 1, 1, 1, 8, 1, 4, 512, "hybridep", "none", false, true), true, true, 599,
         "HybridEP, TE graphs router/preprocess; no fused MLP, no FP8 attention"},
        {"archive Qwen3-30B-A3B 8×GB300 MXFP8 (26.04.01)", "qwen3-30b-a3b", "gb300", make(8, 1, 1, 1, 8, 1, 8, 512, "hybridep", "none", false, true), true, true, 729,
         "MBS 8; as the GB200 row"},
        {"§8 Qwen3-30B-A3B 8×B200 MXFP8 (26.04.01)", "qwen3-30b-a3b", "b200", withAttn(make(8, 1, 1, 1, 8, 1, 4, 512, "hybridep", "none", false, true)), true, true, 619,
         "HybridEP, TE graphs attn/router/preprocess"},
        {"§8 Qwen3-30B-A3B 16×H100 FP8 (26.04.01)", "qwen3-30b-a3b", "h100", h100fp8, true, true, 206,
         "EP16 over 2 nodes, HybridEP, no a2a overlap, no graphs, GBS 1024"},
        {"archive Qwen3-235B-A22B 256×GB200 MXFP8 (26.04.01)", "qwen3-235b-a22b", "gb200", withAttn(make(256, 1, 8, 3, 32, 1, 1, 8192, "hybridep", "none", false, true, 10, 12)), true, true, 840,
         "PP8 VP3 EP32, TE graphs attn/router/preprocess"},
        {"archive Qwen3-235B-A22B 256×B200 MXFP8 (26.04.01)", "qwen3-235b-a22b", "b200", make(256, 1, 8, 1, 8, 1, 1, 8192, "alltoall", "none", false, false, 10, 12), true, true, 560,
         "PP8 EP8, alltoall, no a2a overlap, no graphs"},
        {"archive Qwen3-235B-A22B 256×H100 FP8 (26.04.01)", "qwen3-235b-a22b", "h100", h100_235, true, true, 253,
         "TP2 PP8 VP4 EP32, alltoall + a2a overlap"},
        {"§8 Qwen3-30B-A3B 16×H100 BF16 HybridEP", "qwen3-30b-a3b", "h100", h100bf16, true, false, 299.4,
         "PP2 VP12 EP8 MBS1 assumed (the Bridge H100 recipe); published peak 62.2 GiB"},
        {"card FSDP 64×GB200 (235B-VL)", "qwen3-vl-235b-a22b", "gb200", make(64, 1, 1, 1, 64, 1, 4, 256, "hybridep", "full", true, false), false, false, 470,
         "1 image 448² per 4096-token sample assumed"},
        {"card FSDP 128×B200 (235B-VL)", "qwen3-vl-235b-a22b", "b200", b200frozen, false, false, 460,
         "EP8 ETP16, vision + projection frozen"},
        {"card 3D 64×GB200 (235B-VL)", "qwen3-vl-235b-a22b", "gb200", make(64, 1, 1, 1, 8, 8, 4, 1024, "hybridep", "full", false, false), false, false, 440,
         "EP8 ETP8 PP1, distributed optimizer"},
        {"card FSDP+EDP 32×GB200 (35B-A3B)", "qwen35-vl-35b-a3b", "gb200", make(32, 1, 1, 1, 8, 1, 16, 4096, "hybridep", "full", true, false), false, false, 260,
         "exact model (gated DeltaNet 3:1, shared expert, MTP); VPP4 at PP1 ignored; recompute unknown: full assumed (none needs 660 GiB at MBS 16)"},
    };
    std::printf("| row | predicted TFLOP/s/GPU | published | predicted/published | MFU | tokens/s/GPU | memory GiB | Bridge mock data (1×256² image, padded, force-balanced) | note |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : rows) {
        const auto model = catalog->model(r.model);
        const auto hw = catalog->hardware(r.hw);
        Workload w;
        w.mockTextOnly = r.textOnly;
        w.forceBalancedRouting = r.textOnly;  // §8 rows: moe_router_force_load_balancing
        ThroughputOptions o;
        o.fp8 = r.fp8;
        const ThroughputEstimate e = estimateThroughput(model->model, r.layout, w, *hw, o);
        const MemoryEstimate mem = estimateMemory(model->model, r.layout, w);
        // WB_REPORT_TERMS=TEXT: every term of the rows whose label contains TEXT (to stderr).
        if (const char* want = std::getenv("WB_REPORT_TERMS"); want && std::string(r.label).find(want) != std::string::npos) {
            std::fprintf(stderr, "%s\n", r.label);
            for (const TimeTerm& t : e.terms)
                std::fprintf(stderr, "  time   %8.1f ms  %s: %s\n", t.ms, t.name.c_str(), t.assumption.c_str());
            for (const MemoryTerm& t : mem.terms)
                std::fprintf(stderr, "  memory %8.2f GiB %s: %s\n", MemoryEstimate::gib(t.bytes), t.name.c_str(), t.assumption.c_str());
        }
        std::string mock = "–";
        if (!r.textOnly) {
            const ThroughputEstimate m = estimateMockThroughput(model->model, r.layout, w, *hw, o);
            char buf[96];
            std::snprintf(buf, sizeof buf, "%.0f tok/s/GPU (%.2f× real)", m.tokensPerSecPerGpu, m.tokensPerSecPerGpu / e.tokensPerSecPerGpu);
            mock = buf;
        }
        predicted[r.label] = e.tflopsPerGpu;
        const auto guard = today.find(r.label);
        if (guard == today.end() || std::abs(e.tflopsPerGpu / r.published / guard->second - 1.0) > 0.10) {
            ++failures;
            std::fprintf(stderr, "FAIL %s: predicted/published %.2f, today's guard %.2f ± 10 %%\n", r.label,
                         e.tflopsPerGpu / r.published, guard == today.end() ? 0.0 : guard->second);
        }
        std::printf("| %s | %.0f | %.0f | %.2f | %.1f%% | %.0f | %.1f | %s | %s |\n", r.label, e.tflopsPerGpu, r.published,
                    e.tflopsPerGpu / r.published, 100 * e.mfu, e.tokensPerSecPerGpu, MemoryEstimate::gib(mem.total()), mock.c_str(), r.note);
        if (terms)
            for (const TimeTerm& t : e.terms)
                std::printf("|   | %s: %.0f ms (%.0f%%) | %s |\n", t.name.c_str(), t.ms, 100 * t.ms / e.stepMs, t.assumption.c_str());
    }
    // The card's two ETP rows (EP8 ETP16 on 128 B200, EP8 ETP8 on 64 GB200) miss by 33× and 1.7×.
    // Megatron's ETP all-gathers the routed tokens over the ETP group (MoEAlltoAllTokenDispatcher)
    // and reduce-scatters the outputs, so the row as written moves ETP−1 copies of every rank's
    // routed rows per MoE layer and pass; the card's DP = world and "EDP" in its 35B row suggest
    // the ETP column may mean expert *data* parallelism. Both readings, with the ETP traffic's
    // lower bound (all-gather + reduce-scatter, forward, backward and the full-recompute forward, at
    // the full link rate; across nodes only the copies that must cross the network) against the
    // whole step the published TFLOP/s imply.
    std::printf("\n\nThe card's ETP rows: as written, and read as expert data parallelism (ETP 1)\n\n");
    std::printf("| row | published TFLOP/s | as written (ETP) | ETP traffic lower bound vs the published step | as EDP (ETP 1) |\n|---|---|---|---|---|\n");
    for (const Row& r : rows) {
        if (r.layout.etp <= 1 || std::string(r.label).rfind("card", 0) != 0)
            continue;
        const auto model = catalog->model(r.model);
        const auto hw = catalog->hardware(r.hw);
        Workload w;
        const ThroughputEstimate asWritten = estimateThroughput(model->model, r.layout, w, *hw, ThroughputOptions{});
        Layout edp = r.layout;
        edp.etp = 1;
        const ThroughputEstimate asEdp = estimateThroughput(model->model, edp, w, *hw, ThroughputOptions{});
        // The published step: the planner's FLOPs per step (model FLOPs do not depend on the layout)
        // at the published rate.
        const double publishedStepS = asWritten.stepMs * 1e-3 * asWritten.tflopsPerGpu / r.published;
        const wb::core::DecoderConfig& d = model->model.decoder;
        const double microBatches = double(r.layout.gbs) / (r.layout.mbs * std::max(1, r.layout.dp()));
        // Rows a token sends: k with the all-to-all dispatcher (permuted rows), one per distinct
        // destination EP rank with flex (HybridEP/DeepEP): E[ranks] = EP·(1 − C(E − E/EP, k)/C(E, k)).
        double copies = d.moeRouterTopk;
        if (r.layout.dispatcherType == "flex") {
            const int experts = d.numMoeExperts, perRank = experts / r.layout.ep;
            double none = 1.0;
            for (int i = 0; i < d.moeRouterTopk; ++i)
                none *= double(experts - perRank - i) / double(experts - i);
            copies = r.layout.ep * (1.0 - none);
        }
        const double routedBytes = double(r.layout.mbs) * w.seqLength * copies * d.hiddenSize * 2.0;  // bf16 rows
        const double passes = 3.0;  // forward, backward, full-recompute forward
        const bool crossesNodes = r.layout.etp > hw->nvlinkDomainSize;
        // A lower bound: across nodes only the copies from ranks outside this GPU's NVLink domain
        // are counted (they must cross the network); inside one domain all ETP − 1 of them.
        const int remoteCopies = crossesNodes ? r.layout.etp - hw->nvlinkDomainSize : r.layout.etp - 1;
        const double etpBytes = routedBytes * remoteCopies * 2.0 /* gather + scatter */ * d.numLayers * passes * microBatches;
        const double linkGBs = crossesNodes ? hw->networkGbPerS : hw->nvlinkGbPerS;
        const double boundS = etpBytes / (linkGBs * 1e9);
        std::printf("| %s | %.0f | %.0f (%.2f×) | %.0f GB per GPU per step (%.2f rows per token) over %s at %.0f GB/s: ≥ %.1f s vs %.1f s | %.0f (%.2f×) |\n",
                    r.label, r.published, asWritten.tflopsPerGpu, asWritten.tflopsPerGpu / r.published, etpBytes / 1e9,
                    copies, crossesNodes ? "the network" : "NVLink", linkGBs, boundS, publishedStepS, asEdp.tflopsPerGpu,
                    asEdp.tflopsPerGpu / r.published);
        // The evidence behind the B200 row's documented reason, guarded: as written it cannot run
        // at the published rate (its ETP traffic alone takes longer than the whole step), and read
        // as EDP it is in the card band (±25 %).
        if (crossesNodes && (boundS <= publishedStepS || std::abs(asEdp.tflopsPerGpu / r.published - 1.0) > 0.25)) {
            ++failures;
            std::fprintf(stderr, "FAIL %s: the ETP bound %.1f s vs the published step %.1f s, as EDP %.2f×\n", r.label, boundS,
                         publishedStepS, asEdp.tflopsPerGpu / r.published);
        }
    }

    // The same model and GPUs, the perf config of 26.04.01 against that of 26.08 (full-iteration
    // graphs, fused expert MLP, FP8 attention, a2a overlap): the knobs' terms against the
    // published gain, whatever the base efficiency.
    for (const char* gpu : {"GB200", "GB300"}) {
        const std::string now = std::string("§8 Qwen3-30B-A3B 8×") + gpu + " MXFP8 (26.08)";
        const std::string before = std::string("archive Qwen3-30B-A3B 8×") + gpu + " MXFP8 (26.04.01)";
        const double published = (std::string(gpu) == "GB200" ? 923.0 / 599.0 : 1029.0 / 729.0);
        const double model = predicted[now] / predicted[before];
        std::printf("\n26.08 / 26.04.01 config on 8×%s (Qwen3-30B-A3B): predicted %.2f×, published %.2f× (%+.1f %%)", gpu, model,
                    published, 100 * (model / published - 1));
        if (std::abs(model / published - 1) > 0.10) {
            ++failures;
            std::fprintf(stderr, "FAIL the 26.08 config's gain on %s: predicted %.2f× vs published %.2f×\n", gpu, model, published);
        }
    }
    // The guide's caution 1 (decision-guide.md: mock multimodal data looked about 2× faster than
    // real): Bridge's mock data against real workloads on the guide's FSDP anchor (235B-VL, 64×GB200,
    // EP64), term by term. The guide does not say what its real data were: three shapes.
    std::printf("\n\nMock against real data (Megatron-Bridge), card FSDP 64×GB200 layout (235B-VL, EP64); the guide: ~2×\n\n");
    std::printf("| real workload | real step ms | mock step ms | mock speedup | where the gap goes |\n|---|---|---|---|---|\n");
    {
        auto model = catalog->model("qwen3-vl-235b-a22b");
        auto hw = catalog->hardware("gb200");
        const Layout layout = make(64, 1, 1, 1, 64, 1, 4, 256, "hybridep", "full", true, false);
        // today: the regression guard (±10 %), as for the rows above; the guide's ~2× ± 25 % is
        // printed beside it, not met by the smaller shapes (docs/planner.md says why).
        struct Shape { const char* label; int images, side; double today; };
        for (const Shape& shape : {Shape{"1 image 448² per sample", 1, 448, 1.43}, Shape{"4 images 768² per sample", 4, 768, 1.47},
                                   Shape{"2 images 1344² per sample", 2, 1344, 1.53}}) {
            Workload w;
            w.imagesPerSample = shape.images;
            w.imageWidth = w.imageHeight = shape.side;
            const MockRealComparison c = compareMockAndReal(model->model, layout, w, *hw);
            const bool inGuideBand = std::abs(c.mockSpeedup() / 2.0 - 1.0) <= 0.25;
            std::printf("| %s | %.0f | %.0f | %.2f× (%s the guide's 2× ± 25 %%) | %s |\n", shape.label, c.real.stepMs, c.mock.stepMs,
                        c.mockSpeedup(), inGuideBand ? "within" : "outside", describeMockRealComparison(c, 3).c_str());
            if (std::abs(c.mockSpeedup() / shape.today - 1.0) > 0.10) {
                ++failures;
                std::fprintf(stderr, "FAIL mock vs real, %s: %.2f×, today's guard %.2f× ± 10 %%\n", shape.label, c.mockSpeedup(), shape.today);
            }
        }
    }
    std::printf("\nDeepSeek-V3 (256×GB200, 1276 TFLOP/s/GPU) is not predicted: MLA attention, dense layers and the shared expert are outside core/model_flops.h.\n");
    return check && failures > 0 ? 1 : 0;
}
