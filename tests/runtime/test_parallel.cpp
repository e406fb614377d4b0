// Multi-rank CPU runs of moe-train over Gloo on loopback (docs/parallel.md). Plain executable.
//   equal N : 10 steps of sample-mock with GBS 4, MBS 1 on one rank and on N ranks
//             (--nproc-per-node N, data parallel): the per-step losses must agree within
//             kLossTolerance (same global batch; only the reduction order differs), tokens are
//             summed over ranks, grad norms agree, and the meta line says world_size N and dpN.
//   layout L: the same for 10 steps on 4 ranks with FSDP (fsdp-optim, fsdp-optim_grads,
//             fsdp-optim_grads_params), expert parallelism (ep2dp2: EP 2 × DP 2) or both
//             (fsdp-ep: EP 2 × DP 2 with optim_grads_params), and ZeRO-3 with a frozen vision
//             encoder (fsdp-frozen-vision); tensor parallel layouts (tp2-sp, tp2, tp2-etp1-sp on 2
//             ranks, tp2ep2-sp and tp2dp2-sp on 4); the meta line names the layout.
//             Pipeline: pp2, pp2-uneven (1 + 3 layers, deepstack sent, full recompute), pp4 (middle
//             stages, a deepstack feature passed through), pp2dp2, pp2ep2. Interleaved 1F1B
//             (virtual stages): pp2-vpp2 (also its idle share against plain 1F1B), pp4-vpp2,
//             pp4-vpp2-m8, pp2-vpp2dp2. Tensor × pipeline:
//             tp2pp2-sp (1 + 3 layers, deepstack sent), tp2pp2, tp2pp2ep2-sp (ETP 1) on 4 ranks,
//             tp2pp2ep2dp2-sp (ETP 2) on 8. FSDP × TP on 4 ranks: tp2dp2-sp-fsdp-optim_grads_params,
//             tp2dp2-fsdp-optim, tp2dp2-sp-fsdp-optim_grads (bf16 moments), tp2ep2-sp-fsdp-optim_grads_params.
//             Context parallel: cp2, cp4, tp2cp2-sp, cp2ep2, cp2dp2, cp2-recompute.
//   overlap L: overlap_grad_reduce with small buckets on layout L (dp2, ep2dp2, tp2dp2-sp, pp2dp2, cp2ep2,
//             dp2-recompute-frozen, ep2dp2-missing) against one rank and against the synchronous
//             reduction; the ranks' logs show the buckets launched inside backward (testOverlap).
//   resume L: checkpoints of layout L (fsdp-optim_grads_params, ep2dp2, pp2, tp2-sp, tp2pp2-sp,
//             tp2dp2-sp-fsdp-optim_grads_params): 6 steps vs 3
//             saved + resumed to 6, bit-identical; another --nproc-per-node exits 2; files without
//             a layout.json naming them are not used.
//   resume-signal L: SIGTERM mid-run → every rank saves and exits 5; resumed run bit-identical;
//             ranks whose run directories differ (not shared) exit 2 together.
//   kill    : two ranks started torchrun-style (RANK/WORLD_SIZE/MASTER_* set by the test); rank 1
//             is SIGKILLed mid-run and rank 0 must exit 4 (comm_error) within the comm timeout.
//             Then the same through --nproc-per-node: the parent exits 1 and status.json names rank 1.
//   kill-pp, kill-tp2pp2: the torchrun-style kill with PP 2 (2 ranks), and TP 2 × PP 2 (4 ranks,
//             rank 3 killed: ranks 0, 1 and 2 exit 4).
//   validate: --validate with --nproc-per-node: DP, EP, TP and CP layouts accepted; bad TP
//             and CP combinations rejected naming the field.
//   hang    : --nproc-per-node 2, rank 1 SIGSTOPped: rank 0 times out in a collective and exits 4,
//             the parent continues and ends the stopped rank and exits 4, all within the timeout
//             plus the grace.
#include "check.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
namespace test = wb::test;
using nlohmann::json;

namespace {

// Relative tolerance on the loss: fp32 sums of 4 micro-batch gradients in another order, through
// AdamW, over 6 steps. Observed ≈ 1e-7; 1e-4 leaves room for thread-count effects and still
// catches any real difference (a wrong shard or a missing average moves the loss by > 1e-2).
constexpr double kLossTolerance = 1e-4;
constexpr int kSteps = 6;
// Sharded layouts: 6 steps, and more reordering than DP (per-parameter reduce-scatter, shards,
// experts computed over rows of several ranks). fp32 sums of n terms in another order differ by
// about ε·√n relative (ε = 1.2e-7; n ≤ 4 ranks × 1e4 elements per matrix product ≈ 2e2·ε ≈ 2.4e-5
// per reduction in the worst case); AdamW normalises the update, so differences stay near that
// size rather than compounding step by step. Observed ≤ 1e-6 (docs/parallel.md); 2e-4 leaves
// room while a wrong shard, a missing division or a dropped expert moves the loss by > 1e-2.
constexpr double kShardedLossTolerance = 2e-4;
// The same with bf16 moments, over 6 steps: a reordered fp32 sum that crosses a bf16 rounding
// midpoint moves that moment by 2^-8 relative, and the difference then grows as the tiny model
// memorizes. Observed over a 10-step run: loss 6e-6, grad norm 3e-6 relative (over a 20-step run
// up to 4e-3 and 9e-3 near the end: too loose to test anything). 1e-3 still catches a wrong shard (> 1e-2 from
// step 2); the moment dtype itself is checked by the optimizer-state bytes in the logs.
constexpr double kBf16MomentLossTolerance = 1e-3;
constexpr int kBf16MomentSteps = 6;
// 6 steps: a wrong shard, a missing division or a dropped expert shows from step 2 (> 1e-2), and
// the CI's 2 cores run ~50 of these layouts (20 steps each took 25 of the suite's minutes, 10
// steps ≈ 16).
constexpr int kShardedSteps = 6;

std::vector<json> readMetrics(const fs::path& runDir)
{
    std::vector<json> records;
    std::ifstream in(runDir / "metrics.jsonl");
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            records.push_back(json::parse(line, nullptr, false));
    return records;
}

std::vector<json> stepsOf(const std::vector<json>& records)
{
    std::vector<json> steps;
    for (const auto& r : records)
        if (r.value("type", "") == "step")
            steps.push_back(r);
    return steps;
}

json readStatus(const fs::path& runDir)
{
    return json::parse(test::readFile(runDir / "status.json"), nullptr, false);
}

// `parallel` is merged into the "parallel" section; `common` (a JSON merge patch) into both.
fs::path writeConfig(const fs::path& dir, int iters, const json& parallel = json::object(), const std::string& tag = "",
                     const json& common = json::object())
{
    std::ifstream in(std::string(WB_SOURCE_DIR) + "/resources/configs/sample-mock.json");
    json config = json::parse(in);
    config["data"]["manifest"] = "";  // synthetic captions, no files
    config["data"]["mock_image_size"] = 64;
    config["train"]["train_iters"] = iters;
    config["train"]["lr_warmup_iters"] = 2;
    config["train"]["micro_batch_size"] = 1;
    config["train"]["global_batch_size"] = 4;
    config["train"]["log_interval"] = 1;
    for (const auto& [key, value] : parallel.items())
        config["parallel"][key] = value;
    config.merge_patch(common);  // nested: {"model": {"decoder": {"num_layers": 4}}} sets one field
    const fs::path path = dir / ("run" + std::to_string(iters) + tag + ".json");
    std::ofstream(path) << config.dump(2);
    return path;
}

// `parallel` is merged into the multi-rank config's "parallel" section; `layout` must appear in
// its meta line.
void testEqual(const fs::path& dir, int ranks, int steps = kSteps, const json& parallel = json::object(),
               const std::string& layout = "", double tolerance = kLossTolerance, const json& common = json::object())
{
    const fs::path config = writeConfig(dir, steps, json::object(), "", common);
    const fs::path multiConfig = parallel.empty() ? config : writeConfig(dir, steps, parallel, "-multi", common);
    const fs::path single = dir / "single", multi = dir / "multi";
    int rc = test::runProcess({MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", single.string()},
                              (dir / "single.log").string(), 300);
    WB_CHECK_MSG(rc == 0, "single rank rc " << rc << "\n" << test::readFile(dir / "single.log"));
    rc = test::runProcess({MOE_TRAIN_PATH, "--config", multiConfig.string(), "--run-dir", multi.string(), "--nproc-per-node",
                           std::to_string(ranks), "--comm-timeout", "60"},
                          (dir / "multi.log").string(), 300);
    WB_CHECK_MSG(rc == 0, ranks << " ranks rc " << rc << "\n" << test::readFile(dir / "multi.log") << "\n"
                                << test::readFile(multi / "rank0.log"));
    for (int k = 0; k < ranks; ++k)
        WB_CHECK_MSG(fs::exists(multi / ("rank" + std::to_string(k) + ".log")), "no log for rank " << k);

    const auto multiRecords = readMetrics(multi);
    WB_CHECK(!multiRecords.empty() && multiRecords.front().value("type", "") == "meta");
    if (!multiRecords.empty()) {
        WB_CHECK(multiRecords.front().value("world_size", 0) == ranks);
        const int dp = ranks / (parallel.value("pipeline_model_parallel_size", 1) *
                                parallel.value("tensor_model_parallel_size", 1) * parallel.value("context_parallel_size", 1));
        WB_CHECK_MSG(multiRecords.front().value("layout", "").find("dp" + std::to_string(dp)) != std::string::npos,
                     multiRecords.front().dump());
        WB_CHECK_MSG(multiRecords.front().value("layout", "").find(layout) != std::string::npos, multiRecords.front().dump());
    }
    const auto a = stepsOf(readMetrics(single)), b = stepsOf(multiRecords);
    WB_CHECK_MSG(a.size() == static_cast<size_t>(steps) && b.size() == static_cast<size_t>(steps),
                 a.size() << " vs " << b.size() << " steps");
    double worstLoss = 0.0, worstNorm = 0.0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        const double la = a[i].value("loss", 0.0), lb = b[i].value("loss", 0.0);
        worstLoss = std::max(worstLoss, std::abs(la - lb) / std::abs(la));
        WB_CHECK_MSG(std::abs(la - lb) <= tolerance * std::abs(la), "step " << i + 1 << ": loss " << la << " on one rank, "
                                                                        << lb << " on " << ranks);
        WB_CHECK_CLOSE(a[i].value("aux_loss", 0.0), b[i].value("aux_loss", 1.0), 1e-4);
        // The loss alone would miss a gradient summed instead of averaged (AdamW is nearly scale
        // invariant and clipping hides the factor); the pre-clip norm shows it.
        const double ga = a[i].value("grad_norm", 0.0), gb = b[i].value("grad_norm", 0.0);
        worstNorm = std::max(worstNorm, std::abs(ga - gb) / std::abs(ga));
        WB_CHECK_MSG(std::abs(ga - gb) <= tolerance * std::abs(ga), "step " << i + 1 << ": grad norm " << ga << " vs " << gb);
        WB_CHECK_MSG(a[i].value("text_tokens", -1) == b[i].value("text_tokens", -2), "text tokens differ at step " << i + 1);
        WB_CHECK_MSG(a[i].value("images", -1) == b[i].value("images", -2), "images differ at step " << i + 1);
        // Summed over data-parallel ranks only: TP ranks and later pipeline stages repeat them.
        WB_CHECK_MSG(a[i].value("effective_tokens", -1) == b[i].value("effective_tokens", -2),
                     "effective tokens differ at step " << i + 1 << ": " << a[i].value("effective_tokens", -1) << " vs "
                                                        << b[i].value("effective_tokens", -2));
    }
    std::cout << "largest relative difference over " << steps << " steps: loss " << worstLoss << ", grad norm "
              << worstNorm << std::endl;
    const json status = readStatus(multi);
    WB_CHECK(status.value("status", "") == "finished" && status.value("exit_code", -1) == 0);
}

// The MiB after `key` in `text` (first occurrence), or -1.
double mibAfter(const std::string& text, const std::string& key)
{
    const size_t at = text.find(key);
    return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + key.size());
}

