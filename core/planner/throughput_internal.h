// Internal to the throughput model, shared by its two files: throughput_stage.cpp (one pipeline
// stage's micro-batch: compute, memory-bound passes, EP/TP/CP/PP/FSDP traffic) and
// throughput_model.cpp (the step's terms from the slowest stage, the per-step collectives, the
// optimizer, the calibration). The FLOP splits, the workload's shapes, the rank's parameters and
// the context every part reads. Not a public API: nothing outside those two files includes it.
// Pure; any thread.
#pragma once

#include "core/model_flops.h"
#include "core/planner/throughput_model.h"

#include <string>
#include <vector>

namespace wb::core::planner::detail {

// Decoder FLOPs (fwd+bwd) split by kind: per token for the linear parts, and the coefficient of
// the attention scores (Σ over independent sequences of length²).
struct FlopsSplit {
    double experts = 0, projections = 0, logits = 0;  // per token
    double linearCore = 0;                            // per token: gated DeltaNet's conv + delta rule
    double attentionCoef = 0;                         // per score (s² of one sequence)
};

// The packed sequence the step computes, per sample (one sequence of seqLength tokens): what the
// kernels run over (every position, padding included) and what the model FLOPs count.
struct SequenceShape {
    double positions = 0;        // tokens the GEMMs and elementwise passes run over (seqLength)
    double effective = 0;        // image + text tokens (DESIGN.md §3.2), no padding
    double labelled = 0;         // tokens with a next-token target (text): moe-train's LM head
    double attentionScores = 0;  // Σ over independent samples of length²
};

// The same split into the part linear in the patches (GEMMs, norms, mergers) and the per-image
// attention (Σ patches²), FLOPs fwd+bwd per sample.
struct VisionFlops {
    double linear = 0, attention = 0;
};

// Independent attention segments of one micro-batch (one per packed sample in the decoder, one
// per image in the vision encoder): their count and the sums of their lengths and squares.
struct SegmentMoments {
    double count = 0, sum = 0, sumSquares = 0;
};

// Parameters of the most-loaded pipeline stage on one rank (the first stage holds the embedding
// and the vision encoder, the last the output layer), and which of them train.
struct RankParameters {
    double all = 0, trainable = 0;
    double layerWeights = 0;     // the decoder layers' (re-cast by a full re-forward)
    double expertWeights = 0;    // the routed experts' (re-cast by a selective "moe" re-forward)
    double visionTrainable = 0;  // the vision encoder's and projector's, when they train
    double visionBlocks = 0;     // of those, the blocks' (moe-train's FSDP units; the rest is its root unit)
    // Trainable parameters that moe-train's FSDP shards over the expert-data-parallel group (the
    // routed experts) and over the data-parallel group (the rest).
    double expertTrainable = 0;
    // Trainable parameters whose gradients the backward produces last: the first stage's
    // embedding and vision encoder (the output layer's come first).
    double lastReady = 0;
    double embedding = 0;  // the token embedding (a gather: never a GEMM operand, so never cast)
    double denseTrainable() const { return std::max(0.0, trainable - expertTrainable); }
    /// moe-train's FSDP root unit: the trainable parameters outside the decoder layers and vision
    /// blocks (embedding, output layer, projector, the vision input).
    double rootTrainable() const
    {
        return std::max(0.0, denseTrainable() - (layerWeights - expertWeights) - visionBlocks);
    }
};

struct StageTime {
    double expert = 0, dense = 0, attention = 0, vision = 0, recompute = 0, elementwise = 0, overhead = 0;
    double linearAttention = 0;   // gated DeltaNet's conv + delta rule (hybrid decoders)
    double attentionForward = 0;  // the forward's share of `attention` (what a recompute repeats)
    double epComm = 0, tpComm = 0, cpComm = 0, ppComm = 0, fsdpComm = 0;
    double total() const
    {
        return expert + dense + attention + linearAttention + vision + recompute + elementwise + overhead + epComm +
               tpComm + cpComm + ppComm + fsdpComm;
    }
};

/// moe-train's FSDP in a group of one rank (EDP 1 under EP, DP 1 under TP): no collective, but
/// runtime/parallel/fsdp.cpp still moves each unit through its flat buffers on the training
/// stream. Bytes of HBM traffic per parameter: a gather concatenates the shards, copies them as
/// the group's all-gather and then into the parameter (3 × read + write of 4 B); a reduce pads
/// the gradient, concatenates, copies as the reduce-scatter and clones or adds into the shard's
/// gradient (4 × read + write of 4 B).
constexpr double kLoneGatherBytes = 24.0;
constexpr double kLoneReduceBytes = 32.0;
/// Of `dense` (sharded over DP × CP = dpN) and `experts` (over expert DP = edpN) parameters,
/// those whose group is one rank.
inline double loneGroupParams(int dpN, int edpN, double dense, double experts)
{
    return (dpN == 1 ? dense : 0.0) + (edpN == 1 ? experts : 0.0);
}
/// The rate of those copies, GB/s: the runtime profile's measured `copy_gb_s` (moe-train
/// --self-check's device copy) or the fraction of HBM bandwidth it reached on an H200.
double moeTrainCopyRate(const ThroughputOptions& o, const HardwareSpec& hw);

struct Context {
    const ModelConfig& m;
    const Layout& l;
    const Workload& w;
    const HardwareSpec& hw;
    const ThroughputOptions& o;
    FlopsSplit split;
    SequenceShape seq;
    double visionPerSample = 0;  // FLOPs, fwd+bwd
    RankParameters params;       // the most-loaded stage's (moe-train's passes and collectives)
    VisionFlops visionSplit;     // visionPerSample's linear and attention parts
    bool moeTrain() const { return o.runtime == TrainingRuntime::MoeTrain; }
    // moe-train's measured flash-attention kernels for the decoder (causal, GQA) and the vision
    // encoder (bidirectional per image); null: attention as FLOPs at a fraction of peak.
    const AttentionKernelRate* decoderKernel() const
    {
        return moeTrain() && m.decoder.kvChannels > 0 ? o.rates.attentionKernel(m.decoder.kvChannels, true) : nullptr;
    }
    const AttentionKernelRate* visionKernel() const
    {
        const int heads = std::max(1, m.vision.numAttentionHeads);
        return moeTrain() ? o.rates.attentionKernel(m.vision.hiddenSize / heads, false) : nullptr;
    }
    // The decoder's attention segments of one micro-batch of b packed sequences.
    SegmentMoments decoderSegments(double b) const
    {
        if (w.packed.measured())
            return {b * w.packed.samples, b * w.packed.effectiveTokens(), b * w.packed.sampleTokensSquared};
        const double s = w.seqLength;
        return {b, b * s, b * s * s};
    }
    SegmentMoments visionSegments(double b) const
    {
        if (w.mockTextOnly)
            return {};
        if (w.packed.measured())
            return {b * w.packed.images, b * w.packed.patches, b * w.packed.patchesSquared};
        const double n = w.patchesPerImage(m.vision), images = b * w.visionImagesPerSample();
        return {images, images * n, images * n * n};
    }
};

// moe-train's tensor parallelism (runtime/parallel/tensor_parallel.cpp) for one micro-batch on a
// stage: every collective runs on the training stream and is waited for, so all of it is exposed.
// Per decoder layer, on bf16 rows of the micro-batch's N tokens (X = N·h·2 B):
//  - without SP: the attention's row-parallel output allreduced (forward) and its input's
//    gradient (backward, the f of Megatron's f/g); with ETP = TP the MoE's the same;
//  - with SP: all-gather before and reduce-scatter after the attention, the reverse in backward;
//    with ETP = TP the MoE's rows gathered over TP and their partial outputs scattered back as
//    variable all-to-alls (ExpertTensorParallelRunner), forward and backward;
//  - a re-forward (full recompute; selective "moe" for the MoE) repeats the forward's.
// Vision blocks run TP without SP: the attention's and the MLP's outputs allreduced, their inputs'
// gradients in backward (forward only when frozen). The vocabulary-parallel embedding allreduces
// its lookup (first stage), the LM head's input gradient is allreduced (last stage; under SP the
// final norm's rows are gathered first). Rates: the measured allreduce (bus bandwidth: X·2(n−1)/n
// per rank), shard (all-gather/reduce-scatter: X·(n−1)/n) and all-to-all rates of the profile.
// Not modelled: the per-layer exchange of row counts under SP with ETP = TP (a host wait; on
// 2×H200 the SP rows measure 4–6 % above the non-SP ones) and the once-per-step allreduce of the
// SP-partial gradients (norms, routers: ≈ 0.3 ms).
struct TensorParallelTime {
    double seconds = 0;
    bool measured = false;
};

FlopsSplit splitDecoderFlops(const DecoderConfig& d);
SequenceShape sequenceShape(const ModelConfig& m, const Workload& w);
double visionFlopsOfSample(const ModelConfig& m, const Workload& w);
VisionFlops visionFlopsSplit(const ModelConfig& m, const Workload& w);
RankParameters rankParameters(const ModelConfig& m, const Layout& l);
/// "1.23 G", "45.6 M", "789": parameter and value counts in the terms' texts.
std::string fmtCount(double v);
/// A collective's rate for moe-train: the profile's measured GB/s on this hardware, else the
/// NVLink fraction measured on 2×H200 (network beyond the NVLink domain). `measured` (may be
/// null) says which.
double moeTrainRate(const Context& c, double measuredGbPerS, double nvlinkFraction, int groupSize,
                    bool* measured = nullptr);
/// Seconds to move `bytes` over a group of `groupSize` ranks: NVLink inside the domain, the network beyond.
double transferSeconds(const Context& c, double bytes, int groupSize, double efficiency);
TensorParallelTime moeTrainTensorParallel(const Context& c, bool first, bool last, int layers, double b);
/// One micro-batch on pipeline stage `stage` holding `layers` decoder layers.
StageTime stageTime(const Context& c, int stage, int layers);

}  // namespace wb::core::planner::detail
