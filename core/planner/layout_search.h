// Layout search: enumerate TP, CP, PP (with uneven first/last stage), VPP, EP, ETP, MBS, recompute,
// dispatcher, CUDA-graph scope and FSDP for a model on a cluster; lint each candidate, predict its
// memory and throughput, and rank those that fit memory with headroom. Pure function of its
// request; any thread (a GUI runs it on a worker). A 235B search on 256 GPUs takes well under a
// second (tests/core/planner/bench_search.cpp prints the time).
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/decision_guide.h"
#include "core/planner/layout.h"
#include "core/planner/lint.h"
#include "core/planner/memory_model.h"
#include "core/planner/throughput_model.h"
#include "core/planner/workload.h"

#include <atomic>
#include <map>
#include <memory>
#include <optional>
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
    /// The user's real data when `workload` is the mock a run of the runtime would train
    /// (applyGuide with the mock-data fact); empty when the plan is for real data.
    std::optional<Workload> realWorkload;
    const Workload& realData() const { return realWorkload ? *realWorkload : workload; }
    int gbs = 512;
    Goal goal = Goal::Throughput;
    /// The decision guide's path (recommend(...).path): its family is ranked first, the other
    /// after, never above. "fsdp": Megatron-FSDP at TP 1, CP 1, PP 1; "3d": TP/PP/EP(/ETP) with the
    /// distributed optimizer, no FSDP.
    std::string path = "fsdp";
    bool freezeVision = false;    ///< decoder-focused work with the vision module frozen
    double headroom = 0.10;       ///< keep this fraction of HBM free
    int maxResults = 20;
    ThroughputOptions throughput;
    MemoryOptions memory;
    /// Set from another thread to stop a search early (the planning view's Cancel): searchLayouts
    /// then returns Failed "cancelled" instead of a partial ranking. Null: not cancellable.
    std::shared_ptr<const std::atomic<bool>> cancel;
    bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

struct Candidate {
    Layout layout;
    MemoryEstimate memory;
    ThroughputEstimate throughput;
    std::vector<LintFinding> lint;  ///< warnings and notes (ranked candidates have no errors)
    /// "fsdp", "3d", or "other" (FSDP with TP/CP > 1: neither of the guide's families).
    std::string family;
    /// The guide's knobs this row already applies, in the guide's order ("freeze-vision", ...).
    std::vector<std::string> guideKnobs;
};

/// The guide family of a layout (Candidate::family).
std::string layoutFamily(const Layout& layout);
/// The guide's tuning knobs a layout applies (Candidate::guideKnobs).
std::vector<std::string> appliedGuideKnobs(const Layout& layout, const HardwareSpec& hardware);

struct NearbyGpuCount {
    int gpus = 0;
    std::string why;  ///< e.g. "48 GPUs: TP1 PP1 EP8 … fits at 151 GiB"
};

struct SearchResult {
    std::vector<Candidate> ranked;          ///< best first, at most maxResults
    long enumerated = 0;                    ///< candidates generated
    long rejectedStructure = 0;             ///< sizes that cannot tile the world (§3)
    long rejectedLint = 0;                  ///< lint errors (§6, hardware)
    long rejectedMemory = 0;                ///< over HBM × (1 − headroom), both checks below
    long rejectedMemoryBound = 0;           ///< of rejectedMemory: by the weights+optimizer lower bound, before enumeration
    long fitted = 0;                        ///< fit and pass lint (ranked holds the best maxResults of them)
    std::map<std::string, long> lintRejections;  ///< rule id → count
    double smallestMemoryGib = 0;           ///< least memory any lint-clean candidate needs
    std::string noLayoutReason;             ///< set when ranked is empty
    std::vector<NearbyGpuCount> nearby;     ///< set when ranked is empty: nearest counts that work
    double elapsedMs = 0;
};

Result<SearchResult> searchLayouts(const SearchRequest& request);

/// "4151 layouts considered in 11 ms: 196 cannot tile the GPUs (§3), 3136 need more memory than
/// the budget, 0 fail lint, 819 fit; the best 20 are ranked." — the parts add up to the whole
/// (issue 18 item 4), the same words in `plan` and the planning view.
std::string describeSearchCounts(const SearchResult& result);

/// What the guide decides for a search, the same for `plan` and the planning view: the family
/// ranked first (recommend(answers).path), a mock workload for mock data, and a frozen vision
/// module when the answer says the work is decoder-focused with it frozen.
void applyGuide(const GuideAnswers& answers, SearchRequest& request);
/// The guide's recommendation shown beside a search: the answers as given, with the facts the
/// cautions need taken from the request and the chosen row (the first ranked, or none).
GuideRecommendation recommendForPlan(GuideAnswers answers, const SearchRequest& request, const Candidate* chosen);

}  // namespace wb::core::planner
