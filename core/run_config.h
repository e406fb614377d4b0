// RunConfig: the one vocabulary shared by the planner, the generators, the bundled runtime and the
// store. Field names follow Megatron-Core / Megatron-Bridge where a Megatron name exists (so the
// generators map 1:1), grouped in sections. JSON in, JSON out, every problem reported at once.
// Pure data + functions; any thread.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

/// Vision encoder (ViT). Qwen3-VL: 27 layers × 1152, MLP 4304, 16 heads, patch 16, temporal
/// patch 2, spatial merge 2, deepstack from layers {8,16,24}.
struct VisionConfig {
    int numLayers = 2;
    int hiddenSize = 64;
    int ffnHiddenSize = 256;
    int numAttentionHeads = 4;
    int patchSize = 16;
    int temporalPatchSize = 1;   ///< frames per patch; a still image is repeated to fill it
    int spatialMergeSize = 2;    ///< the projector merges m×m patches into one decoder token
    int inChannels = 3;
    std::vector<int> deepstackLayers;  ///< vision layer indices whose merged features are added
                                       ///< to the image tokens after decoder layers 0, 1, 2, ...
};

/// Language decoder: GQA attention + top-k routed SwiGLU experts in every layer.
struct DecoderConfig {
    int numLayers = 2;
    int hiddenSize = 128;
    int numAttentionHeads = 4;
    int numQueryGroups = 2;       ///< KV heads
    int kvChannels = 32;          ///< head dim
    int numMoeExperts = 8;
    int moeRouterTopk = 2;
    int moeFfnHiddenSize = 128;
    double moeAuxLossCoeff = 1e-2;
    std::string moeRouterDtype = "fp32";  ///< fp32 | fp64
    int vocabSize = 512;
    double rotaryBase = 10000.0;
    std::vector<int> mropeSection;        ///< empty = plain 1-D RoPE; else [t,h,w] sizes summing to the rotary dims / 2
    double normEpsilon = 1e-6;

    // Hybrid and shared-expert architectures (Qwen3.5 / Qwen3.6 / Qwen3-Next), in Megatron-Core's
    // terms; the defaults are the plain Qwen3 decoder. The planner models them (FLOPs as Megatron's
    // num_floating_point_operations counts them, parameters, activations); moe-train refuses a
    // config that sets any of them (runtime/train/runtime_checks.cpp): it runs GQA in every layer.
    double rotaryPercent = 1.0;           ///< share of the head dim that is rotated (Qwen3.5: 0.25)
    bool attentionOutputGate = false;     ///< attention_output_gate: a sigmoid gate of q's width on the attention output
    /// linear_attention_freq: 0 = softmax attention in every layer; N = every N-th layer (1-based)
    /// is softmax attention and the others gated DeltaNet (experimental_attention_variant gated_delta_net).
    int linearAttentionFreq = 0;
    int linearNumKeyHeads = 16;           ///< gated DeltaNet: query/key heads
    int linearNumValueHeads = 32;         ///< gated DeltaNet: value heads (and the recurrent states)
    int linearKeyHeadDim = 128;
    int linearValueHeadDim = 128;
    int linearConvKernelDim = 4;          ///< the causal depthwise conv over q, k, v
    int moeSharedExpertFfnHiddenSize = 0; ///< moe_shared_expert_intermediate_size; 0 = no shared expert
    bool moeSharedExpertGate = false;     ///< a sigmoid gate (hidden → 1) on the shared expert's output
    int mtpNumLayers = 0;                 ///< multi-token prediction layers (each a full decoder layer + its projection)

    bool hybridAttention() const { return linearAttentionFreq > 0; }
    /// Decoder layers (of `layers`, the MTP layers included when Megatron counts them) that run
    /// gated DeltaNet: Megatron's pattern, layer i (0-based) is softmax attention when
    /// (i + 1) % linear_attention_freq == 0.
    int linearAttentionLayers(int layers) const
    {
        return linearAttentionFreq > 0 ? layers - layers / linearAttentionFreq : 0;
    }
};

struct ModelConfig {
    VisionConfig vision;
    DecoderConfig decoder;
    bool freezeVisionModel = false;
    bool freezeVisionProjection = false;
    bool freezeLanguageModel = false;
};