// One rank per stage: each stage's log says what it holds, stage 0 the vision side and the last
// the head; together they hold the single-rank model's parameters exactly once (the others are
// freed, not merely unused).
void checkStagesHoldTheModelOnce(const fs::path& dir, int stages)
{
    const double whole = mibAfter(test::readFile(dir / "single.log"), "per rank parameters ");
    double held = 0.0;
    for (int k = 0; k < stages; ++k) {
        const std::string log = test::readFile(dir / "multi" / ("rank" + std::to_string(k) + ".log"));
        WB_CHECK_MSG(log.find("stage " + std::to_string(k) + ": decoder layers [") != std::string::npos, log);
        WB_CHECK_MSG((log.find("vision encoder") != std::string::npos) == (k == 0), log);
        WB_CHECK_MSG((log.find("output layer") != std::string::npos) == (k == stages - 1), log);
        held += mibAfter(log, "parameters held ");
    }
    // Each value is rounded to 0.01 MiB in the logs.
    WB_CHECK_MSG(whole > 0.0 && std::abs(held - whole) <= 0.01 * stages, "stages hold " << held << " MiB, one rank " << whole);
}

// A named multi-rank layout of these tests: its "parallel" section, a patch for the whole config,
// the layout string its meta line must contain, and its number of ranks.
struct LayoutSpec {
    json parallel;
    json common = json::object();
    std::string layout;
    int ranks = 4;
    double tolerance = kShardedLossTolerance;
    int steps = kShardedSteps;
};

// Tensor parallel layouts (docs/parallel.md): TP 2 on 2 ranks with sequence parallelism and ETP 2
// (tp2-sp), without SP (tp2), with ETP 1 (tp2-etp1-sp), and on 4 ranks TP 2 × EP 2 (tp2ep2-sp)
// and TP 2 × DP 2 (tp2dp2-sp); tp2-sp-recompute adds full recompute.
LayoutSpec tensorParallelSpec(const std::string& name)
{
    const bool sp = name.find("-sp") != std::string::npos;
    const bool etp1 = name.find("etp1") != std::string::npos;
    LayoutSpec spec;
    spec.parallel = {{"tensor_model_parallel_size", 2}, {"sequence_parallel", sp}, {"expert_tensor_parallel_size", etp1 ? 1 : 2}};
    spec.ranks = 2;
    spec.layout = std::string("tp2 pp1 cp1 ep1") + (sp ? " sp" : "") + (etp1 ? " etp1" : " etp2") + " dp1";
    if (name.rfind("tp2ep2", 0) == 0) {
        spec.parallel["expert_model_parallel_size"] = 2;
        spec.ranks = 4;
        spec.layout = "tp2 pp1 cp1 ep2 sp etp2 dp2";
    } else if (name.rfind("tp2dp2", 0) == 0) {
        spec.ranks = 4;
        spec.layout = "tp2 pp1 cp1 ep1 sp etp2 dp2";
    }
    // Full recompute runs every layer again in backward, its TP collectives included.
    if (name.find("recompute") != std::string::npos)
        spec.common = {{"recompute", {{"granularity", "full"}, {"method", "uniform"}, {"recompute_num_layers", 1}}}};
    return spec;
}

// Context parallel layouts (docs/parallel.md "Context parallelism"): each row of 256 tokens (several
// packed samples, image tokens and a deepstack feature) in 2·CP chunks, rank = tp + TP·(cp + CP·dp):
//  - cp2: CP 2 on 2 ranks (rank 0: chunks 0 and 3, rank 1: chunks 1 and 2);
//  - cp4: CP 4 on 4 ranks (8 chunks);
//  - tp2cp2-sp: TP 2 + SP × CP 2 on 4 ranks (CP groups {0,2} {1,3}; each CP share of 128 tokens
//    per row split again over TP, the aux statistics summed over both);
//  - cp2ep2: EP 2 over the two CP ranks (Megatron's expert grid ignores CP: the EP group is the CP
//    group, and the experts' tokens are the two shares of one micro-batch);
//  - cp2dp2: CP 2 × DP 2 on 4 ranks (CP groups {0,1} {2,3}; gradients reduced over all 4, divided
//    by DP 2);
//  - cp2-recompute: CP 2 with full recompute (each layer's K/V all-gather runs again in backward).
LayoutSpec contextParallelSpec(const std::string& name)
{
    LayoutSpec spec;
    const int cp = name.rfind("cp4", 0) == 0 ? 4 : 2;
    spec.parallel = {{"context_parallel_size", cp}};
    spec.ranks = cp;
    spec.layout = "tp1 pp1 cp" + std::to_string(cp) + " ep1 etp1 dp1";
    if (name == "tp2cp2-sp") {
        spec.parallel.update({{"tensor_model_parallel_size", 2}, {"sequence_parallel", true}, {"expert_tensor_parallel_size", 2}});
        spec.ranks = 4;
        spec.layout = "tp2 pp1 cp2 ep1 sp etp2 dp1";
    } else if (name == "cp2ep2") {
        spec.parallel["expert_model_parallel_size"] = 2;
        spec.layout = "tp1 pp1 cp2 ep2 etp1 dp1";
    } else if (name == "cp2dp2") {
        spec.ranks = 4;
        spec.layout = "tp1 pp1 cp2 ep1 etp1 dp2";
    } else if (name == "cp2-recompute") {
        spec.common = {{"recompute", {{"granularity", "full"}, {"method", "uniform"}, {"recompute_num_layers", 1}}}};
    }
    return spec;
}

// Tensor × pipeline parallel layouts (docs/parallel.md): ranks r = stage·(TP·DP) + dp·TP + tp.
//  - tp2pp2-sp: TP 2 × PP 2 + SP (ETP 2) on 4 ranks, one decoder layer per stage; two deepstack
//    features, so the TP ranks' token shares and the second layer's feature cross the stages;
//  - tp2pp2: the same without SP (the whole hidden states sent; one deepstack feature), with
//    full recompute;
//  - tp2pp2ep2-sp: EP 2 with ETP 1 inside each stage of TP 2 (the EP group is the TP group);
//  - tp2pp2ep2dp2-sp: 8 ranks, TP 2 × PP 2 × DP 2 with EP 2 over the stage's DP ranks (ETP 2).
LayoutSpec tensorPipelineSpec(const std::string& name)
{
    const bool sp = name.find("-sp") != std::string::npos;
    LayoutSpec spec;
    spec.parallel = {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 2}, {"sequence_parallel", sp},
                     {"expert_tensor_parallel_size", 2}};
    spec.layout = std::string("tp2 pp2 cp1 ep1") + (sp ? " sp" : "") + " etp2 dp1 pp_layers:1,1";
    if (name == "tp2pp2-sp") {
        spec.common = {{"model", {{"vision", {{"deepstack_layers", {0, 1}}}}}}};
    } else if (name == "tp2pp2") {
        // Full recompute: each stage's layer runs its TP collectives again in backward, between
        // the pipeline's send/recv.
        spec.common = {{"recompute", {{"granularity", "full"}, {"method", "uniform"}, {"recompute_num_layers", 1}}}};
    } else if (name == "tp2pp2ep2-sp") {
        spec.parallel["expert_model_parallel_size"] = 2;
        spec.parallel["expert_tensor_parallel_size"] = 1;
        spec.layout = "tp2 pp2 cp1 ep2 sp etp1 dp1 pp_layers:1,1";
    } else if (name == "tp2pp2ep2dp2-sp") {
        spec.parallel["expert_model_parallel_size"] = 2;
        spec.layout = "tp2 pp2 cp1 ep2 sp etp2 dp2 pp_layers:1,1";
        spec.ranks = 8;
    }
    return spec;
}

// With TP × PP each rank's log names its stage: rank r is on stage r / (ranks per stage).
void checkTensorPipelineStages(const fs::path& dir, int ranks, int stages)
{
    for (int k = 0; k < ranks; ++k) {
        const std::string log = test::readFile(dir / "multi" / ("rank" + std::to_string(k) + ".log"));
        const int stage = k / (ranks / stages);
        WB_CHECK_MSG(log.find("pp" + std::to_string(stages) + " stage " + std::to_string(stage) + ": decoder layers [") !=
                         std::string::npos,
                     "rank " << k << " is not on stage " << stage << ":\n" << log);
        WB_CHECK_MSG(log.find("tp2") != std::string::npos, log);
    }
}

