// Prints how long a full layout search takes for Qwen3-VL-235B-A22B on 256 GB200 GPUs (and a few
// other cases), with the top layouts. A program, not a test: timing varies with the machine.
#include "core/planner/layout_search.h"

#include <cstdio>

using namespace wb::core::planner;

int main()
{
    auto catalog = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().toString().c_str());
        return 1;
    }
    struct Case { const char* model; const char* hw; int gpus; int gbs; };
    const Case cases[] = {{"qwen3-vl-235b-a22b", "gb200", 256, 1024}, {"qwen3-vl-235b-a22b", "h100", 256, 1024},
                          {"qwen3-vl-30b-a3b", "gb200", 8, 512}, {"qwen3-vl-30b-a3b", "h100", 16, 512}};
    for (const Case& k : cases) {
        SearchRequest req;
        req.model = *catalog->model(k.model);
        req.hardware = *catalog->hardware(k.hw);
        req.gpus = k.gpus;
        req.gbs = k.gbs;
        req.maxResults = 5;
        for (int repeat = 0; repeat < 3; ++repeat) {
            auto r = searchLayouts(req);
            if (!r) {
                std::fprintf(stderr, "%s\n", r.error().toString().c_str());
                return 1;
            }
            std::printf("%s on %d×%s: %.1f ms, %ld candidates evaluated (%ld over memory, %ld lint-rejected, %ld structural skips), %zu ranked\n",
                        k.model, k.gpus, k.hw, r->elapsedMs, r->enumerated, r->rejectedMemory, r->rejectedLint,
                        r->rejectedStructure, r->ranked.size());
            if (repeat == 2)
                for (const Candidate& c : r->ranked)
                    std::printf("    %-110s %6.1f GiB %8.0f tok/s/GPU %6.0f TFLOP/s %5.1f%% MFU\n", c.layout.describe().c_str(),
                                MemoryEstimate::gib(c.memory.total()), c.throughput.tokensPerSecPerGpu, c.throughput.tflopsPerGpu,
                                100 * c.throughput.mfu);
        }
    }
    return 0;
}