/// A switch that may also be left to the runtime: JSON true, false or "auto".
enum class Toggle { Off, On, Auto };

/// train.overlap_optimizer "auto": whether the overlapped optimizer step fits one GPU. It holds
/// every gradient until its update has run, so the memory the serial step reserved grows by
/// about the gradients' bytes (measured on one H200: 88.4 → 100.3 GiB for 9.1 GiB of gradients,
/// the rest the allocator's rounding); a tenth of the card is left for that rounding, the CUDA
/// context and the libraries' workspaces.
bool overlapOptimizerFits(double reservedBytes, double gradientBytes, double deviceBytes);

struct TrainConfig {
    int64_t trainIters = 300;
    int microBatchSize = 4;
    int globalBatchSize = 4;
    int seqLength = 256;
    double lr = 1e-3;
    double minLr = 1e-4;
    int64_t lrWarmupIters = 20;
    std::string lrDecayStyle = "cosine";  ///< cosine | linear | constant
    double weightDecay = 0.01;
    double clipGrad = 1.0;                ///< 0 disables clipping
    double adamBeta1 = 0.9;
    double adamBeta2 = 0.95;
    double adamEps = 1e-8;
    uint64_t seed = 1234;
    std::string precision = "fp32";       ///< fp32 | bf16 (bf16 compute, fp32 master weights)
    /// AdamW moment storage: fp32 | bf16. bf16 = Megatron's precision-aware optimizer
    /// (exp_avg_dtype / exp_avg_sq_dtype): stored in bf16, math in fp32, rounded to nearest even
    /// on store. Independent of `precision`, as in Megatron.
    std::string expAvgDtype = "fp32";
    std::string expAvgSqDtype = "fp32";
    /// moe-train, CUDA, not FSDP: each part's AdamW update on a side stream in forward order, the
    /// next forward waiting only for the part it runs (the same update, written later). JSON true,
    /// false or "auto" (the default): one rank, from the second step, when the first step's
    /// reserved memory plus the gradients the updates hold fit the card with a tenth to spare
    /// (overlapOptimizerFits; docs/runtime.md says why).
    Toggle overlapOptimizer = Toggle::Auto;
    /// moe-train, CUDA bf16, not FSDP: bf16 copies of the weights kept between steps, written by
    /// the AdamW pass, read by the forward instead of autocast's per-forward casts (same values;
    /// 2 B per weight more memory between steps). runtime/model/bf16_weights.h.
    bool bf16WeightCopies = true;
    /// moe-train with bf16_weight_copies on one rank: the backward's bf16 weight gradients are
    /// read by the gradient norm and the fused AdamW pass as they are, not widened to fp32 first
    /// (the same update; 2 B per weight less gradient memory). runtime/model/bf16_weights.h.
    bool bf16Gradients = true;
    int64_t checkpointInterval = 0;       ///< steps between checkpoints; 0 = only on SIGTERM
    int64_t logInterval = 1;              ///< steps between metrics lines
};

struct DataConfig {
    std::string source = "real";    ///< real | mock
    std::string manifest;           ///< JSONL {"image": path, "caption": text}; relative to the manifest
    int64_t minPixels = 32 * 32;    ///< pixel budget: images are resized keeping aspect so that
    int64_t maxPixels = 128 * 128;  ///< min_pixels <= w*h <= max_pixels, sides multiple of patch*merge
    int mockImageSize = 0;          ///< mock: noise image of this side (0 = text only, no images)
    int imagesPerSample = 1;
    int captionMaxTokens = 64;
    int numWorkers = 2;
    int prefetchBatches = 4;
};

