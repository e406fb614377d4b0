// Predicted vs published TFLOP/s/GPU for the rows of megatron-bridge.md §8 and the guide's card
// rows (decision-guide.md "Measured anchors"). Its output is pasted into docs/planner.md.
// Where a published row leaves a setting out, the assumption is printed in the row's note.
#include "core/planner/memory_model.h"
#include "core/planner/throughput_model.h"

#include <cstdio>
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
    const bool terms = argc > 1 && std::string(argv[1]) == "--terms";
    auto catalog = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().toString().c_str());
        return 1;
    }
    Layout overlap16 = make(16, 1, 1, 1, 16, 1, 1, 512, "alltoall", "none", false, true);
    overlap16.overlapMoeExpertParallelComm = true;
    Layout h100bf16 = make(16, 1, 2, 12, 8, 1, 1, 512, "hybridep", "none", false, true);
    Layout b200frozen = make(128, 1, 1, 1, 8, 16, 8, 1024, "alltoall", "full", true, false);
    b200frozen.freezeVision = true;
    const Row rows[] = {
        {"§8 Qwen3-30B-A3B 8×GB200 MXFP8", "qwen3-vl-30b-a3b", "gb200", make(8, 1, 1, 1, 8, 1, 4, 512, "hybridep", "none", false, true), true, true, 923,
         "text-only LM = Qwen3-VL-30B decoder; HybridEP + graphs assumed"},
        {"§8 Qwen3-30B-A3B 8×GB300 MXFP8", "qwen3-vl-30b-a3b", "gb300", make(8, 1, 1, 1, 8, 1, 8, 512, "hybridep", "none", false, true), true, true, 1029,
         "MBS 8"},
        {"§8 Qwen3-235B-A22B 256×GB200 MXFP8", "qwen3-vl-235b-a22b", "gb200", make(256, 1, 8, 3, 32, 1, 1, 8192, "hybridep", "none", false, true, 10, 12), true, true, 1077,
         "PP8 VP3 EP32; stage split 10/12×6/12 assumed (94 layers)"},
        {"§8 Qwen3-30B-A3B 8×B200 MXFP8", "qwen3-vl-30b-a3b", "b200", make(8, 1, 1, 1, 8, 1, 4, 512, "alltoall", "none", false, true), true, true, 619,
         "26.04.01; alltoall assumed"},
        {"§8 Qwen3-30B-A3B 16×H100 FP8", "qwen3-vl-30b-a3b", "h100", overlap16, true, true, 206,
         "EP16, PP1 MBS1 + EP overlap assumed"},
        {"§8 Qwen3-30B-A3B 16×H100 BF16 HybridEP", "qwen3-vl-30b-a3b", "h100", h100bf16, true, false, 299.4,
         "PP2 VP12 EP8 MBS1 assumed (the Bridge H100 recipe); published peak 62.2 GiB"},
        {"card FSDP 64×GB200 (235B-VL)", "qwen3-vl-235b-a22b", "gb200", make(64, 1, 1, 1, 64, 1, 4, 256, "hybridep", "full", true, false), false, false, 470,
         "1 image 448² per 4096-token sample assumed"},
        {"card FSDP 128×B200 (235B-VL)", "qwen3-vl-235b-a22b", "b200", b200frozen, false, false, 460,
         "EP8 ETP16, vision + projection frozen"},
        {"card 3D 64×GB200 (235B-VL)", "qwen3-vl-235b-a22b", "gb200", make(64, 1, 1, 1, 8, 8, 4, 1024, "hybridep", "full", false, false), false, false, 440,
         "EP8 ETP8 PP1, distributed optimizer"},
        {"card FSDP+EDP 32×GB200 (35B-A3B)", "qwen3.5-35b-a3b-style", "gb200", make(32, 1, 1, 1, 8, 1, 16, 4096, "hybridep", "none", true, false), false, false, 260,
         "approximate model; VPP4 at PP1 ignored; recompute unknown (none)"},
    };
    std::printf("| row | predicted TFLOP/s/GPU | published | predicted/published | MFU | tokens/s/GPU | memory GiB | mock-data TFLOP/s (text only) | note |\n");
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
        std::string mock = "–";
        if (!r.textOnly) {
            const ThroughputEstimate m = estimateMockThroughput(model->model, r.layout, w, *hw, o);
            char buf[96];
            std::snprintf(buf, sizeof buf, "%.0f tok/s/GPU (%.2f× real)", m.tokensPerSecPerGpu, m.tokensPerSecPerGpu / e.tokensPerSecPerGpu);
            mock = buf;
        }
        std::printf("| %s | %.0f | %.0f | %.2f | %.1f%% | %.0f | %.1f | %s | %s |\n", r.label, e.tflopsPerGpu, r.published,
                    e.tflopsPerGpu / r.published, 100 * e.mfu, e.tokensPerSecPerGpu, MemoryEstimate::gib(mem.total()), mock.c_str(), r.note);
        if (terms)
            for (const TimeTerm& t : e.terms)
                std::printf("|   | %s: %.0f ms (%.0f%%) | %s |\n", t.name.c_str(), t.ms, 100 * t.ms / e.stepMs, t.assumption.c_str());
    }
    std::printf("\nDeepSeek-V3 (256×GB200, 1276 TFLOP/s/GPU) is not predicted: MLA attention, dense layers and the shared expert are outside core/model_flops.h.\n");
    return 0;
}