// FSDP × tensor parallel layouts on 4 ranks (TP 2 × DP 2: TP groups {0,1} {2,3}, each TP slice
// sharded over its DP group {0,2} or {1,3}; docs/parallel.md "FSDP × tensor parallelism"):
//  - tp2dp2-sp-fsdp-optim_grads_params: ZeRO-3 with SP (the partial norm/router gradients summed
//    over TP on the shards; ETP 2: expert slices sharded over DP);
//  - tp2dp2-fsdp-optim: ZeRO-1 without SP (ETP 1: whole experts sharded over all 4 ranks, the TP
//    ranks' identical expert gradients divided out);
//  - tp2dp2-sp-fsdp-optim_grads: ZeRO-2 with SP and ETP 1 (experts' gradients partial per TP
//    rank, each TP rank routed its own tokens) and bf16 Adam moments;
//  - tp2ep2-sp-fsdp-optim_grads_params: TP 2 × EP 2 × DP 2 with ETP 1 (the EP group is the TP
//    group), ZeRO-3: expert slices sharded over their EDP group {0,2} / {1,3}, dense over DP.
std::optional<LayoutSpec> tensorFsdpSpec(const std::string& name)
{
    const size_t at = name.find("-fsdp-");
    if (at == std::string::npos)
        return std::nullopt;
    const std::string strategy = name.substr(at + 6);
    const bool sp = name.find("-sp-") != std::string::npos;
    const bool ep = name.rfind("tp2ep2", 0) == 0;
    const bool etp1 = name != "tp2dp2-sp-fsdp-optim_grads_params";
    LayoutSpec spec;
    spec.parallel = {{"tensor_model_parallel_size", 2}, {"sequence_parallel", sp}, {"expert_tensor_parallel_size", etp1 ? 1 : 2},
                     {"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", strategy}};
    if (ep)
        spec.parallel["expert_model_parallel_size"] = 2;
    spec.layout = std::string("tp2 pp1 cp1 ") + (ep ? "ep2" : "ep1") + (sp ? " sp" : "") + (etp1 ? " etp1" : " etp2") +
                  " dp2 fsdp:" + strategy;
    if (name == "tp2dp2-sp-fsdp-optim_grads") {
        spec.common = {{"train", {{"exp_avg_dtype", "bf16"}, {"exp_avg_sq_dtype", "bf16"}}}};
        spec.tolerance = kBf16MomentLossTolerance;
        spec.steps = kBf16MomentSteps;
    }
    return spec;
}

// FSDP and/or expert parallelism on 4 ranks, pipeline parallel, tensor parallel; nullopt for an
// unknown name.
LayoutSpec virtualPipelineSpec(const std::string& name);