struct ParallelConfig {
    int tensorModelParallelSize = 1;
    int pipelineModelParallelSize = 1;
    int virtualPipelineModelParallelSize = 1;
    int contextParallelSize = 1;
    int expertModelParallelSize = 1;
    int expertTensorParallelSize = 1;
    bool sequenceParallel = false;
    bool useMegatronFsdp = false;
    std::string dataParallelShardingStrategy = "no_shard";  ///< no_shard | optim | optim_grads | optim_grads_params
    /// Megatron's ddp.overlap_grad_reduce: the data-parallel gradient allreduce runs in buckets
    /// during the last micro-batch's backward. Ignored under FSDP (its reduce-scatter is its own).
    bool overlapGradReduce = true;
    /// Megatron's ddp.grad_reduce_in_fp32: FSDP reduce-scatters gradients in fp32 (true) or bf16
    /// (half the bytes). moe-train's plain DP allreduce is fp32 either way (its gradients are).
    bool gradReduceInFp32 = true;
    /// ZeRO-3 (optim_grads_params) only, moe-train's knob (FSDP2's reshard_after_forward; Megatron
    /// FSDP has none): false keeps each layer gathered from its forward to its backward.
    bool fsdpReshardAfterForward = true;
    int numLayersInFirstPipelineStage = 0;  ///< 0 = even split
    int numLayersInLastPipelineStage = 0;
    std::string moeTokenDispatcherType = "alltoall";  ///< allgather | alltoall | flex
    std::string moeFlexDispatcherBackend;             ///< "" | deepep | hybridep | ncclep
};

struct RecomputeConfig {
    std::string granularity = "none";     ///< none | selective | full
    std::string method = "uniform";       ///< uniform | block (full only)
    int recomputeNumLayers = 0;           ///< full: layers per recompute unit (uniform) or count (block)
    std::vector<std::string> modules;     ///< selective: core_attn, moe_act, layernorm, mlp, moe, ...
};

struct CudaGraphConfig {
    std::string impl = "none";            ///< none | local | transformer_engine | full_iteration
    std::vector<std::string> scope;       ///< attn, mlp, moe, moe_router, moe_preprocess
    int warmupSteps = 3;
};

struct RuntimeConfig {
    std::string device = "cpu";           ///< cpu | cuda
    int numThreads = 0;                   ///< intra-op threads; 0 = LibTorch default
};

struct RunConfig {
    std::string name = "run";
    ModelConfig model;
    TrainConfig train;
    DataConfig data;
    ParallelConfig parallel;
    RecomputeConfig recompute;
    CudaGraphConfig cudaGraph;
    RuntimeConfig runtime;
};

/// One thing wrong with a config. `path` is the JSON path ("train.micro_batch_size"), `message`
/// says what is wrong, `fix` what to do.
struct ConfigProblem {
    std::string path;
    std::string message;
    std::string fix;
    std::string toString() const;
};

struct RunConfigParse {
    RunConfig config;                     ///< defaults where the JSON was silent or wrong
    std::vector<ConfigProblem> problems;  ///< syntax, unknown keys, types, ranges, consistency
    bool readable = false;                ///< the text was a JSON object (else `config` is all defaults)
    bool ok() const { return problems.empty(); }
};

/// Parses and validates (parse + validateRunConfig). Never throws.
RunConfigParse parseRunConfig(std::string_view jsonText);

/// Reads a file, parses it, and makes `data.manifest` absolute (relative to the file's folder).
/// On failure the error message lists every problem, one per line.
Result<RunConfig> loadRunConfig(const std::string& path);

/// Semantic checks that need no world size: ranges and consistency between sizes.
std::vector<ConfigProblem> validateRunConfig(const RunConfig& config);

/// Checks that need the world size: the layout fits it and GBS is divisible by MBS × DP.
std::vector<ConfigProblem> validateLayout(const RunConfig& config, int worldSize);

/// What of a decoder the bundled runtime moe-train does not implement (the hybrid fields of
/// Qwen3.5 / Qwen3.6, which the planner and the Megatron-Bridge generator take): one problem per
/// field, each naming the fix. Empty when moe-train can build the model.
std::vector<ConfigProblem> moeTrainModelProblems(const DecoderConfig& decoder);

/// Data-parallel size for a world: world / (TP × PP × CP), 0 if it does not divide.
int dataParallelSize(const RunConfig& config, int worldSize);

/// Canonical JSON: every field, fixed key order, 2-space indent. parse(toJson(c)) == c.
std::string runConfigToJson(const RunConfig& config);

/// Stable hash of the canonical JSON (16 hex digits, FNV-1a 64).
std::string runConfigHash(const RunConfig& config);

/// Joins problems into one user-facing message, one per line.
std::string formatProblems(const std::vector<ConfigProblem>& problems);

}  // namespace wb::core
