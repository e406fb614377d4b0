// Benchmark (not a test): loading N runs × M steps for the comparison engine, and what each stage
// costs. Prints a table. Usage: bench_compare_load [runs=20] [steps=100000] [store path]
// With an existing store path the runs already in it are reused (no ingest).
#include "core/compare/run_comparison.h"
#include "core/compare/smoothing.h"
#include "synthetic_runs.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <time.h>
#include <unistd.h>

using namespace wb::core;
using Clock = std::chrono::steady_clock;

namespace {

double cpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv)
{
    const int runCount = argc > 1 ? std::atoi(argv[1]) : 20;
    const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 100000;
    const bool ownStore = argc <= 3;
    const std::string path = !ownStore ? argv[3]
                                       : (std::filesystem::temp_directory_path() /
                                          ("bench_compare_" + std::to_string(::getpid()) + ".sqlite"))
                                             .string();
    auto store = RunStore::open(path);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().toString().c_str());
        return 1;
    }
    std::vector<std::string> ids;
    if (auto existing = (*store)->listRuns(); existing && static_cast<int>(existing->size()) >= runCount) {
        for (int i = 0; i < runCount; ++i)
            ids.push_back((*existing)[static_cast<size_t>(i)].id);
        std::printf("reusing %d runs of %s\n", runCount, path.c_str());
    } else {
        double streamSeconds = 0.0, ingestSeconds = 0.0;
        int64_t rows = 0;
        for (int r = 0; r < runCount; ++r) {
            wb::test::SyntheticRun run;
            run.name = "bench-" + std::to_string(r);
            run.steps = steps;
            run.dataSource = r % 5 == 4 ? "mock" : "real";
            run.stepMs = 100.0 + r;
            auto t = Clock::now();
            const std::string stream = wb::test::syntheticStream(run);
            streamSeconds += secondsSince(t);
            auto config = run.config;
            config.name = run.name;
            auto id = (*store)->createRun({"", run.name, "local", "", runConfigToJson(config), runConfigHash(config)});
            t = Clock::now();
            // Follower-sized chunks (4 MiB), as RunFollower ingests a growing file.
            int64_t offset = 0;
            while (offset < static_cast<int64_t>(stream.size())) {
                auto in = (*store)->ingest(*id, offset, std::string_view(stream).substr(offset, 4u << 20));
                if (!in) {
                    std::fprintf(stderr, "%s\n", in.error().toString().c_str());
                    return 1;
                }
                offset = in->newOffset;
                rows += in->stepsAdded;
            }
            ingestSeconds += secondsSince(t);
            ids.push_back(*id);
        }
        std::printf("| stage | rows | seconds | rows/s |\n|---|---|---|---|\n");
        std::printf("| build synthetic streams (not the product) | %lld | %.2f | %.0f |\n",
                    static_cast<long long>(rows), streamSeconds, rows / streamSeconds);
        std::printf("| RunStore::ingest (parse + SQLite) | %lld | %.2f | %.0f |\n", static_cast<long long>(rows),
                    ingestSeconds, rows / ingestSeconds);
    }

    // Stage by stage, then the whole engine call as the CLI and the GUI make it. Wall time and
    // CPU time (process: all threads): on a shared machine the CPU time is the steadier number.
    auto t = Clock::now();
    double cpu = cpuSeconds();
    int64_t rows = 0;
    for (const auto& id : ids)
        rows += static_cast<int64_t>((*store)->steps(id)->size());
    const double allColumnsSeconds = secondsSince(t), allColumnsCpu = cpuSeconds() - cpu;
    t = Clock::now();
    cpu = cpuSeconds();
    int64_t columnRows = 0;
    for (const auto& id : ids)
        columnRows += static_cast<int64_t>((*store)->stepColumns(id, StepSeries::fields())->size());
    const double columnsSeconds = secondsSince(t), columnsCpu = cpuSeconds() - cpu;
    if (columnRows != rows)
        return 1;
    t = Clock::now();
    cpu = cpuSeconds();
    std::vector<ComparedRun> loaded;
    for (const auto& id : ids) {
        ComparedRun r;
        r.summary = *(*store)->run(id);
        r.configJson = *(*store)->configJson(id);
        if (auto meta = (*store)->meta(id))
            r.meta = *meta;
        auto columns = (*store)->stepColumns(id, StepSeries::fields());
        r.setSteps(StepSeries::fromColumns(std::move(*columns)));
        loaded.push_back(std::move(r));
    }
    const double loadSeconds = secondsSince(t), loadCpu = cpuSeconds() - cpu;
    t = Clock::now();
    cpu = cpuSeconds();
    auto built = buildComparison(std::move(loaded), 0, std::nullopt);
    const double analyseSeconds = secondsSince(t), analyseCpu = cpuSeconds() - cpu;
    t = Clock::now();
    cpu = cpuSeconds();
    size_t smoothed = 0;
    for (const auto& r : built->runs) {
        smoothed += emaDebiased(r.steps().stepMs, 0.6).size();
    }
    const double smoothSeconds = secondsSince(t), smoothCpu = cpuSeconds() - cpu;
    t = Clock::now();
    cpu = cpuSeconds();
    CompareRequest request;
    request.runs = ids;
    auto full = compareRuns(path, request);
    const double fullSeconds = secondsSince(t), fullCpu = cpuSeconds() - cpu;
    if (!full) {
        std::fprintf(stderr, "%s\n", full.error().toString().c_str());
        return 1;
    }
    // A refresh: the same comparison again, the runs loaded before handed back (no new steps).
    t = Clock::now();
    cpu = cpuSeconds();
    auto again = compareRuns(path, request, full->runs);
    const double againSeconds = secondsSince(t), againCpu = cpuSeconds() - cpu;
    std::printf("\n%d runs × %lld steps (%lld rows)\n\n", runCount, static_cast<long long>(steps),
                static_cast<long long>(rows));
    std::printf("| stage | wall s | CPU s | rows/s (wall) |\n|---|---|---|---|\n");
    auto line = [&](const char* what, double wall, double cpuS) {
        std::printf("| %s | %.3f | %.3f | %.0f |\n", what, wall, cpuS, rows / wall);
    };
    line("RunStore::steps (all 25 columns) for every run", allColumnsSeconds, allColumnsCpu);
    line("RunStore::stepColumns (step + 17 compare columns) for every run", columnsSeconds, columnsCpu);
    line("the same + summary, config, meta (what compareRuns loads), every run", loadSeconds, loadCpu);
    line("windows + figures + fingerprints + diff", analyseSeconds, analyseCpu);
    line("EMA of one series per run", smoothSeconds, smoothCpu);
    line("compareRuns(path): parallel load + analyse, what CLI and GUI call", fullSeconds, fullCpu);
    line("compareRuns(path, loaded): refresh with the runs already loaded", againSeconds, againCpu);
    if (!again)
        return 1;
    std::printf("\nwarnings: %zu (first: %s)\n", full->warnings.size(),
                full->warnings.empty() ? "-" : full->warnings.front().code.c_str());
    if (ownStore) {
        store->reset();
        std::filesystem::remove(path);
        std::filesystem::remove(path + "-wal");
        std::filesystem::remove(path + "-shm");
    }
    return 0;
}