std::optional<LayoutSpec> layoutSpec(const std::string& name)
{
    LayoutSpec spec;
    if (name == "fsdp-bf16-moments") {  // ZeRO-3 on 2 ranks, the moment shards stored in bf16
        spec.parallel = {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads_params"}};
        spec.common = {{"train", {{"exp_avg_dtype", "bf16"}, {"exp_avg_sq_dtype", "bf16"}}}};
        spec.layout = "fsdp:optim_grads_params";
        spec.ranks = 2;
        // The shards' fp32 sums come in another order than one rank's; where that moves a moment
        // across a bf16 rounding midpoint it changes by one bf16 ulp (2^-8 relative), not 1e-7.
        spec.tolerance = kBf16MomentLossTolerance;
        spec.steps = kBf16MomentSteps;
    } else if (name == "fsdp-keep-gathered") {  // ZeRO-3 without reshard after forward, 2 ranks
        spec.parallel = {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads_params"},
                         {"fsdp_reshard_after_forward", false}};
        spec.layout = "fsdp:optim_grads_params";
        spec.ranks = 2;
    } else if (name == "fsdp-bf16-reduce") {  // ZeRO-2, gradients reduce-scattered in bf16, 2 ranks
        spec.parallel = {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads"},
                         {"grad_reduce_in_fp32", false}};
        spec.layout = "fsdp:optim_grads";
        spec.ranks = 2;
        // bf16 gradients: 2^-8 relative per value, so not the fp32 sums' 1e-7.
        spec.tolerance = kBf16MomentLossTolerance;
        spec.steps = kBf16MomentSteps;
    } else if (name == "fsdp-frozen-vision") {  // frozen parameters stay whole, with no optimizer state
        spec.parallel = {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads_params"}};
        spec.common = {{"model", {{"freeze_vision_model", true}}}};
        spec.layout = "fsdp:optim_grads_params";
    } else if (name.rfind("fsdp-optim", 0) == 0) {
        const std::string strategy = name.substr(5);
        spec.parallel = {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", strategy}};
        spec.layout = "fsdp:" + strategy;
    } else if (name == "ep2dp2") {
        spec.parallel = {{"expert_model_parallel_size", 2}};
        spec.layout = "ep2 etp1 dp4";
    } else if (name == "fsdp-ep") {
        spec.parallel = {{"expert_model_parallel_size", 2}, {"use_megatron_fsdp", true},
                         {"data_parallel_sharding_strategy", "optim_grads_params"}};
        spec.layout = "ep2 etp1 dp4 fsdp:optim_grads_params";
    } else if (name == "pp2") {  // 2 stages, one decoder layer each; 4 micro-batches per step
        spec.parallel = {{"pipeline_model_parallel_size", 2}};
        spec.layout = "pp2 cp1 ep1 etp1 dp1 pp_layers:1,1";
        spec.ranks = 2;
    } else if (name == "pp2-uneven") {
        // 4 layers split 1 + 3, two deepstack features: the second (added after layer 1) is sent
        // from the vision stage to stage 1 with the hidden states, its gradient comes back; and
        // full activation recompute on both stages.
        spec.parallel = {{"pipeline_model_parallel_size", 2}, {"num_layers_in_first_pipeline_stage", 1},
                         {"num_layers_in_last_pipeline_stage", 3}};
        spec.common = {{"model", {{"decoder", {{"num_layers", 4}}}, {"vision", {{"deepstack_layers", {0, 1}}}}}},
                       {"recompute", {{"granularity", "full"}, {"method", "uniform"}, {"recompute_num_layers", 1}}}};
        spec.layout = "pp2 cp1 ep1 etp1 dp1 pp_layers:1,3";
        spec.ranks = 2;
    } else if (name == "pp4") {
        // 4 stages of one layer: two middle stages; three deepstack features, the one of layer 2
        // passes through stage 1 on its way to stage 2 (and its gradient back).
        spec.parallel = {{"pipeline_model_parallel_size", 4}};
        spec.common = {{"model", {{"decoder", {{"num_layers", 4}}}, {"vision", {{"num_layers", 3}, {"deepstack_layers", {0, 1, 2}}}}}}};
        spec.layout = "pp4 cp1 ep1 etp1 dp1 pp_layers:1,1,1,1";
    } else if (name.find("vpp") != std::string::npos) {
        return virtualPipelineSpec(name);
    } else if (name == "pp2dp2") {  // stages {0,1} and {2,3}, pipelines {0,2} and {1,3}
        spec.parallel = {{"pipeline_model_parallel_size", 2}};
        spec.layout = "pp2 cp1 ep1 etp1 dp2 pp_layers:1,1";
    } else if (name == "pp2ep2") {  // EP 2 inside each stage (its two ranks), DP 2 for dense
        spec.parallel = {{"pipeline_model_parallel_size", 2}, {"expert_model_parallel_size", 2}};
        spec.layout = "pp2 cp1 ep2 etp1 dp2 pp_layers:1,1";
    } else if (name.find("cp") != std::string::npos) {
        return contextParallelSpec(name);
    } else if (name.rfind("tp2", 0) == 0 && name.find("-fsdp-") != std::string::npos) {
        return tensorFsdpSpec(name);
    } else if (name.rfind("tp2pp2", 0) == 0) {
        return tensorPipelineSpec(name);
    } else if (name.rfind("tp2", 0) == 0) {
        return tensorParallelSpec(name);
    } else {
        return std::nullopt;
    }
    return spec;
}

// Interleaved 1F1B (virtual pipeline stages, one decoder layer per model chunk; three deepstack
// features, so the feature of layer 2 travels with the hidden states from the last stage's chunk
// 0 back to stage 0's chunk 1, and its gradient the other way):
//  - pp2-vpp2: 2 ranks, 4 layers (stage 0: layers 0 and 2, stage 1: 1 and 3), M = 4;
//  - pp4-vpp2: 4 ranks, 8 layers, M = 4 = P (Megatron's every-forward-first case);
//  - pp4-vpp2-m8: the same with M = 8 (warm-up, steady state and cool-down on 4 stages);
//  - pp2-vpp2dp2: PP 2 × DP 2 on 4 ranks, M = 4 per data-parallel rank (GBS 8).
LayoutSpec virtualPipelineSpec(const std::string& name)
{
    const bool four = name.rfind("pp4", 0) == 0;
    LayoutSpec spec;
    spec.parallel = {{"pipeline_model_parallel_size", four ? 4 : 2}, {"virtual_pipeline_model_parallel_size", 2}};
    spec.common = {{"model", {{"decoder", {{"num_layers", four ? 8 : 4}}}, {"vision", {{"num_layers", 3}, {"deepstack_layers", {0, 1, 2}}}}}}};
    spec.layout = four ? "pp4 cp1 ep1 etp1 dp1 vpp2 pp_layers:1,1,1,1,1,1,1,1" : "pp2 cp1 ep1 etp1 dp1 vpp2 pp_layers:1,1,1,1";
    spec.ranks = four ? 4 : 2;
    if (name == "pp4-vpp2-m8")
        spec.common["train"] = {{"global_batch_size", 8}};
    if (name == "pp2-vpp2dp2") {
        spec.common["train"] = {{"global_batch_size", 8}};
        spec.layout = "pp2 cp1 ep1 etp1 dp2 vpp2 pp_layers:1,1,1,1";
        spec.ranks = 4;
    }
    return spec;
}

// Mean over ranks of the median over steps 2.. of the "pipeline idle … (fraction F" lines in the
// ranks' logs of `runDir` (step 1 pays one-time allocations, unevenly over the stages; the median
// drops a step where the 2 cores were busy with something else); -1 when there are none.
double meanIdleFraction(const fs::path& runDir, int ranks)
{
    double sum = 0.0;
    int n = 0;
    for (int k = 0; k < ranks; ++k) {
        std::vector<double> fractions;
        std::istringstream log(test::readFile(runDir / ("rank" + std::to_string(k) + ".log")));
        for (std::string line; std::getline(log, line);) {
            const auto at = line.find(" pipeline idle "), frac = line.find("(fraction ");
            const auto stepAt = line.find(": step ");
            if (at == std::string::npos || frac == std::string::npos || stepAt == std::string::npos)
                continue;
            if (std::atoi(line.c_str() + stepAt + 7) >= 2)
                fractions.push_back(std::atof(line.c_str() + frac + 10));
        }
        if (fractions.empty())
            return -1.0;
        std::sort(fractions.begin(), fractions.end());
        sum += fractions[fractions.size() / 2];
        ++n;
    }
    return n > 0 ? sum / n : -1.0;
}

// The bubble: the same model and micro-batches under plain 1F1B (4 layers per stage) and
// interleaved (2 chunks of 2 layers per stage), P 2, M 4, 10 steps. Megatron's estimate of the
// idle share of the schedule falls from (P − 1) / (M + P − 1) = 0.2 to (P − 1) / (v·M + P − 1)
// ≈ 0.11 with balanced stages. Balanced here: text only (no vision encoder on stage 0) and a
// decoder wide enough (hidden 512) that compute, not the messages' fixed cost, fills the step
// (with sample-mock's own 128-wide layers and images the two shares were within the noise).
// Measured on 2 idle cores: 0.14 against 0.09 (median over steps, mean over ranks; three runs
// each within ±0.01). Only the order is checked; the numbers are printed.
void checkInterleavedBubble(const fs::path& dir)
{
    const json common = {{"data", {{"mock_image_size", 0}}},
                         {"model", {{"decoder", {{"num_layers", 8}, {"hidden_size", 512}, {"num_attention_heads", 16},
                                                 {"kv_channels", 32}, {"moe_ffn_hidden_size", 512}}}}}};
    double share[2] = {-1.0, -1.0};
    for (int v : {1, 2}) {
        const json parallel = {{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", v}};
        const std::string tag = "-bubble-vpp" + std::to_string(v);
        const fs::path config = writeConfig(dir, 10, parallel, tag, common);
        const fs::path runDir = dir / ("bubble-vpp" + std::to_string(v));
        const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", runDir.string(),
                                         "--nproc-per-node", "2", "--comm-timeout", "60"},
                                        (dir / (tag + ".log")).string(), 300);
        WB_CHECK_MSG(rc == 0, "vpp " << v << " rc " << rc << "\n" << test::readFile(runDir / "rank0.log"));
        share[v - 1] = meanIdleFraction(runDir, 2);
    }
    std::cout << "pipeline idle share of the schedule (P 2, M 4, median over steps 2-10, mean over ranks): plain 1F1B "
              << share[0] << ", interleaved (v 2) " << share[1] << "; Megatron's estimate for balanced stages 0.2 and "
              << 1.0 / 9.0 << std::endl;
    WB_CHECK_MSG(share[0] >= 0.0 && share[1] >= 0.0, "no pipeline idle lines in the ranks' logs");
    WB_CHECK_MSG(share[1] < share[0], "interleaved idles " << share[1] << " of the schedule, plain 1F1B " << share[0]);
}

// FSDP × TP memory (each rank's `per rank` line): a 1-step run of the same TP 2 × DP 2 layout
// without FSDP gives what each rank holds of its TP slices; under ZeRO-3 every trainable tensor
// (slices, replicated ones and, with ETP 2, expert slices) is sharded over the 2 DP ranks of its
// TP coordinate, so the gradient shards are half of that (plus padding of ≤ 1 value per tensor),
// the fp32 moments twice the shards, and the parameters held between layers less than the slices.
void checkTensorFsdpMemory(const fs::path& dir, const LayoutSpec& spec)
{
    json plain = spec.parallel;
    plain["use_megatron_fsdp"] = false;
    plain["data_parallel_sharding_strategy"] = "no_shard";
    json common = spec.common;
    common.merge_patch({{"train", {{"lr_warmup_iters", 0}}}});
    const fs::path config = writeConfig(dir, 1, plain, "-plain", common);
    const fs::path runDir = dir / "plain";
    const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", runDir.string(), "--nproc-per-node",
                                     std::to_string(spec.ranks), "--comm-timeout", "60"},
                                    (dir / "plain.log").string(), 300);
    WB_CHECK_MSG(rc == 0, "TP 2 × DP 2 without FSDP rc " << rc << "\n" << test::readFile(runDir / "rank0.log"));
    const double whole = mibAfter(test::readFile(dir / "single.log"), "per rank parameters ");
    for (int k = 0; k < spec.ranks; ++k) {
        const std::string name = "rank" + std::to_string(k) + ".log";
        const std::string ref = test::readFile(runDir / name), log = test::readFile(dir / "multi" / name);
        const double slices = mibAfter(ref, "per rank parameters ");
        const double held = mibAfter(log, "per rank parameters "), shards = mibAfter(log, "gradients "),
                     moments = mibAfter(log, "optimizer state ");
        WB_CHECK_MSG(slices > 0.0 && slices < 0.75 * whole, "rank " << k << " holds " << slices << " MiB of its TP slices, one rank "
                                                                    << whole << "\n" << ref);
        WB_CHECK_MSG(std::abs(shards - slices / 2) <= 0.02, "rank " << k << ": gradient shards " << shards << " MiB, TP slices "
                                                                     << slices << " MiB\n" << log);
        WB_CHECK_MSG(std::abs(moments - 2 * shards) <= 0.02, "rank " << k << ": optimizer state " << moments << " MiB\n" << log);
        WB_CHECK_MSG(held > shards && held < slices, "rank " << k << ": parameters " << held << " MiB\n" << log);
    }
}

// A layout against one rank (10 steps, also with bf16 moments). Tensor parallel layouts have the same tolerance as the
// sharded ones: the row-parallel partial sums and the sequence split reorder fp32 sums the same way.
void testLayout(const fs::path& dir, const std::string& name)
{
    const auto spec = layoutSpec(name);
    WB_CHECK_MSG(spec, "unknown layout " << name);
    if (!spec)
        return;
    testEqual(dir, spec->ranks, spec->steps, spec->parallel, spec->layout, spec->tolerance, spec->common);
    // Every rank reports what it holds (the sharding is visible in its log).
    const std::string log0 = test::readFile(dir / "multi" / "rank0.log");
    WB_CHECK_MSG(log0.find("per rank parameters") != std::string::npos, log0);
    if (name == "fsdp-bf16-moments") {
        // bf16 moments: 4 bytes per trainable value, as many as its fp32 parameter (nothing is
        // frozen here), and each of the 2 ranks holds half of them (their shards, in bf16).
        const std::string single = test::readFile(dir / "single.log");
        const double params = mibAfter(single, "per rank parameters "), optimizer = mibAfter(single, "optimizer state ");
        const double shard = mibAfter(log0, "optimizer state ");
        WB_CHECK_MSG(params > 0.0 && std::abs(optimizer - params) <= 0.02, single);
        WB_CHECK_MSG(std::abs(shard - optimizer / 2) <= 0.02 + optimizer * 0.01, "rank 0 holds " << shard << " MiB of " << optimizer);
    }
    if (name.rfind("tp2", 0) == 0)
        WB_CHECK_MSG(log0.find("tp2") != std::string::npos, log0);
    if (name == "fsdp-keep-gathered" || name == "fsdp-optim_grads_params") {
        // ZeRO-3 gathers each layer once per micro-batch when it stays gathered from forward to
        // backward, twice (forward, backward) when it is freed after forward.
        // "… FSDP optim_grads_params: G all-gathers of L layers in M micro-batches (reshard after forward: …)"
        const auto at = log0.rfind(" all-gathers of ");
        WB_CHECK_MSG(at != std::string::npos, log0);
        if (at != std::string::npos) {
            const double gathers = std::stod(log0.substr(log0.rfind(": ", at) + 2));
            const std::string rest = log0.substr(at + std::string(" all-gathers of ").size());
            const double layers = std::stod(rest);
            const double micro = std::stod(rest.substr(rest.find(" in ") + 4));
            const bool keep = name == "fsdp-keep-gathered";
            WB_CHECK_MSG(layers > 0 && micro > 0 &&
                             log0.find(keep ? "reshard after forward: no" : "reshard after forward: yes") != std::string::npos,
                         log0);
            // Kept: each layer once per micro-batch. Freed: again before its backward (the last
            // layer's backward may find its forward gather still there).
            WB_CHECK_MSG(keep ? gathers == layers * micro : gathers > 1.5 * layers * micro,
                         gathers << " all-gathers of " << layers << " layers in " << micro << " micro-batches");
        }
    }
    if (name == "fsdp-bf16-reduce") {
        WB_CHECK_MSG(log0.find("gradients reduce-scattered in bf16") != std::string::npos, log0);
        // The knob is real: bf16-rounded gradients move the grad norm by more than fp32 sums in
        // another order do (about 2e-6 on this model).
        const auto a = stepsOf(readMetrics(dir / "single")), b = stepsOf(readMetrics(dir / "multi"));
        double worst = 0.0;
        for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
            worst = std::max(worst, std::abs(a[i].value("grad_norm", 0.0) - b[i].value("grad_norm", 0.0)) /
                                        std::abs(a[i].value("grad_norm", 1.0)));
        std::cout << "bf16 reduction: largest relative grad-norm difference " << worst << std::endl;
        WB_CHECK_MSG(worst > 1e-5, "bf16 reduction moved the grad norm by only " << worst);
    }
    if (name == "tp2dp2-sp-fsdp-optim_grads_params")
        checkTensorFsdpMemory(dir, *spec);
    if (name == "tp2dp2-sp-fsdp-optim_grads") {
        // ZeRO-2 keeps only the fp32 gradient shard (4 bytes per value); bf16 moments are 2 × 2
        // bytes per shard value: the same bytes (fp32 moments would be twice as many).
        for (int k = 0; k < spec->ranks; ++k) {
            const std::string log = test::readFile(dir / "multi" / ("rank" + std::to_string(k) + ".log"));
            const double grads = mibAfter(log, "gradients "), optimizer = mibAfter(log, "optimizer state ");
            WB_CHECK_MSG(grads > 0.0 && std::abs(optimizer - grads) <= 0.01, "rank " << k << ": " << log);
        }
    }
    if (name.rfind("pp", 0) == 0 && name.find("dp") == std::string::npos && name.find("ep") == std::string::npos)
        checkStagesHoldTheModelOnce(dir, spec->ranks);
    if (name.rfind("tp2pp2", 0) == 0)
        checkTensorPipelineStages(dir, spec->ranks, 2);
    if (name == "pp2-vpp2") {
        // Megatron's chunk placement: stage s holds chunks s and s + P.
        WB_CHECK_MSG(log0.find("pp2 vpp2 stage 0: decoder layers [0, 1), [2, 3) + vision encoder") != std::string::npos, log0);
        const std::string log1 = test::readFile(dir / "multi" / "rank1.log");
        WB_CHECK_MSG(log1.find("pp2 vpp2 stage 1: decoder layers [1, 2), [3, 4) + final norm") != std::string::npos, log1);
        checkInterleavedBubble(dir);
    }
}

// Waits until `file` contains `needle` (e.g. a step of the metrics stream) or 120 s pass.
bool waitFor(const fs::path& file, const std::string& needle)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        if (test::readFile(file).find(needle) != std::string::npos)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

double secondsSince(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// `ranks` processes started the way torchrun starts them (WORLD_SIZE, RANK, MASTER_ADDR and a free
// MASTER_PORT in their environment); `rank(k)` gives rank k's command line and log file. The
// variables are removed from this process again before it returns.
std::vector<pid_t> spawnTorchrunRanks(
    int ranks, const std::function<std::pair<std::vector<std::string>, std::string>(int)>& rank)
{
    ::setenv("WORLD_SIZE", std::to_string(ranks).c_str(), 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", std::to_string(test::freeLoopbackPort()).c_str(), 1);
    std::vector<pid_t> pids;
    for (int k = 0; k < ranks; ++k) {
        ::setenv("RANK", std::to_string(k).c_str(), 1);
        const auto [args, log] = rank(k);
        pids.push_back(test::spawnProcess(args, log));
    }
    for (const char* name : {"WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "RANK"})
        ::unsetenv(name);
    return pids;
}

// `parallel`: e.g. PP 2, where rank 0 is then waiting in a send/recv of the pipeline, not in an
// allreduce, when its peer dies. The last of `ranks` ranks is killed; every other rank must exit 4
// within the timeout (with TP × PP on 4 ranks: its TP peer in a TP collective, the other stage's
// ranks in the pipeline's send/recv, directly or after their own peer gave up).
void testKillTorchrunStyle(const fs::path& dir, const json& parallel = json::object(), int ranks = 2)
{
    const fs::path config = writeConfig(dir, 100000, parallel, parallel.empty() ? "" : "-kill");
    const fs::path runDir = dir / "torchrun";
    constexpr double kTimeout = 10.0;
    const std::vector<pid_t> pids = spawnTorchrunRanks(ranks, [&](int k) {
        return std::make_pair(std::vector<std::string>{MOE_TRAIN_PATH, "--config", config.string(), "--run-dir",
                                                       runDir.string(), "--comm-timeout", std::to_string(kTimeout)},
                              (dir / ("torchrun" + std::to_string(k) + ".log")).string());
    });
    WB_CHECK_MSG(waitFor(runDir / "metrics.jsonl", "\"step\":3,"), test::readFile(dir / "torchrun0.log"));
    const int victim = ranks - 1;
    ::kill(pids[static_cast<size_t>(victim)], SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    for (int k = 0; k < victim; ++k) {
        const int rc = test::waitProcess(pids[static_cast<size_t>(k)], kTimeout + 20);
        const double took = secondsSince(killed);
        const std::string log = test::readFile(dir / ("torchrun" + std::to_string(k) + ".log"));
        WB_CHECK_MSG(rc == 4, "rank " << k << " rc " << rc << " after rank " << victim << " was killed\n" << log);
        WB_CHECK_MSG(took < kTimeout + 5, "rank " << k << " took " << took << " s to exit");
    }
    test::waitProcess(pids[static_cast<size_t>(victim)], 5);
    const json status = readStatus(runDir);
    WB_CHECK_MSG(status.value("status", "") == "comm_error" && status.value("exit_code", -1) == 4, status.dump());
    WB_CHECK_MSG(status.value("message", "").find("rank 0 of " + std::to_string(ranks)) != std::string::npos, status.dump());
}

pid_t rankPid(const fs::path& parentLog, int rank)
{
    const std::string needle = "rank " + std::to_string(rank) + " pid ";
    if (!waitFor(parentLog, needle))
        return -1;
    const std::string text = test::readFile(parentLog);
    return static_cast<pid_t>(std::atoi(text.c_str() + text.find(needle) + needle.size()));
}

// Starts 2 ranks through --nproc-per-node, sends `sig` to rank 1 after step 3; returns the parent's
// rc and how long after the signal the parent took to exit.
std::pair<int, double> launchAndHurtRank1(const fs::path& dir, const std::string& name, int sig, double timeout)
{
    const fs::path config = writeConfig(dir, 100000);
    const fs::path runDir = dir / name, log = dir / (name + ".log");
    const pid_t parent = test::spawnProcess({MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", runDir.string(),
                                             "--nproc-per-node", "2", "--comm-timeout", std::to_string(timeout)},
                                            log.string());
    const pid_t rank1 = rankPid(log, 1);
    WB_CHECK_MSG(rank1 > 0 && waitFor(runDir / "metrics.jsonl", "\"step\":3,"), test::readFile(log));
    if (rank1 > 0)
        ::kill(rank1, sig);
    const auto hurt = std::chrono::steady_clock::now();
    const int rc = test::waitProcess(parent, timeout + 60);
    return {rc, secondsSince(hurt)};
}

void testKillLauncher(const fs::path& dir)
{
    const auto [rc, took] = launchAndHurtRank1(dir, "launch-kill", SIGKILL, 10.0);
    WB_CHECK_MSG(rc == 1, "parent rc " << rc << "\n" << test::readFile(dir / "launch-kill.log"));
    WB_CHECK_MSG(took < 15.0, "parent took " << took << " s");
    const json status = readStatus(dir / "launch-kill");
    WB_CHECK_MSG(status.value("message", "").find("rank 1 was killed by signal 9") != std::string::npos, status.dump());
    WB_CHECK_MSG(test::readFile(dir / "launch-kill" / "rank0.log").find("comm_error (exit 4)") != std::string::npos,
                 test::readFile(dir / "launch-kill" / "rank0.log"));
}

void testHang(const fs::path& dir)
{
    constexpr double kTimeout = 3.0;
    const auto [rc, took] = launchAndHurtRank1(dir, "launch-hang", SIGSTOP, kTimeout);
    WB_CHECK_MSG(rc == 4, "parent rc " << rc << "\n" << test::readFile(dir / "launch-hang.log"));
    // rank 0: the timeout; the parent: + the timeout + 10 s grace, then SIGTERM and SIGCONT, so the
    // stopped rank ends at once (without the SIGCONT it would wait for the SIGKILL 10 s later).
    WB_CHECK_MSG(took < 2 * kTimeout + 10.0 + 5.0, "parent took " << took << " s");
    // Gloo's words: "Timed out waiting …" from the collective that timed out, or "Application
    // timeout caused pair closure" from one of the gradient buckets still in flight beside it
    // (overlap_grad_reduce): its pair was closed by that timeout.
    const json status = readStatus(dir / "launch-hang");
    const std::string message = status.value("message", "");
    WB_CHECK_MSG(status.value("status", "") == "comm_error" &&
                     (message.find("Timed out") != std::string::npos || message.find("timeout") != std::string::npos),
                 status.dump());
}

// A config `base` patched by `patch` that --validate on `ranks` ranks must refuse (exit 2) with
// `field` (the field and as much of the message as the case pins) in its output.
struct RefusedCase {
    const char* name;
    json patch;
    int ranks;
    const char* field;
};

void checkRefused(const fs::path& dir, const json& base, const std::vector<RefusedCase>& cases, const std::string& log)
{
    for (const RefusedCase& b : cases) {
        json c = base;
        c.merge_patch(b.patch);
        const fs::path path = dir / (std::string(b.name) + ".json");
        std::ofstream(path) << c.dump(2);
        const int rc = test::runProcess({MOE_TRAIN_PATH, "--validate", path.string(), "--nproc-per-node", std::to_string(b.ranks)},
                                        log, 60);
        const std::string text = test::readFile(log);
        WB_CHECK_MSG(rc == 2 && text.find(b.field) != std::string::npos, b.name << " rc " << rc << "\n" << text);
    }
}

// --validate of pipeline layouts: PP 2 (and PP 2 × DP 2, and PP 2 with 2 virtual stages) accepted;
// FSDP with PP, virtual stages the layers do not fill, virtual stages with micro-batches not a
// multiple of the stages, with an uneven first stage or on CUDA, fewer micro-batches than stages
// and a layer split that does not add up are rejected naming the field.
void testValidatePipeline(const fs::path& dir, const fs::path& config)
{
    const std::string log = (dir / "validate-pp.log").string();
    auto validate = [&](const json& c, int ranks, const std::string& name) {
        std::ofstream(dir / (name + ".json")) << c.dump(2);
        return test::runProcess({MOE_TRAIN_PATH, "--validate", (dir / (name + ".json")).string(), "--nproc-per-node",
                                 std::to_string(ranks)},
                                log, 60);
    };
    json pp = json::parse(test::readFile(config));
    pp["parallel"]["pipeline_model_parallel_size"] = 2;
    int rc = validate(pp, 2, "pp2");
    WB_CHECK_MSG(rc == 0, "pp2 rc " << rc << "\n" << test::readFile(log));
    rc = validate(pp, 4, "pp2dp2");
    WB_CHECK_MSG(rc == 0, "pp2 dp2 rc " << rc << "\n" << test::readFile(log));
    json vpp = pp;  // interleaved: 2 stages × 2 chunks of one layer, M = 4
    vpp.merge_patch({{"parallel", {{"virtual_pipeline_model_parallel_size", 2}}}, {"model", {{"decoder", {{"num_layers", 4}}}}}});
    rc = validate(vpp, 2, "pp2-vpp2");
    WB_CHECK_MSG(rc == 0, "pp2 vpp2 rc " << rc << "\n" << test::readFile(log));
    checkRefused(dir, pp, {
        {"pp-fsdp", {{"parallel", {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads_params"}}}}, 2,
         "parallel.use_megatron_fsdp: FSDP together with pipeline parallelism"},
        // 2 layers do not make 2 stages × 2 chunks.
        {"pp-vpp", {{"parallel", {{"virtual_pipeline_model_parallel_size", 2}}}}, 2, "parallel.virtual_pipeline_model_parallel_size"},
        // Megatron's rule: micro-batches a multiple of the pipeline size (5 on 2 stages).
        {"pp-vpp-micro", {{"parallel", {{"virtual_pipeline_model_parallel_size", 2}}}, {"model", {{"decoder", {{"num_layers", 4}}}}},
                          {"train", {{"global_batch_size", 5}}}}, 2,
         "train.global_batch_size: the interleaved schedule (virtual_pipeline_model_parallel_size 2) needs the micro-batches per "
         "step and data-parallel rank to be a multiple of pipeline_model_parallel_size 2; global_batch_size 5 / (micro_batch_size 1 × DP 1) gives 5"},
        {"pp-vpp-uneven", {{"parallel", {{"virtual_pipeline_model_parallel_size", 2}, {"num_layers_in_first_pipeline_stage", 2}}},
                           {"model", {{"decoder", {{"num_layers", 4}}}}}}, 2,
         "parallel.num_layers_in_first_pipeline_stage: uneven first/last stages"},
        {"pp-vpp-cuda", {{"parallel", {{"virtual_pipeline_model_parallel_size", 2}}}, {"model", {{"decoder", {{"num_layers", 4}}}}},
                         {"runtime", {{"device", "cuda"}}}}, 2,
         "the interleaved schedule on the CPU (Gloo) only"},
        {"pp-gbs", {{"train", {{"global_batch_size", 2}}}}, 4, "train.global_batch_size: 1F1B needs at least"},
        {"pp-split", {{"parallel", {{"num_layers_in_first_pipeline_stage", 3}}}}, 2, "do not split evenly"},
    }, log);
}

// --validate of tensor parallel layouts: TP 2 × EP 2 (ETP 2, SP) accepted on 4 ranks, TP with
// FSDP too; rejected, naming the field: SP with a seq_length TP does not divide, ETP other than
// 1 or TP. A checkpoint interval is accepted (each rank saves its slices). TP × PP (below).
void testValidateTensorParallel(const fs::path& dir, const fs::path& config)
{
    const std::string log = (dir / "validate-tp.log").string();
    auto validate = [&](const std::string& tag, const json& parallel, const json& train, int ranks) {
        json c = json::parse(test::readFile(config));
        for (const auto& [k, v] : parallel.items())
            c["parallel"][k] = v;
        for (const auto& [k, v] : train.items())
            c["train"][k] = v;
        const fs::path path = dir / ("tp-" + tag + ".json");
        std::ofstream(path) << c.dump(2);
        return test::runProcess({MOE_TRAIN_PATH, "--validate", path.string(), "--nproc-per-node", std::to_string(ranks)}, log, 60);
    };
    const json tp2 = {{"tensor_model_parallel_size", 2}, {"expert_model_parallel_size", 2},
                      {"expert_tensor_parallel_size", 2}, {"sequence_parallel", true}};
    int rc = validate("ok", tp2, json::object(), 4);
    WB_CHECK_MSG(rc == 0, "tp2 ep2 rc " << rc << "\n" << test::readFile(log));
    rc = validate("seq", tp2, {{"seq_length", 255}}, 4);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("train.seq_length: 255 tokens do not split") != std::string::npos,
                 test::readFile(log));
    rc = validate("etp", {{"tensor_model_parallel_size", 1}, {"expert_tensor_parallel_size", 2}}, json::object(), 2);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("parallel.expert_tensor_parallel_size") != std::string::npos,
                 test::readFile(log));
    // FSDP × TP: every strategy, with and without SP, ETP 1 and 2, with EP and a checkpoint
    // interval, accepted; ETP 4 under TP 2 + FSDP still rejected naming the field.
    for (const char* strategy : {"optim", "optim_grads", "optim_grads_params"})
        for (const bool sp : {false, true})
            for (const int etp : {1, 2}) {
                const json fsdp = {{"tensor_model_parallel_size", 2}, {"sequence_parallel", sp}, {"expert_tensor_parallel_size", etp},
                                   {"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", strategy}};
                rc = validate("fsdp", fsdp, json::object(), 4);
                WB_CHECK_MSG(rc == 0, "tp2 fsdp " << strategy << " sp " << sp << " etp " << etp << " rc " << rc << "\n"
                                                  << test::readFile(log));
            }
    json tp2ep2fsdp = tp2;
    tp2ep2fsdp["use_megatron_fsdp"] = true;
    tp2ep2fsdp["data_parallel_sharding_strategy"] = "optim_grads_params";
    rc = validate("fsdp-ep", tp2ep2fsdp, {{"checkpoint_interval", 5}}, 8);
    WB_CHECK_MSG(rc == 0, "tp2 ep2 dp4 fsdp rc " << rc << "\n" << test::readFile(log));
    tp2ep2fsdp["expert_tensor_parallel_size"] = 4;
    rc = validate("fsdp-etp", tp2ep2fsdp, json::object(), 8);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("parallel.expert_tensor_parallel_size: 4: moe-train runs ETP 1") != std::string::npos &&
                     test::readFile(log).find("use_megatron_fsdp") == std::string::npos,
                 test::readFile(log));
    // TP × PP: accepted (4 and 8 ranks, with SP and EP); 1F1B's micro-batch count is per DP rank,
    // and DP = world / (TP · PP): GBS 2 on TP 2 × PP 2 is 2 micro-batches (accepted), GBS 2 on 8
    // ranks (DP 2) is 1 (rejected naming the field). FSDP and ETP 4 (neither 1 nor TP) stay rejected.
    const json tp2pp2 = {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 2}, {"sequence_parallel", true}};
    rc = validate("pp", tp2pp2, {{"global_batch_size", 2}}, 4);
    WB_CHECK_MSG(rc == 0, "tp2 pp2 rc " << rc << "\n" << test::readFile(log));
    json tp2pp2ep2 = tp2pp2;
    tp2pp2ep2["expert_model_parallel_size"] = 2;
    tp2pp2ep2["expert_tensor_parallel_size"] = 2;
    rc = validate("pp-ep", tp2pp2ep2, {{"checkpoint_interval", 5}}, 8);
    WB_CHECK_MSG(rc == 0, "tp2 pp2 ep2 dp2 rc " << rc << "\n" << test::readFile(log));
    rc = validate("pp-gbs", tp2pp2, {{"global_batch_size", 2}}, 8);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("train.global_batch_size: 1F1B needs at least") != std::string::npos,
                 test::readFile(log));
    json tp2pp2fsdp = tp2pp2;
    tp2pp2fsdp["use_megatron_fsdp"] = true;
    tp2pp2fsdp["data_parallel_sharding_strategy"] = "optim_grads_params";
    rc = validate("pp-fsdp", tp2pp2fsdp, json::object(), 8);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("parallel.use_megatron_fsdp: FSDP together with pipeline parallelism (TP × PP × FSDP)") !=
                                std::string::npos,
                 test::readFile(log));
    json tp2pp2etp = tp2pp2;
    tp2pp2etp["expert_tensor_parallel_size"] = 4;
    rc = validate("pp-etp", tp2pp2etp, json::object(), 8);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("parallel.expert_tensor_parallel_size: 4: moe-train runs ETP 1") != std::string::npos,
                 test::readFile(log));
    rc = validate("ckpt", tp2, {{"checkpoint_interval", 5}}, 4);
    WB_CHECK_MSG(rc == 0, "tp2 ep2 with checkpoint_interval rc " << rc << "\n" << test::readFile(log));
}

// --validate of context parallel layouts (`cp`: CP 2 × EP 2 on the CPU, accepted on 4 ranks):
// rejected naming the field and the fix: on CUDA, with PP, with FSDP, and with SP when a CP
// rank's tokens per row do not split over TP.
void testValidateContextParallel(const fs::path& dir, const json& cp)
{
    checkRefused(dir, cp, {
        {"cp-cuda", {{"runtime", {{"device", "cuda"}}}}, 4,
         "parallel.context_parallel_size: 2: moe-train runs context parallelism on the CPU (Gloo) only"},
        {"cp-pp", {{"parallel", {{"pipeline_model_parallel_size", 2}}}}, 4,
         "parallel.context_parallel_size: 2 together with pipeline_model_parallel_size 2 is not supported"},
        {"cp-fsdp", {{"parallel", {{"use_megatron_fsdp", true}, {"data_parallel_sharding_strategy", "optim_grads_params"}}}}, 4,
         "parallel.use_megatron_fsdp: FSDP (optim_grads_params) together with context_parallel_size 2"},
        // 260 tokens: 130 per CP rank and row, which TP 4 does not divide.
        {"cp-sp", {{"parallel", {{"tensor_model_parallel_size", 4}, {"sequence_parallel", true}, {"expert_model_parallel_size", 1},
                                 {"expert_tensor_parallel_size", 1}}},
                   {"train", {{"seq_length", 260}}}}, 8,
         "train.seq_length: 260 tokens give each of context_parallel_size 2 ranks 130 per row"},
    }, (dir / "validate-cp.log").string());
}

// --validate for N ranks: DP, EP, TP, FSDP and CP are accepted; bad combinations are rejected
// with a message that names the field.
void testValidate(const fs::path& dir)
{
    const fs::path config = writeConfig(dir, kSteps);
    const std::string log = (dir / "validate.log").string();
    int rc = test::runProcess({MOE_TRAIN_PATH, "--validate", config.string(), "--nproc-per-node", "2"}, log, 60);
    WB_CHECK_MSG(rc == 0, "dp2 rc " << rc << "\n" << test::readFile(log));
    json tp = json::parse(test::readFile(config));
    tp["parallel"]["context_parallel_size"] = 2;
    tp["parallel"]["expert_model_parallel_size"] = 2;
    tp["train"]["global_batch_size"] = 4;
    std::ofstream(dir / "tp.json") << tp.dump(2);
    rc = test::runProcess({MOE_TRAIN_PATH, "--validate", (dir / "tp.json").string(), "--nproc-per-node", "4"}, log, 60);
    WB_CHECK_MSG(rc == 0, "cp2 ep2 dp2 rc " << rc << "\n" << test::readFile(log));  // CP runs on the CPU now
    testValidateContextParallel(dir, tp);
    // EP 2 × DP 2 with FSDP is accepted, with a checkpoint interval too (per-rank checkpoints);
    // EP 3 on 4 ranks is rejected naming the field.
    json fsdp = json::parse(test::readFile(config));
    fsdp["parallel"]["expert_model_parallel_size"] = 2;
    fsdp["parallel"]["use_megatron_fsdp"] = true;
    fsdp["parallel"]["data_parallel_sharding_strategy"] = "optim_grads_params";
    std::ofstream(dir / "fsdp.json") << fsdp.dump(2);
    rc = test::runProcess({MOE_TRAIN_PATH, "--validate", (dir / "fsdp.json").string(), "--nproc-per-node", "4"}, log, 60);
    WB_CHECK_MSG(rc == 0, "fsdp + ep2 rc " << rc << "\n" << test::readFile(log));
    fsdp["train"]["checkpoint_interval"] = 5;
    std::ofstream(dir / "fsdp-ckpt.json") << fsdp.dump(2);
    rc = test::runProcess({MOE_TRAIN_PATH, "--validate", (dir / "fsdp-ckpt.json").string(), "--nproc-per-node", "4"}, log, 60);
    WB_CHECK_MSG(rc == 0, "fsdp + ep2 with checkpoint_interval rc " << rc << "\n" << test::readFile(log));
    rc = test::runProcess({MOE_TRAIN_PATH, "--validate", (dir / "fsdp.json").string(), "--nproc-per-node", "3"}, log, 60);
    WB_CHECK_MSG(rc == 2 && test::readFile(log).find("parallel.expert_model_parallel_size") != std::string::npos,
                 test::readFile(log));
    testValidatePipeline(dir, config);
    testValidateTensorParallel(dir, config);
}

// Runs moe-train on `ranks` local ranks (the launcher), optionally with --resume; returns its exit code.
int launchRanks(const fs::path& dir, const fs::path& config, const fs::path& runDir, int ranks, bool resume,
                const std::string& logName)
{
    std::vector<std::string> args{MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", runDir.string(),
                                  "--nproc-per-node", std::to_string(ranks), "--comm-timeout", "60"};
    if (resume)
        args.push_back("--resume");
    return test::runProcess(args, (dir / logName).string(), 300);
}

// Every step record of `b` equals `a`'s: the same doubles (bit-identical runs print the same).
void checkSameSteps(const std::vector<json>& a, const std::vector<json>& b, size_t steps, const std::string& what)
{
    WB_CHECK_MSG(a.size() == steps && b.size() == steps, what << ": " << a.size() << " and " << b.size() << " step records");
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        WB_CHECK(a[i].value("step", 0) == b[i].value("step", -1));
        for (const char* field : {"loss", "aux_loss", "grad_norm", "lr"})
            WB_CHECK_MSG(a[i].value(field, 0.0) == b[i].value(field, 1.0),
                         what << ": step " << i + 1 << " " << field << " " << a[i].value(field, 0.0) << " vs "
                              << b[i].value(field, 1.0));
        WB_CHECK(a[i].value("text_tokens", -1) == b[i].value("text_tokens", -2));
    }
}

// The checkpoint in `runDir` is complete at `step`: layout.json names it, the layout and one file
// per rank, and the files are there.
void checkCheckpointLayout(const fs::path& runDir, int64_t step, int ranks, const std::string& layout)
{
    const json j = json::parse(test::readFile(runDir / "ckpt" / "layout.json"), nullptr, false);
    WB_CHECK_MSG(j.is_object() && j.value("step", int64_t{-1}) == step && j.value("world_size", 0) == ranks &&
                     j.value("layout", "").find(layout) != std::string::npos && j.contains("files") &&
                     j["files"].size() == static_cast<size_t>(ranks),
                 j.dump());
    for (int k = 0; k < ranks; ++k)
        WB_CHECK_MSG(fs::exists(runDir / "ckpt" / ("step" + std::to_string(step)) / ("rank" + std::to_string(k) + ".pt")),
                     "no checkpoint file of rank " << k << " at step " << step);
}

// Checkpoints of a sharded layout (docs/parallel.md "Checkpoints and --resume"): 6 steps
// uninterrupted against 3 steps saved by checkpoint_interval 3 and resumed to 6 — all six step
// records bit-identical (each rank runs the same kernels on the same data in both runs, and Gloo's
// reductions are deterministic). The LR decay is constant so that train_iters (3, then 6) does not
// change the schedule. Also: resuming with another number of ranks exits 2 naming both layouts and
// the fix; files of a save that never completed (no layout.json naming them) are ignored, and a
// checkpoint without its layout.json is not used (the run starts at step 0).
void testResume(const fs::path& dir, const std::string& name)
{
    const auto spec = layoutSpec(name);
    WB_CHECK_MSG(spec, "unknown layout " << name);
    if (!spec)
        return;
    const int ranks = spec->ranks;
    json common = spec->common;
    common.merge_patch({{"train", {{"lr_decay_style", "constant"}}}});
    json first = common;
    first.merge_patch({{"train", {{"checkpoint_interval", 3}}}});
    const fs::path wholeConfig = writeConfig(dir, 6, spec->parallel, "-whole", common);
    const fs::path firstConfig = writeConfig(dir, 3, spec->parallel, "-first", first);
    const fs::path whole = dir / "whole", parts = dir / "parts";
    int rc = launchRanks(dir, wholeConfig, whole, ranks, false, "whole.log");
    WB_CHECK_MSG(rc == 0, "uninterrupted run rc " << rc << "\n" << test::readFile(whole / "rank0.log"));
    rc = launchRanks(dir, firstConfig, parts, ranks, false, "first.log");
    WB_CHECK_MSG(rc == 0, "first 3 steps rc " << rc << "\n" << test::readFile(parts / "rank0.log"));
    checkCheckpointLayout(parts, 3, ranks, spec->layout);
    // The refusal of another rank count and the ignored incomplete saves are the checkpoint's own
    // logic (layout.json, the commit), the same for every layout: checked on one sharded and one
    // pipeline layout. Each check is a launch of all ranks, and CI's two cores run 7 of these tests.
    const bool checkpointLogic = name == "fsdp-optim_grads_params" || name == "pp2";
    if (!checkpointLogic) {
        rc = launchRanks(dir, wholeConfig, parts, ranks, true, "resume.log");
        WB_CHECK_MSG(rc == 0, "resume rc " << rc << "\n" << test::readFile(parts / "rank0.log"));
        WB_CHECK(test::readFile(parts / "metrics.jsonl").find("resumed from") != std::string::npos);
        checkSameSteps(stepsOf(readMetrics(whole)), stepsOf(readMetrics(parts)), 6, name + " saved at 3, resumed to 6");
        std::cout << name << ": saved at step 3 on " << ranks << " ranks, resumed to 6: all 6 steps bit-identical" << std::endl;
        return;
    }

    // Another number of ranks: exit 2 before any step, naming both layouts and the fix. Half as
    // many ranks where the model-parallel part (TP · PP) still fits, else twice as many.
    const int modelParallel = spec->parallel.value("tensor_model_parallel_size", 1) *
                              spec->parallel.value("pipeline_model_parallel_size", 1);
    const int other = ranks == 4 && modelParallel < 4 ? 2 : 2 * ranks;
    rc = launchRanks(dir, wholeConfig, parts, other, true, "other.log");
    const std::string message = readStatus(parts).value("message", "");
    WB_CHECK_MSG(rc == 2, "resume on " << other << " ranks rc " << rc << "\n" << test::readFile(dir / "other.log"));
    WB_CHECK_MSG(message.find("written by " + std::to_string(ranks) + " ranks") != std::string::npos &&
                     message.find("this run is " + std::to_string(other) + " ranks") != std::string::npos &&
                     message.find("--nproc-per-node " + std::to_string(ranks)) != std::string::npos,
                 message);

    // A later save that never completed: step 6 files that no layout.json names must be ignored.
    fs::create_directories(parts / "ckpt" / "step6");
    fs::copy_file(parts / "ckpt" / "step3" / "rank0.pt", parts / "ckpt" / "step6" / "rank0.pt");
    rc = launchRanks(dir, wholeConfig, parts, ranks, true, "resume.log");
    WB_CHECK_MSG(rc == 0, "resume rc " << rc << "\n" << test::readFile(parts / "rank0.log"));
    WB_CHECK(test::readFile(parts / "metrics.jsonl").find("resumed from") != std::string::npos);
    checkSameSteps(stepsOf(readMetrics(whole)), stepsOf(readMetrics(parts)), 6, name + " saved at 3, resumed to 6");

    // Rank files without layout.json (a crash before rank 0 committed the save): not used.
    const fs::path half = dir / "half";
    fs::create_directories(half / "ckpt");
    fs::copy(parts / "ckpt" / "step3", half / "ckpt" / "step3", fs::copy_options::recursive);
    rc = launchRanks(dir, firstConfig, half, ranks, true, "half.log");
    WB_CHECK_MSG(rc == 0, "resume without layout.json rc " << rc << "\n" << test::readFile(half / "rank0.log"));
    WB_CHECK(test::readFile(half / "metrics.jsonl").find("no complete checkpoint") != std::string::npos);
    const auto wholeSteps = stepsOf(readMetrics(whole));
    checkSameSteps({wholeSteps.begin(), wholeSteps.begin() + std::min<size_t>(3, wholeSteps.size())},
                   stepsOf(readMetrics(half)), 3, name + " without layout.json: starts at step 1");
    std::cout << name << ": saved at step 3 on " << ranks << " ranks, resumed to 6: all 6 steps bit-identical" << std::endl;
}

// The gradient-reduction counters of a rank's last summary line (GradientReducer::summary).
struct ReducerCounts {
    long long buckets = -1, steps = 0, inBackward = 0, after = 0, again = 0, zeroFilled = 0, undefined = 0;
    long long finishOnly = -1, copiedIn = -1;
    double bufferMiB = 0.0;
};

ReducerCounts reducerCounts(const std::string& log)
{
    ReducerCounts c;
    const size_t at = log.rfind("gradient reduction overlapped with backward: ");
    if (at == std::string::npos)
        return c;
    const std::string line = log.substr(at, log.find('\n', at) - at);
    auto before = [&](const std::string& key) {
        const size_t k = line.find(key);
        if (k == std::string::npos)
            return -1LL;
        size_t b = k;
        while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1])))
            --b;
        return std::atoll(line.c_str() + b);
    };
    c.buckets = before(" buckets per step");
    c.steps = std::atoll(line.c_str() + line.find("after ") + 6);
    c.inBackward = before(" launched during backward");
    c.after = before(" after it");
    c.again = before(" reduced again");
    c.zeroFilled = before(" gradients zero-filled");
    c.undefined = before(" undefined on every rank");
    c.finishOnly = before(" finish-only");
    c.copiedIn = before(" copied in");
    if (const size_t v = line.find("views of "); v != std::string::npos)
        c.bufferMiB = std::atof(line.c_str() + v + 9);
    return c;
}

