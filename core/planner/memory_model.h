// Memory model of the most-loaded rank: every term a named line with the assumption behind it.
// Weights/grads/optimizer per megatron-bridge.md §7 (18 B/param unsharded; distributed optimizer
// 6 + 12/DP; with bf16 Adam moments 14 and 6 + 8/DP; Megatron FSDP strategies; experts shard over
// expert-DP); activations per Korthikanti
// et al. 2022 generalised to GQA, SwiGLU and top-k MoE; plus what the frameworks' own estimators
// leave out (full-recompute working set, dispatcher buffers, token imbalance, the vision encoder
// and deepstack features, CUDA graphs, allocator slack). Pure functions; any thread.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout.h"
#include "core/planner/workload.h"

#include <string>
#include <vector>

namespace wb::core::planner {

struct MemoryTerm {
    std::string name;        ///< "expert weights", "decoder activations", ...
    std::string category;    ///< weights | grads | optimizer | activations | other
    double bytes = 0;
    std::string assumption;  ///< how the number was formed
};

struct MemoryEstimate {
    int stage = 0;                  ///< pipeline stage of the most-loaded rank
    std::vector<MemoryTerm> terms;
    double total() const;
    double category(const std::string& name) const;
    static double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }
};

struct MemoryOptions {
    bool flashAttention = true;           ///< removes the 5as/h term (softmax never stored)
    bool dropout = false;                 ///< Qwen3-VL trains with dropout 0: no masks stored
    double allocatorSlack = 0.05;         ///< fraction of allocated bytes lost to fragmentation
    double contextAndNcclGib = 2.0;       ///< CUDA context, cuBLAS workspaces, NCCL communicators
    double dispatcherWorkspaceGib = 1.0;  ///< DeepEP/HybridEP registered buffers beyond token data
    bool explain = true;                  ///< fill names and assumption texts (off: numbers only, fast)
    /// Predict the bundled runtime moe-train instead of Megatron: its allocator's peak (what its
    /// metrics report as mem_peak_gib), from how it stores the state: fp32 parameters that are
    /// also the master copy, bf16 copies made by autocast for the forward and kept for backward,
    /// fp32 (or bf16) Adam moments, and gradients that exist only from the backward on (DP 1) or
    /// always (DP > 1: views of the reducer's buckets). The peak is the larger of the
    /// forward/backward phase and the optimizer step. No CUDA context or allocator slack: the
    /// allocator's peak does not hold them. FSDP ZeRO-1/2 (optim, optim_grads) as
    /// runtime/parallel/fsdp.h runs them: whole fp32 parameters on every rank beside their fp32
    /// shards and the shards' moments, the whole fp32 gradients at the end of each backward and
    /// the largest unit's reduce-scatter buffers on top of them; ZeRO-3 keeps Megatron's sharded
    /// form.
    bool moeTrain = false;
};

/// One transformer layer's activation shape, per micro-batch, for the closed forms.
struct ActivationShape {
    double s = 0;       ///< sequence length on this rank (seq / CP)
    double b = 1;       ///< micro-batch
    double h = 0;       ///< hidden
    double a = 0;       ///< attention heads
    double q = 0;       ///< heads × head dim (= h for classic MHA)
    double kv = 0;      ///< KV heads × head dim (= h for MHA)
    double ffn = 0;     ///< dense FFN width, or the expert FFN width for MoE
    bool gated = true;  ///< SwiGLU (gate + up) vs GeLU
    int topk = 0;       ///< 0 = dense MLP; else routed copies per token
    int experts = 0;    ///< router width (MoE only)
    int t = 1;          ///< TP
    int etp = 1;        ///< expert TP (MoE only)
    bool sp = false;    ///< sequence parallel
    bool flash = true;
    bool dropout = false;
    double imbalance = 1.0;  ///< MoE: routed tokens on this rank / mean
    bool outputGate = false; ///< attention_output_gate: the gate's pre-activation and the gated output (2·q each)
    double sharedFfn = 0;    ///< shared expert width (0 = none): its FC1 outputs and activation
    /// Hybrid decoders: the share of layers that run gated DeltaNet instead of softmax attention,
    /// and that mixer's stored bytes per token (in_proj outputs, conv outputs, the core's and the
    /// gated norm's outputs; the chunk states are recomputed in backward, as FLA's kernels do).
    double linearShare = 0;
    double linearMixerBytes = 0;
    std::string granularity = "none";   ///< none | selective | full
    std::vector<std::string> modules;   ///< selective modules
};

/// Bytes of stored activations for one layer and one micro-batch (the recompute working set for
/// full recompute is not included; see estimateMemory). With dense GeLU, MHA, dropout, no flash
/// and no recompute this is exactly Korthikanti's sbh(34 + 5as/h); with TP t: sbh(10 + 24/t +
/// 5as/(ht)); with SP: sbh(34/t + 5as/(ht)); selective core_attn + SP: sbh·34/t; full: 2sbh(/t).
double layerActivationBytes(const ActivationShape& shape);

/// Per-rank memory of the most-loaded pipeline stage (the max over stages of the total).
MemoryEstimate estimateMemory(const ModelConfig& model, const Layout& layout, const Workload& workload,
                              const MemoryOptions& options = {});

/// The same, for one given stage (0-based).
MemoryEstimate estimateStageMemory(const ModelConfig& model, const Layout& layout, const Workload& workload,
                                   int stage, const MemoryOptions& options = {});

}  // namespace wb::core::planner
