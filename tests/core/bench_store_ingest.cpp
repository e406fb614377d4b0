// Benchmark (not a test): rows/s of RunStore::ingest for a long run, in follower-sized chunks.
// Usage: bench_store_ingest [steps=200000] [chunk_bytes=4194304] [store path]
#include "core/run_store.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace wb::core;

int main(int argc, char** argv)
{
    const int steps = argc > 1 ? std::atoi(argv[1]) : 200000;
    const size_t chunk = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (4u << 20);
    const std::string path = argc > 3 ? argv[3]
                                      : (std::filesystem::temp_directory_path() /
                                         ("bench_store_" + std::to_string(::getpid()) + ".sqlite"))
                                            .string();
    std::string bytes;
    for (int i = 1; i <= steps; ++i) {
        StepRecord r;
        r.step = i;
        r.time = 1.7e9 + i;
        r.stepMs = 100.0 + i % 13;
        r.loss = 5.0 / (1 + i * 1e-4);
        r.tokensPerSPerGpu = 1000 + i % 97;
        r.effectiveTokens = 4096;
        r.memPeakGib = 12.5;
        bytes += toJsonLine(r);
        bytes += '\n';
    }
    // Parsing alone, to tell parser cost from SQLite cost.
    {
        const auto t0 = std::chrono::steady_clock::now();
        MetricsLineReader reader;
        const auto parsed = reader.feed(bytes).records.size();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("parse only: %zu records in %.3f s: %.0f lines/s\n", parsed, s, parsed / s);
    }
    auto store = RunStore::open(path);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().toString().c_str());
        return 1;
    }
    auto id = (*store)->createRun({"", "bench", "local", "", "{}", ""});
    const auto start = std::chrono::steady_clock::now();
    int64_t offset = 0;
    int64_t rows = 0;
    while (offset < static_cast<int64_t>(bytes.size())) {
        auto r = (*store)->ingest(*id, offset, std::string_view(bytes).substr(offset, chunk));
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().toString().c_str());
            return 1;
        }
        offset = r->newOffset;
        rows += r->stepsAdded;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("ingested %lld step rows (%.1f MiB) in %.3f s: %.0f rows/s (chunk %zu bytes)\n",
                static_cast<long long>(rows), bytes.size() / 1048576.0, seconds, rows / seconds,
                chunk);
    store->reset();
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    return 0;
}