// Overlapped gradient reduction (parallel.overlap_grad_reduce, docs/parallel.md): layouts whose
// gradients go through the data-parallel reduction, with 0.05 MiB buckets (≈ 20 per step
// instead of 1) so that the hooks, the bucket order and the per-group lanes are exercised:
//  - dp2: DP 2 with GBS 4, MBS 1: two micro-batches per rank, only the last one's backward reduces;
//  - ep2dp2: dense over 4 ranks, experts over their EDP pair (divided by 4);
//  - tp2dp2-sp: TP 2 × DP 2 + SP: the partial (sequence-parallel) gradients deferred until
//    summed over TP, dense and expert slices over the DP pair;
//  - pp2dp2: the last 1F1B backward of each stage reduces over the stage's DP pair;
//  - cp2ep2: CP 2 with EP 2 over the same two ranks: dense gradients summed over the CP pair and
//    divided by DP 1, experts over their EDP group of one;
//  - dp2-recompute-frozen: full recompute (each layer's forward runs again inside backward and
//    its parameters accumulate in that inner backward) with a frozen vision encoder;
//  - ep2dp2-missing: text only, 16 experts, top-1, 8-token rows: some EP rank gets no token for
//    its experts (their gradients are zero-filled there) and the vision tower's gradients exist
//    on no rank (they stay undefined) — both counted in the ranks' logs and asserted. (Before
//    expertsForward kept a zero-row result in the graph, this run hung in EP's all-to-all.)
// Each must reproduce the single rank (testEqual's tolerance) and the synchronous path
// (overlap_grad_reduce false): bit-identical where every reduction group has 2 ranks (a + b is
// exact in either order); over 4 ranks Gloo's ring sums each element in an order that depends on
// its position in the bucket, which differs between the two paths' buckets (a shifted layout of
// the same values changes ~0.25 % of the sums in the last bit), so there 1e-5: observed 2.2e-7
// (ep2dp2) and 7.3e-7 (ep2dp2-missing, whose 8-token rows train less smoothly) over 20 steps,
// where a bucket not averaged moves the grad norm by > 1e-3.
// Every rank's log must show more than one bucket, buckets launched inside backward (a broken
// hook launches everything after it), none reduced again or finish-only, and the gradients as
// views of the buffers all along: none copied in (a zero_grad that drops the views without
// GradientReducer::zeroGradients() after it copies every gradient in, every step).
void testOverlap(const fs::path& dir, const std::string& name)
{
    ::setenv("WB_GRAD_BUCKET_MB", "0.05", 1);
    LayoutSpec spec;
    bool exact = true;
    const json fullRecompute = {{"granularity", "full"}, {"method", "uniform"}, {"recompute_num_layers", 1}};
    if (name == "dp2") {
        spec.ranks = 2;
        spec.layout = "dp2";
    } else if (name == "dp2-recompute-frozen") {
        spec.ranks = 2;
        spec.layout = "dp2";
        spec.common = {{"recompute", fullRecompute}, {"model", {{"freeze_vision_model", true}}}};
    } else if (name == "ep2dp2-missing") {
        spec.parallel = {{"expert_model_parallel_size", 2}};
        spec.layout = "ep2 etp1 dp4";
        spec.common = {{"data", {{"mock_image_size", 0}, {"caption_max_tokens", 3}}},
                       {"train", {{"seq_length", 8}}},
                       {"model", {{"decoder", {{"num_moe_experts", 16}, {"moe_router_topk", 1}}}}}};
        exact = false;
    } else if (auto known = layoutSpec(name);
               known && (name == "ep2dp2" || name == "tp2dp2-sp" || name == "pp2dp2" || name == "cp2ep2")) {
        spec = *known;
        exact = name != "ep2dp2";
    } else {
        WB_CHECK_MSG(false, "unknown overlap layout " << name);
        return;
    }
    json on = spec.parallel, off = spec.parallel;
    on["overlap_grad_reduce"] = true;
    off["overlap_grad_reduce"] = false;
    testEqual(dir, spec.ranks, spec.steps, on, spec.layout, spec.tolerance, spec.common);

    const fs::path offConfig = writeConfig(dir, spec.steps, off, "-off", spec.common);
    const int rc = launchRanks(dir, offConfig, dir / "off", spec.ranks, false, "off.log");
    WB_CHECK_MSG(rc == 0, "overlap off rc " << rc << "\n" << test::readFile(dir / "off" / "rank0.log"));
    const auto overlapped = stepsOf(readMetrics(dir / "multi")), synchronous = stepsOf(readMetrics(dir / "off"));
    double worst = 0.0;
    for (size_t i = 0; i < std::min(overlapped.size(), synchronous.size()); ++i)
        for (const char* field : {"loss", "grad_norm"}) {
            const double a = synchronous[i].value(field, 0.0), b = overlapped[i].value(field, 1.0);
            worst = std::max(worst, std::abs(a - b) / std::abs(a));
        }
    std::cout << name << ": overlap on vs off, largest relative difference in loss and grad norm " << worst << std::endl;
    if (exact) {
        checkSameSteps(synchronous, overlapped, static_cast<size_t>(spec.steps), name + ": overlap on vs off");
    } else {
        WB_CHECK(overlapped.size() == synchronous.size());
        for (size_t i = 0; i < std::min(overlapped.size(), synchronous.size()); ++i)
            for (const char* field : {"loss", "grad_norm"}) {
                const double a = synchronous[i].value(field, 0.0), b = overlapped[i].value(field, 1.0);
                WB_CHECK_MSG(std::abs(a - b) <= 1e-5 * std::abs(a), name << " step " << i + 1 << " " << field << ": " << a
                                                                           << " without overlap, " << b << " with");
            }
    }
    long long zeroFilled = 0, undefined = 0;
    for (int k = 0; k < spec.ranks; ++k) {
        const std::string log = test::readFile(dir / "multi" / ("rank" + std::to_string(k) + ".log"));
        const ReducerCounts c = reducerCounts(log);
        WB_CHECK_MSG(c.buckets > 1 && c.steps == spec.steps && c.inBackward > 0 && c.again == 0 &&
                         c.inBackward + c.after == c.buckets * c.steps && c.finishOnly == 0 && c.copiedIn == 0 &&
                         c.bufferMiB > 0.0,
                     "rank " << k << ": " << log);
        WB_CHECK_MSG(test::readFile(dir / "off" / ("rank" + std::to_string(k) + ".log")).find("gradient reduction") ==
                         std::string::npos,
                     "rank " << k << " reduced with overlap off");
        zeroFilled += c.zeroFilled;
        undefined += c.undefined;
        std::cout << name << " rank " << k << ": " << c.buckets << " buckets per step, " << c.inBackward
                  << " launched during backward, " << c.after << " after it; " << c.zeroFilled << " zero-filled, "
                  << c.undefined << " undefined everywhere; gradients are views of " << c.bufferMiB
                  << " MiB of buffers" << std::endl;
    }
    if (name == "ep2dp2-missing")
        WB_CHECK_MSG(zeroFilled > 0 && undefined > 0, "no expert without tokens (" << zeroFilled
                                                        << " zero-filled) or no gradient undefined everywhere (" << undefined << ")");
    ::unsetenv("WB_GRAD_BUCKET_MB");
}

