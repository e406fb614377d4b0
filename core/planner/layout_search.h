// Layout search: enumerate TP, CP, PP (with uneven first/last stage), VPP, EP, ETP, MBS, recompute,
// dispatcher, CUDA-graph scope and FSDP for a model on a cluster; lint each candidate, predict its
// memory and throughput, and rank those that fit memory with headroom. Pure function of its
// request; any thread (a GUI runs it on a worker). A 235B search on 256 GPUs takes well under a
// second (tests/core/planner/bench_search.cpp prints the time).
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout.h"
#include "core/planner/lint.h"
#include "core/planner/memory_model.h"
#include "core/planner/throughput_model.h"
#include "core/planner/workload.h"

#include <map>
#include <string>
#include <vector>

namespace wb::core::planner {

enum class Goal { FirstRun, Throughput, Memory };
const char* goalName(Goal goal);
Result<Goal> parseGoal(const std::string& text);  ///< "first-run" | "throughput" | "memory"

struct SearchRequest {
    ModelSpec model;
    HardwareSpec hardware;
    int gpus = 8;                 ///< world size
    int nodes = 0;                ///< 0 = gpus / gpusPerNode; else must divide gpus
    Workload workload;
    int gbs = 512;
    Goal goal = Goal::Throughput;
    bool freezeVision = false;    ///< decoder-focused work with the vision module frozen
    double headroom = 0.10;       ///< keep this fraction of HBM free
    int maxResults = 20;
    ThroughputOptions throughput;
    MemoryOptions memory;
};

struct Candidate {
    Layout layout;
    MemoryEstimate memory;
    ThroughputEstimate throughput;
    std::vector<LintFinding> lint;  ///< warnings and notes (ranked candidates have no errors)
};

struct NearbyGpuCount {
    int gpus = 0;
    std::string why;  ///< e.g. "48 GPUs: TP1 PP1 EP8 … fits at 151 GiB"
};

struct SearchResult {
    std::vector<Candidate> ranked;          ///< best first, at most maxResults
    long enumerated = 0;                    ///< candidates generated
    long rejectedStructure = 0;             ///< sizes that cannot tile the world (§3)
    long rejectedLint = 0;                  ///< lint errors (§6, hardware)
    long rejectedMemory = 0;                ///< over HBM × (1 − headroom)
    std::map<std::string, long> lintRejections;  ///< rule id → count
    double smallestMemoryGib = 0;           ///< least memory any lint-clean candidate needs
    std::string noLayoutReason;             ///< set when ranked is empty
    std::vector<NearbyGpuCount> nearby;     ///< set when ranked is empty: nearest counts that work
    double elapsedMs = 0;
};

Result<SearchResult> searchLayouts(const SearchRequest& request);

}  // namespace wb::core::planner
