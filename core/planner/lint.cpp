// Lint rules. Two kinds: (1) RunConfig's own consistency checks (validateRunConfig, validateLayout),
// mapped to rule ids so that one rule has one implementation; (2) rules only the planner can check,
// because they need the hardware, the model family or options RunConfig does not carry.
// Every message starts with the rule's source so the user can look it up.
#include "core/planner/lint.h"

#include "core/text_format.h"

#include <algorithm>

namespace wb::core::planner {
namespace {

bool has(const std::string& text, std::string_view part)
{
    return text.find(part) != std::string::npos;
}

std::string str(long v) { return std::to_string(v); }

struct ProblemRule {
    const char* path;     ///< exact ConfigProblem path
    const char* keyword;  ///< substring of the message ("" = any)
    const char* rule;
    const char* source;
};

// RunConfig problem → rule id. Order matters where a path carries several rules.
const ProblemRule kProblemRules[] = {
    {"parallel", "TP × PP × CP", "world-divisible-by-tp-pp-cp", "megatron-bridge.md §3"},
    {"parallel.expert_model_parallel_size", "PP × EP × ETP", "world-divisible-by-pp-ep-etp", "megatron-bridge.md §3"},
    {"parallel.expert_model_parallel_size", "num_moe_experts", "ep-divides-experts", "megatron-bridge.md §3"},
    {"parallel.tensor_model_parallel_size", "", "tp-divides-heads", "Megatron-Core attention"},
    {"parallel.sequence_parallel", "", "sp-needs-tp", "megatron-bridge.md §3"},
    {"parallel.context_parallel_size", "", "cp-divides-seq", "megatron-bridge.md §3"},
    {"parallel.num_layers_in_first_pipeline_stage", "", "uneven-stages-need-pp", "megatron-bridge.md §2"},
    {"parallel.pipeline_model_parallel_size", "", "pp-splits-layers", "megatron-bridge.md §2"},
    {"parallel.virtual_pipeline_model_parallel_size", "", "vpp-divides-stage-layers", "megatron-bridge.md §3"},
    {"parallel.data_parallel_sharding_strategy", "", "fsdp-strategy-needs-fsdp", "megatron-bridge.md §2"},
    {"parallel.moe_flex_dispatcher_backend", "does nothing", "flex-backend-needs-flex-dispatcher", "megatron-bridge.md §6"},
    {"parallel.moe_flex_dispatcher_backend", "needs a backend", "flex-dispatcher-needs-backend", "megatron-bridge.md §2"},
    {"train.global_batch_size", "", "gbs-divisible-by-mbs-dp", "Megatron-Core microbatch calculator"},
    {"recompute.modules", "", "recompute-modules-selective-only", "megatron-bridge.md §2"},
    {"recompute.recompute_num_layers", "", "full-recompute-num-layers", "megatron-bridge.md §2"},
    {"cuda_graph.scope", "without a CUDA-graph", "cuda-graph-scope-needs-impl", "megatron-bridge.md §2"},
    {"cuda_graph.scope", "\"mlp\"", "cuda-graph-mlp-scope-dense-only", "megatron-bridge.md §6"},
    {"cuda_graph.scope", "mutually exclusive", "cuda-graph-moe-and-moe-router-exclusive", "megatron-bridge.md §6"},
    {"cuda_graph.scope", "moe_preprocess", "cuda-graph-moe-preprocess-needs-router", "megatron-bridge.md §6"},
    {"cuda_graph.impl", "full recompute", "full-recompute-needs-full-iteration-graph", "megatron-bridge.md §6"},
};

LintFinding fromProblem(const ConfigProblem& p)
{
    for (const ProblemRule& r : kProblemRules)
        if (p.path == r.path && (r.keyword[0] == '\0' || has(p.message, r.keyword)))
            return {r.rule, r.source, LintSeverity::Error, p.path, p.message, p.fix};
    return {"config-consistency", "core/run_config_validate.cpp", LintSeverity::Error, p.path, p.message, p.fix};
}

// Problems that are not about the layout (data, learning rate, ...) are not the planner's business.
bool layoutRelevant(const ConfigProblem& p)
{
    return p.path.rfind("parallel", 0) == 0 || p.path.rfind("recompute", 0) == 0 || p.path.rfind("cuda_graph", 0) == 0 ||
           p.path.rfind("model", 0) == 0 || p.path == "train.global_batch_size";
}

using Out = std::vector<LintFinding>;

void add(Out& out, const char* rule, const char* source, LintSeverity severity, const char* field, std::string message,
         std::string fix)
{
    out.push_back({rule, source, severity, field, std::move(message), std::move(fix)});
}

void sizeRules(const Layout& l, const ModelConfig& m, Out& out)
{
    const int minGpus = minimumGpus(l);
    if (l.worldSize < minGpus)
        add(out, "minimum-gpus", "megatron-bridge.md §3", LintSeverity::Error, "parallel",
            "minimum GPUs = PP·max(TP·CP, EP·ETP) = " + str(minGpus) + " > world size " + str(l.worldSize),
            "use at least " + str(minGpus) + " GPUs, or shrink PP, EP or ETP");
    if (m.vision.numLayers > 0 && m.vision.numAttentionHeads % l.tp != 0)
        add(out, "tp-divides-vision-heads", "Megatron-Bridge Qwen3-VL vision model", LintSeverity::Error,
            "parallel.tensor_model_parallel_size",
            "TP " + str(l.tp) + " does not divide the vision encoder's " + str(m.vision.numAttentionHeads) + " heads",
            "use a TP that divides both decoder and vision head counts");
    if (l.tp > 1 && !l.sequenceParallel)
        add(out, "qwen3-vl-forces-sequence-parallel", "megatron-bridge.md §2", LintSeverity::Warning,
            "parallel.sequence_parallel", "Qwen3-VL forces sequence_parallel=True when TP>1; this layout has it off",
            "set sequence_parallel true (the memory model assumes what Bridge will actually run)");
    const bool vppReported = std::any_of(out.begin(), out.end(), [](const LintFinding& f) { return f.rule == "vpp-divides-stage-layers"; });
    if (!vppReported && l.pp > 1 && !layersPerStage(l, m.decoder.numLayers).empty() && l.vpp > 1) {
        for (int layers : layersPerStage(l, m.decoder.numLayers))
            if (layers % l.vpp != 0) {
                add(out, "vpp-divides-stage-layers", "megatron-bridge.md §3", LintSeverity::Error,
                    "parallel.virtual_pipeline_model_parallel_size",
                    "VPP " + str(l.vpp) + " does not divide a stage of " + str(layers) + " layers (uneven first/last stages too)",
                    "choose first/last stage sizes and VPP so every stage splits into VPP chunks");
                break;
            }
    }
}

void cudaGraphRules(const Layout& l, Out& out)
{
    const auto& scope = l.cudaGraphScope;
    if (contains(scope, "attn"))
        add(out, "cuda-graph-attn-scope-qwen3-vl", "megatron-bridge.md §6", LintSeverity::Error, "cuda_graph.scope",
            "\"attn\" capture is incompatible with Bridge's Qwen3-VL model (its perf code forces it off)",
            "use \"moe_router\", \"moe_preprocess\"");
    if (contains(scope, "moe"))
        add(out, "cuda-graph-moe-scope-drop-and-pad-only", "megatron-bridge.md §6", LintSeverity::Error, "cuda_graph.scope",
            "\"moe\" scope is only for drop-and-pad MoE; Qwen3-VL routes dropless",
            "use \"moe_router\", \"moe_preprocess\"");
}

void recomputeRules(const Layout& l, Out& out)
{
    const auto& mods = l.recomputeModules;
    if (l.recomputeGranularity != "selective")
        return;
    if (contains(mods, "moe") && l.overlapMoeExpertParallelComm)
        add(out, "moe-recompute-vs-ep-overlap", "megatron-bridge.md §6", LintSeverity::Error, "recompute.modules",
            "\"moe\" recompute is incompatible with EP communication overlap",
            "drop \"moe\" from recompute.modules (try \"moe_act\"), or turn off overlap_moe_expert_parallel_comm");
    if (contains(mods, "moe") && l.cudaGraphImpl == "transformer_engine" && contains(l.cudaGraphScope, "moe_router"))
        add(out, "moe-recompute-vs-te-router-graph", "megatron-bridge.md §6", LintSeverity::Error, "recompute.modules",
            "\"moe\" recompute is incompatible with a Transformer Engine \"moe_router\" CUDA graph",
            "drop \"moe\" from recompute.modules (try \"moe_act\"), or drop the moe_router graph scope");
    if (contains(mods, "mlp"))
        add(out, "mlp-recompute-noop-on-moe", "megatron-bridge.md §6", LintSeverity::Warning, "recompute.modules",
            "\"mlp\" recompute is a no-op on MoE layers (every Qwen3-VL decoder layer is MoE)",
            "use \"moe_act\" or \"moe\" to save expert activations");
}

void overlapRules(const Layout& l, Out& out)
{
    if (!l.overlapMoeExpertParallelComm)
        return;
    if (l.ep <= 1)
        add(out, "ep-overlap-needs-ep", "megatron-bridge.md §6", LintSeverity::Error, "comm_overlap.overlap_moe_expert_parallel_comm",
            "EP communication overlap needs EP > 1", "turn the overlap off, or raise EP");
    if (l.dispatcherType != "alltoall" && l.dispatcherType != "flex")
        add(out, "ep-overlap-needs-alltoall-or-flex", "megatron-bridge.md §6", LintSeverity::Error,
            "parallel.moe_token_dispatcher_type", "EP communication overlap needs the alltoall or flex dispatcher",
            "set moe_token_dispatcher_type \"alltoall\" or \"flex\"");
    if (l.moeSharedExpertOverlap)
        add(out, "ep-overlap-vs-shared-expert-overlap", "megatron-bridge.md §6", LintSeverity::Error,
            "model.moe_shared_expert_overlap", "EP communication overlap needs moe_shared_expert_overlap=False",
            "set moe_shared_expert_overlap false");
    if (l.pp > 1 && l.vpp <= 1)
        add(out, "ep-overlap-needs-vpp", "megatron-bridge.md §6", LintSeverity::Error,
            "parallel.virtual_pipeline_model_parallel_size", "EP communication overlap with PP>1 needs virtual pipeline stages",
            "set virtual_pipeline_model_parallel_size > 1, or PP 1");
    if (l.cudaGraphImpl != "none")
        add(out, "env-cuda-device-max-connections", "megatron-bridge.md §6", LintSeverity::Note, "env_vars",
            "EP overlap with CUDA graphs needs CUDA_DEVICE_MAX_CONNECTIONS=32",
            "the generators set it; keep it if you write the environment by hand");
}

void fsdpRules(const Layout& l, Out& out)
{
    if (!l.useMegatronFsdp)
        return;
    add(out, "fsdp-needs-fsdp-dtensor-checkpoints", "megatron-bridge.md §6", LintSeverity::Note, "checkpoint.ckpt_format",
        "Megatron FSDP needs checkpoint.ckpt_format=\"fsdp_dtensor\" and cannot be combined with dist.use_torch_fsdp2",
        "the generators write ckpt_format=fsdp_dtensor and leave use_torch_fsdp2 off");
    if (l.fsdpStrategy == "no_shard")
        add(out, "fsdp-no-shard", "megatron-bridge.md §2", LintSeverity::Warning, "parallel.data_parallel_sharding_strategy",
            "Megatron FSDP with strategy \"no_shard\" shards nothing (plain DDP with FSDP's overheads)",
            "use \"optim_grads_params\" (or \"optim_grads\")");
}

// Megatron-Core OptimizerConfig.__post_init__: "--use-precision-aware-optimizer only supported
// with distributed optimizer". Megatron FSDP always runs the distributed optimizer (Bridge's
// config.py switches it on), so only plain DDP without it is refused.
void optimizerRules(const Layout& l, bool bf16Moments, Out& out)
{
    if (bf16Moments && !l.useMegatronFsdp && !l.useDistributedOptimizer)
        add(out, "precision-aware-optimizer-needs-distributed-optimizer", "Megatron-Core OptimizerConfig", LintSeverity::Error,
            "ddp.use_distributed_optimizer",
            "bf16 Adam moments (optimizer.use_precision_aware_optimizer) need the distributed optimizer, and this "
            "layout turns ddp.use_distributed_optimizer off: Megatron asserts at startup",
            "set ddp.use_distributed_optimizer=true (and optimizer.use_distributed_optimizer=true; the generated "
            "overrides write both), use Megatron FSDP, or keep fp32 moments (train.exp_avg_dtype / exp_avg_sq_dtype fp32)");
}

void hardwareRules(const Layout& l, const HardwareSpec& hw, Out& out)
{
    const int sm = hw.smMajor();
    const bool flex = l.dispatcherType == "flex";
    if (flex && l.dispatcherBackend == "hybridep" && (sm < 8 || sm > 10))
        add(out, "hybridep-needs-sm8-9-10", "megatron-bridge.md §6", LintSeverity::Error, "parallel.moe_flex_dispatcher_backend",
            "HybridEP needs SM 8.x/9.x/10.x; " + hw.displayName + " is SM " + hw.sm, "use the alltoall dispatcher");
    if (flex && l.dispatcherBackend == "deepep") {
        const bool blackwellOk = hw.name == "b200" || hw.name == "b300";
        if (!(sm == 8 || sm == 9 || blackwellOk))
            add(out, "deepep-needs-sm8-9-or-b200-b300", "megatron-bridge.md §6", LintSeverity::Error,
                "parallel.moe_flex_dispatcher_backend",
                "DeepEP supports SM 8.x/9.x and B200/B300; " + hw.displayName + " (SM " + hw.sm + ") is not listed",
                hw.nvlinkDomainSize > 8 ? "use flex + hybridep (the GB200-class default)" : "use alltoall or flex + hybridep");
    }
    const int epRanks = l.ep * l.etp;
    if (flex && l.dispatcherBackend == "hybridep") {
        if (hw.nvlinkDomainSize > 8 && l.ep > hw.nvlinkDomainSize)
            add(out, "hybridep-ep-over-nvlink-domain", "megatron-bridge.md §4", LintSeverity::Error, "parallel.expert_model_parallel_size",
                "the perf launcher rejects EP " + str(l.ep) + " > " + str(hw.nvlinkDomainSize) +
                    " (NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN must fit the NVLink domain)",
                "use EP <= " + str(hw.nvlinkDomainSize));
        else if (epRanks > hw.nvlinkDomainSize)
            add(out, "hybridep-ep-over-nvlink-domain", "megatron-bridge.md §4", LintSeverity::Warning,
                "parallel.expert_model_parallel_size",
                "EP·ETP = " + str(epRanks) + " spans more than the " + str(hw.nvlinkDomainSize) +
                    "-GPU NVLink domain; HybridEP runs min(EP,8) ranks per domain and the rest of the expert traffic crosses the network",
                "keep EP·ETP <= " + str(hw.nvlinkDomainSize) + ", or expect network-bound all-to-all");
    }
    if (l.tp > hw.nvlinkDomainSize || l.tp > hw.gpusPerNode)
        add(out, "tp-within-node", "planner (bandwidth)", LintSeverity::Warning, "parallel.tensor_model_parallel_size",
            "TP " + str(l.tp) + " spans more than one node of " + str(hw.gpusPerNode) + " GPUs; TP collectives then cross the network",
            "keep TP within a node");
}

}  // namespace

const char* lintSeverityName(LintSeverity s)
{
    switch (s) {
    case LintSeverity::Error: return "error";
    case LintSeverity::Warning: return "warning";
    case LintSeverity::Note: return "note";
    }
    return "error";
}

std::string LintFinding::toString() const
{
    std::string s = std::string(lintSeverityName(severity)) + " [" + rule + ", " + source + "] ";
    if (!field.empty())
        s += field + ": ";
    s += message;
    if (!fix.empty())
        s += " — fix: " + fix;
    return s;
}

std::vector<LintFinding> lintLayout(const Layout& l, const LintContext& ctx)
{
    Out out;
    RunConfig config;
    config.model = *ctx.model;
    applyLayout(l, config);
    config.train.seqLength = ctx.seqLength;
    config.train.trainIters = 1'000'000;
    config.data.source = "mock";   // the data section is not the layout's concern
    config.data.mockImageSize = 0;
    config.runtime.device = "cuda";
    for (const ConfigProblem& p : validateRunConfig(config))
        if (layoutRelevant(p))
            out.push_back(fromProblem(p));
    for (const ConfigProblem& p : validateLayout(config, l.worldSize))
        out.push_back(fromProblem(p));
    // validateRunConfig checks VPP against the middle stages only; sizeRules adds first/last.
    sizeRules(l, *ctx.model, out);
    cudaGraphRules(l, out);
    recomputeRules(l, out);
    overlapRules(l, out);
    fsdpRules(l, out);
    optimizerRules(l, ctx.bf16AdamMoments, out);
    if (ctx.hardware)
        hardwareRules(l, *ctx.hardware, out);
    return out;
}

std::vector<LintFinding> lintRunConfig(const RunConfig& config, int worldSize, const HardwareSpec* hardware)
{
    LintContext ctx;
    ctx.model = &config.model;
    ctx.hardware = hardware;
    ctx.seqLength = config.train.seqLength;
    ctx.bf16AdamMoments = config.train.expAvgDtype == "bf16" || config.train.expAvgSqDtype == "bf16";
    return lintLayout(layoutFromRunConfig(config, worldSize), ctx);
}

bool hasErrors(const std::vector<LintFinding>& findings)
{
    return std::any_of(findings.begin(), findings.end(), [](const LintFinding& f) { return f.severity == LintSeverity::Error; });
}

const std::vector<std::string>& lintRuleIds()
{
    static const std::vector<std::string> ids = [] {
        std::vector<std::string> v;
        for (const ProblemRule& r : kProblemRules)
            v.push_back(r.rule);
        for (const char* id : {"minimum-gpus", "tp-divides-vision-heads", "qwen3-vl-forces-sequence-parallel",
                               "cuda-graph-attn-scope-qwen3-vl", "cuda-graph-moe-scope-drop-and-pad-only",
                               "moe-recompute-vs-ep-overlap", "moe-recompute-vs-te-router-graph", "mlp-recompute-noop-on-moe",
                               "ep-overlap-needs-ep", "ep-overlap-needs-alltoall-or-flex", "ep-overlap-vs-shared-expert-overlap",
                               "ep-overlap-needs-vpp", "env-cuda-device-max-connections", "fsdp-needs-fsdp-dtensor-checkpoints",
                               "fsdp-no-shard", "hybridep-needs-sm8-9-10", "deepep-needs-sm8-9-or-b200-b300",
                               "hybridep-ep-over-nvlink-domain", "tp-within-node",
                               "precision-aware-optimizer-needs-distributed-optimizer"})
            v.push_back(id);
        return v;
    }();
    return ids;
}

}  // namespace wb::core::planner