// SIGTERM to the launcher of a pipeline-parallel run: the stop is agreed at a step's end, every
// rank saves its part and exits 5; the resumed run's step records equal an uninterrupted run's.
void testResumeAfterSignal(const fs::path& dir, const std::string& name)
{
    const auto spec = layoutSpec(name);
    WB_CHECK_MSG(spec, "unknown layout " << name);
    if (!spec)
        return;
    constexpr int kIters = 8;
    const fs::path config = writeConfig(dir, kIters, spec->parallel, "-signal", spec->common);
    const fs::path whole = dir / "whole", parts = dir / "parts";
    int rc = launchRanks(dir, config, whole, spec->ranks, false, "whole.log");
    WB_CHECK_MSG(rc == 0, "uninterrupted run rc " << rc << "\n" << test::readFile(whole / "rank0.log"));
    const pid_t pid = test::spawnProcess({MOE_TRAIN_PATH, "--config", config.string(), "--run-dir", parts.string(),
                                          "--nproc-per-node", std::to_string(spec->ranks), "--comm-timeout", "60"},
                                         (dir / "parts.log").string());
    WB_CHECK(waitFor(parts / "metrics.jsonl", "\"type\":\"step\",\"step\":2,"));
    ::kill(pid, SIGTERM);
    rc = test::waitProcess(pid, 120);
    const int64_t stoppedAt = readStatus(parts).value("step", int64_t{0});
    WB_CHECK_MSG(rc == 5 && stoppedAt >= 2 && stoppedAt < kIters,
                 "rc " << rc << " at step " << stoppedAt << "\n" << test::readFile(dir / "parts.log"));
    checkCheckpointLayout(parts, stoppedAt, spec->ranks, spec->layout);
    rc = launchRanks(dir, config, parts, spec->ranks, true, "resume.log");
    WB_CHECK_MSG(rc == 0, "resume rc " << rc << "\n" << test::readFile(parts / "rank0.log"));
    checkSameSteps(stepsOf(readMetrics(whole)), stepsOf(readMetrics(parts)), kIters,
                   name + " stopped at " + std::to_string(stoppedAt));
    // Two nodes that do not share the run directory (ranks started torchrun-style with their own
    // --run-dir; rank 1's copy has no layout.json): both exit 2 saying so, none waits for the other.
    const fs::path node1 = dir / "node1";
    fs::create_directories(node1 / "ckpt");
    fs::copy(parts / "ckpt" / ("step" + std::to_string(stoppedAt)), node1 / "ckpt" / ("step" + std::to_string(stoppedAt)),
             fs::copy_options::recursive);
    const std::vector<pid_t> pids = spawnTorchrunRanks(2, [&](int k) {
        return std::make_pair(std::vector<std::string>{MOE_TRAIN_PATH, "--config", config.string(), "--run-dir",
                                                       (k == 0 ? parts : node1).string(), "--comm-timeout", "60",
                                                       "--resume"},
                              (dir / ("node" + std::to_string(k) + ".log")).string());
    });
    for (int k = 0; k < 2; ++k) {
        rc = test::waitProcess(pids[static_cast<size_t>(k)], 120);
        const std::string log = test::readFile(dir / ("node" + std::to_string(k) + ".log"));
        WB_CHECK_MSG(rc == 2 && log.find("the ranks see different checkpoints") != std::string::npos,
                     "rank " << k << " rc " << rc << "\n" << log);
    }
    std::cout << name << ": stopped by SIGTERM at step " << stoppedAt << ", resumed to " << kIters
              << ": all steps bit-identical" << std::endl;
}
}  // namespace

