// Throughput model: model FLOPs (core/model_flops.h, vision counted) over peak × named efficiency
// factors, plus exposed communication (EP all-to-all on NVLink or the network, TP, CP, FSDP or
// distributed-optimizer collectives), the pipeline bubble (p−1)/(v·m), recompute and per-layer
// overheads → step time, effective tokens/s/GPU, TFLOP/s/GPU, MFU. Every factor is a named field
// with a default and a comment; override them (or calibrate from measured runs) via
// EfficiencyFactors. Pure functions; any thread.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout.h"
#include "core/planner/workload.h"

#include <string>
#include <string_view>
#include <vector>

namespace wb::core::planner {

struct EfficiencyFactors {
    double denseGemm = 0.70;          ///< fraction of peak for attention projections and logits GEMMs
    double groupedGemm = 0.62;        ///< expert grouped GEMMs at saturation
    double groupedGemmHalfTokens = 512;  ///< tokens per expert GEMM at which it reaches half of that
    double groupedGemmHalfWidth = 128;   ///< expert FFN width per rank (f/ETP) at which the GEMM
                                         ///< reaches half efficiency: ETP makes expert GEMMs skinny
    double attention = 0.50;          ///< flash attention fwd+bwd, fraction of peak
    double vision = 0.35;             ///< vision encoder + mergers (narrow 1152 width, varlen images)
    /// Gated DeltaNet's core (the causal conv and the chunked delta rule, Megatron's FLOP count of
    /// them), fraction of peak. ASSUMPTION, not measured: the chunked kernels (FLA's
    /// chunk_gated_delta_rule, Triton) do ≈ 1.4× Megatron's count at C = 64 chunks (the intra-chunk
    /// QK^T and the WY solve besides the state update) at about a third of the dense peak.
    double linearAttentionCore = 0.25;
    double fp8GemmSpeedup = 1.6;      ///< FP8/MXFP8 GEMMs vs BF16 (2× peak less quantize/scale cost)
    double fp8AttentionSpeedup = 1.4; ///< mixed_precision.fp8_dot_product_attention: FP8 flash attention vs
                                      ///< BF16, forward and backward together (assumption: the forward gains
                                      ///< most of 2×, the backward keeps bf16 parts)
    double nvlinkEfficiency = 0.75;   ///< achieved / link bandwidth for NCCL collectives on NVLink
    double networkEfficiency = 0.70;  ///< same, scale-out network
    double alltoallEfficiency = 0.55; ///< NCCL all-to-all vs link bandwidth (many small messages)
    double hybridepEfficiency = 0.80; ///< HybridEP/DeepEP dispatch+combine vs link bandwidth
    double epOverlapExposed = 0.35;   ///< fraction of all-to-all left exposed with EP overlap
    double tpExposed = 0.60;          ///< fraction of TP/SP collectives not hidden
    double cpExposed = 0.30;          ///< fraction of CP ring exchange not hidden
    double dpExposed = 0.15;          ///< DP/FSDP collectives not hidden (overlap_grad_reduce, prefetch)
    double layerOverheadUs = 120;     ///< per decoder layer per micro-batch, fwd+bwd: router, permute,
                                      ///< host syncs, norms, launches (no CUDA graphs)
    double graphedLayerOverheadUs = 70;  ///< the same with moe_router/moe_preprocess graphs
    double perImageOverheadUs = 150;  ///< per image per micro-batch, fwd+bwd: varlen setup, launches
    double elementwiseBytesPerHidden = 40;  ///< memory-bound traffic per token per layer, in units of h
                                            ///< bytes, fwd+bwd (norms, rotary, activations, permutes)
    /// Measured / predicted step time fitted from stored runs (core/planner/calibration.h); every
    /// term is scaled by it. 1.0 = the factors above as they are.
    double stepTimeFactor = 1.0;
    /// Per-term calibration from one measured run (calibration.h TermCalibration): the terms of
    /// each group (TimeTerm::group) are scaled by their factor; `termCalibration` says from what.
    double computeTimeFactor = 1.0;
    double visionTimeFactor = 1.0;
    double optimizerTimeFactor = 1.0;
    std::string termCalibration;
    double hbmEfficiency = 0.80;      ///< achieved / peak HBM bandwidth of streaming elementwise kernels
    double optimizerBytesPerParam = 32;     ///< HBM traffic of one Adam step per locally owned param
    /// Memory-bound traffic per routed (token, expert) pair, fwd+bwd, in bytes per unit of h and of
    /// the rank's expert width f/ETP: permute writes and unpermute reads an h-wide bf16 row (4h fwd),
    /// SwiGLU reads 2f and writes f (6f fwd); backward ≈ 2× forward → 12h + 18f.
    double routedBytesPerHidden = 12;
    double routedBytesPerFfn = 18;
    /// FP8/MXFP8: quantizing each expert GEMM input (read bf16, write fp8 + scales ≈ 3 B/element):
    /// fc1 input h and fc2 input f forward, their gradients and transposed copies backward.
    double fp8QuantBytesPerHidden = 9;
    double fp8QuantBytesPerFfn = 15;
    /// FP8/MXFP8: the attention projections' quantization, bytes per element of each GEMM input
    /// (forward: x; backward: dY), rowwise and columnwise copies with their scales: read 2 B,
    /// write 2 × (1 + 1/32) B, plus the scale swizzle ≈ 4.5 B (TransformerEngine's MXFP8 recipe).
    double fp8QuantBytesPerElement = 4.5;
    /// Achieved / peak HBM bandwidth of the FP8 quantize kernels. Published on B200: TE's MXFP8
    /// cast of an 8192² bf16 tensor 5.2–5.8 TB/s, torchao's 5.4–6.0 TB/s (0.64–0.75 of 8 TB/s);
    /// below the streaming kernels' 0.80.
    double fp8QuantHbmEfficiency = 0.70;
};

/// Which training runtime the prediction is for: Megatron-Bridge (what users run on their
/// clusters; the default) or moe-train, the bundled runtime, whose step has passes Megatron's does
/// not (docs/planner.md "Predicting moe-train"): fp32 parameters cast to bf16 by autocast in every
/// forward and their bf16 gradients widened back, the LM head over the labelled tokens only, a
/// separate gradient-norm pass, one fused AdamW pass over every trainable parameter (no
/// distributed optimizer), and a host gap per step.
enum class TrainingRuntime { MegatronBridge, MoeTrain };

struct ThroughputOptions {
    EfficiencyFactors eff;
    bool fp8 = false;      ///< GEMMs in FP8/MXFP8 (the published Bridge perf rows)
    bool explain = true;   ///< fill the assumption texts (off: numbers only, fast)
    TrainingRuntime runtime = TrainingRuntime::MegatronBridge;
    /// moe-train's rates on this hardware; zeros = not measured there: fractions of the HBM
    /// bandwidth measured on H200 are assumed (casts 0.55, AdamW 0.83, norm 0.74, gap 6 ms).
    RuntimeRates rates;
    /// The layout's predicted peak memory per GPU in bytes (the memory model's total), for
    /// moe-train's train.overlap_optimizer "auto" (overlapOptimizerFits); 0 = not predicted, and
    /// "auto" counts as serial.
    double predictedPeakBytes = 0;
};

/// What a term is calibrated with (calibration.h TermCalibration): the vision encoder from the
/// measured vision + projector forward, the optimizer step and norm pass from the measured
/// optimizer time, every other per-micro-batch term (GEMMs, attention, elementwise, casts,
/// communication, bubble) from what is left of the step; the host gap is not calibrated.
enum class TermGroup { Compute, Vision, Optimizer, Fixed };

/// The group of a term by its name ("vision encoder" → Vision, ...).
TermGroup termGroup(std::string_view termName);

/// How sure a term is (issue 15 item 7): from a rate measured on this hardware (a runtime profile,
/// a measured kernel), partly so (a measured kernel inside assumed GEMM efficiencies), scaled by a
/// calibration from measured runs, or from the catalog's assumed efficiencies alone.
enum class TermBasis { Assumed, PartlyMeasured, Measured, Calibrated };
const char* termBasisName(TermBasis basis);  ///< "assumed", "partly measured", "measured", "calibrated"

struct TimeTerm {
    std::string name;
    double ms = 0;          ///< per step, on the critical path
    std::string assumption;
    TermGroup group = TermGroup::Compute;
    TermBasis basis = TermBasis::Assumed;
};

/// "measured 61 % of the step, calibrated 0 %, assumed 39 %": the step's milliseconds by basis.
std::string describeTermBases(const std::vector<TimeTerm>& terms);

/// "megatron-bridge" or "moe-train": the names plan, generate and stored predictions use.
const char* trainingRuntimeName(TrainingRuntime runtime);

struct ThroughputEstimate {
    std::string runtime = "megatron-bridge";  ///< what it predicts (trainingRuntimeName)
    double stepMs = 0;
    double modelFlopsPerStep = 0;   ///< DESIGN.md §3.2 numerator (vision counted, recompute not)
    double visionFlopsPerStep = 0;
    double effectiveTokensPerStep = 0;
    double tokensPerSecPerGpu = 0;
    double tflopsPerGpu = 0;
    double mfu = 0;
    std::vector<TimeTerm> terms;    ///< what the step is made of (sums to stepMs)
};

/// The prediction for a workload. Assumes one sample per packed sequence of seqLength tokens.
ThroughputEstimate estimateThroughput(const ModelConfig& model, const Layout& layout, const Workload& workload,
                                      const HardwareSpec& hardware, const ThroughputOptions& options = {});

/// What a mock-data run of `runtime` trains instead of the real workload `real` (same sequence
/// length, GBS and layout):
/// - Megatron-Bridge: its MockVLMSFTDatasetConfig as the VLM recipes set it (megatron-bridge.md
///   §2): one 256×256 noise image per sample (64 image tokens for Qwen3-VL), the prompt, padded to
///   the sequence (pad_to_max_length: every slot computes), and the perf recipes'
///   moe_router_force_load_balancing — every expert gets the same tokens;
/// - moe-train: its text-only mock (data.source mock, mock_image_size 0): no images, the same
///   tokens, routed as the router routes them (moe-train has no forced balance).
Workload mockWorkload(Workload real, TrainingRuntime runtime);
/// One line saying what mockWorkload(…, runtime) is.
std::string describeMockWorkload(TrainingRuntime runtime);

/// The same layout on mockWorkload(workload, options.runtime): the number a mock benchmark shows.
ThroughputEstimate estimateMockThroughput(const ModelConfig& model, const Layout& layout, const Workload& workload,
                                          const HardwareSpec& hardware, const ThroughputOptions& options = {});

/// Real against mock data for one layout, term by term (issue 15 item 5): where the real
/// workload's extra time goes — the vision encoder at the real image shapes, the image-token
/// share, and the routing (natural against force-balanced: the expert GEMMs and the all-to-all
/// wait for the most-loaded expert rank).
struct MockRealTerm {
    std::string name;
    double realMs = 0;
    double mockMs = 0;
};
struct MockRealComparison {
    ThroughputEstimate real;
    ThroughputEstimate mock;
    std::string mockDescription;       ///< describeMockWorkload
    std::vector<MockRealTerm> terms;   ///< every term of either, largest |real − mock| first
    double realRoutingImbalance = 1;   ///< most-loaded expert rank / mean, real data
    double mockRoutingImbalance = 1;
    /// Real step / mock step: how much faster the mock run looks (same tokens per step).
    double mockSpeedup() const { return mock.stepMs > 0 ? real.stepMs / mock.stepMs : 0; }
};
MockRealComparison compareMockAndReal(const ModelConfig& model, const Layout& layout, const Workload& real,
                                      const HardwareSpec& hardware, const ThroughputOptions& options = {});
/// "mock data looks 1.31× faster than real (…): vision encoder +41.2 ms (32 % of the gap), …"
std::string describeMockRealComparison(const MockRealComparison& c, int maxTerms = 4);

}  // namespace wb::core::planner