int main(int argc, char** argv)
{
    const std::string which = argc > 1 ? argv[1] : "equal";
    const fs::path dir = test::makeTempDir("wb-runtime-parallel");
    if (which == "equal") {
        testEqual(dir, argc > 2 ? std::atoi(argv[2]) : 2);
    } else if (which == "layout" && argc > 2) {
        testLayout(dir, argv[2]);
    } else if (which == "resume" && argc > 2) {
        testResume(dir, argv[2]);
    } else if (which == "overlap" && argc > 2) {
        testOverlap(dir, argv[2]);
    } else if (which == "resume-signal" && argc > 2) {
        testResumeAfterSignal(dir, argv[2]);
    } else if (which == "kill") {
        testKillTorchrunStyle(dir);
        testKillLauncher(dir);
    } else if (which == "kill-pp") {
        testKillTorchrunStyle(dir, {{"pipeline_model_parallel_size", 2}});
    } else if (which == "kill-tp2pp2") {
        testKillTorchrunStyle(dir, tensorPipelineSpec("tp2pp2").parallel, 4);
    } else if (which == "hang") {
        testHang(dir);
    } else if (which == "validate") {
        testValidate(dir);
    } else {
        std::cerr << "usage: test_runtime_parallel equal N | layout NAME | overlap NAME | resume NAME | resume-signal NAME | kill | kill-pp | kill-tp2pp2 | hang | validate\n";
        return 2;
    }
    if (test::failureCount() == 0)
        fs::remove_all(dir);
    else
        std::cerr << "kept " << dir << " for inspection\n";
    return test::checkExitCode(("test_runtime_parallel " + which).c_str());
}
