// Throughput model. Per micro-batch and pipeline stage: GEMM/attention/vision compute at named
// efficiencies, memory-bound elementwise work, per-layer overheads, exposed EP/TP/CP/FSDP
// communication; the slowest stage sets the 1F1B rhythm, the bubble adds (p−1)/v of it, and the
// per-step DP collectives and optimizer step follow. FLOPs always come from core/model_flops.h:
// the split into expert / projection / attention / logits parts is derived from decoderFlops
// itself (by zeroing top-k or layers), so the two can never disagree.
#include "core/planner/throughput_model.h"

#include "core/model_flops.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace wb::core::planner {
namespace {

// Decoder FLOPs (fwd+bwd) split by kind: per token for the linear parts, and the coefficient of
// the attention scores (Σ over independent sequences of length²).
struct FlopsSplit {
    double experts = 0, projections = 0, logits = 0;  // per token
    double linearCore = 0;                            // per token: gated DeltaNet's conv + delta rule
    double attentionCoef = 0;                         // per score (s² of one sequence)
};

FlopsSplit splitDecoderFlops(const DecoderConfig& d)
{
    FlopsSplit f;
    DecoderConfig noExperts = d;
    noExperts.moeRouterTopk = 0;
    DecoderConfig noLayers = d;
    noLayers.numLayers = 0;
    noLayers.mtpNumLayers = 0;  // the MTP layers' own logits count as projections (same GEMM rate)
    // attention is quadratic: F(2) − 2·F(1) = 2c, with F(s) = s·linear + s²·c
    f.attentionCoef = (decoderFlops(noExperts, {2}) - 2.0 * decoderFlops(noExperts, {1})) / 2.0;
    const double perToken = decoderFlops(d, {1}) - f.attentionCoef;
    f.experts = perToken - (decoderFlops(noExperts, {1}) - f.attentionCoef);
    f.logits = decoderFlops(noLayers, {1});
    f.linearCore = linearAttentionCoreFlops(d);
    f.projections = perToken - f.experts - f.logits - f.linearCore;
    return f;
}

// The packed sequence the step computes, per sample (one sequence of seqLength tokens): what the
// kernels run over (every position, padding included) and what the model FLOPs count.
struct SequenceShape {
    double positions = 0;       // tokens the GEMMs and elementwise passes run over (seqLength)
    double effective = 0;       // image + text tokens (DESIGN.md §3.2), no padding
    double labelled = 0;        // tokens with a next-token target (text): moe-train's LM head
    double attentionScores = 0; // Σ over independent samples of length²
};

SequenceShape sequenceShape(const ModelConfig& m, const Workload& w)
{
    SequenceShape s;
    s.positions = w.seqLength;
    if (w.packed.measured()) {
        const double image = w.mockTextOnly ? 0.0 : w.packed.imageTokens;
        s.effective = image + w.packed.textTokens;
        s.labelled = w.packed.textTokens;
        s.attentionScores = w.packed.sampleTokensSquared;
    } else {
        s.effective = w.seqLength;
        s.labelled = std::max(0.0, double(w.seqLength) - double(w.imageTokensPerSample(m.vision)));
        s.attentionScores = double(w.seqLength) * double(w.seqLength);
    }
    return s;
}

// Vision FLOPs of one sample's images: linear in the patches except the per-image attention,
// which is Σ patches² (core/model_flops.h visionFlops for one image of n patches is a + b·n + c·n²).
double visionFlopsOfSample(const ModelConfig& m, const Workload& w)
{
    if (w.mockTextOnly)
        return 0;
    const VisionConfig& v = m.vision;
    const int out = m.decoder.hiddenSize;
    if (!w.packed.measured())
        return w.visionImagesPerSample() * visionFlops(v, out, w.patchesPerImage(v));
    // visionFlops(n) = n·lin + n²·quad (no constant): recover both from n = 1 and n = 2.
    const double f1 = visionFlops(v, out, 1), f2 = visionFlops(v, out, 2);
    const double quad = (f2 - 2.0 * f1) / 2.0, lin = f1 - quad;
    return lin * w.packed.patches + quad * w.packed.patchesSquared;
}

// The same split into the part linear in the patches (GEMMs, norms, mergers) and the per-image
// attention (Σ patches²), FLOPs fwd+bwd per sample.
struct VisionFlops {
    double linear = 0, attention = 0;
};

VisionFlops visionFlopsSplit(const ModelConfig& m, const Workload& w)
{
    if (w.mockTextOnly)
        return {};
    const VisionConfig& v = m.vision;
    const int out = m.decoder.hiddenSize;
    const double f1 = visionFlops(v, out, 1), f2 = visionFlops(v, out, 2);
    const double quad = (f2 - 2.0 * f1) / 2.0, lin = f1 - quad;
    if (!w.packed.measured()) {
        const double n = w.patchesPerImage(v);
        return {w.visionImagesPerSample() * lin * n, w.visionImagesPerSample() * quad * n * n};
    }
    return {lin * w.packed.patches, quad * w.packed.patchesSquared};
}

// Independent attention segments of one micro-batch (one per packed sample in the decoder, one
// per image in the vision encoder): their count and the sums of their lengths and squares.
struct SegmentMoments {
    double count = 0, sum = 0, sumSquares = 0;
};

// Tiles and CTAs of one flash-attention pass (FA2: a CTA per query block forward, per key block
// backward, each looping over the other side's blocks) over segments with these moments,
// averaged over where a segment ends inside its last block; benchmarks/attention_kernels.py
// checks the forms against exact counts (within 1 % on smooth length distributions). Causal
// forward, ρ = M/N: Σ_i min(⌈s/N⌉, ρ(i+1)) = s²/(2MN) + s/N + ½ − ρ/12; causal backward,
// ρ' = N/M: Σ_j (⌈s/M⌉ − ρ'j) = s²/(2MN) + s(1/(2M) + 1/(2N)) + (ρ'+1)/4 − ρ'/12;
// bidirectional ⌈s/M⌉⌈s/N⌉ = s²/(MN) + s(1/M + 1/N)/2 + ¼; CTAs ⌈s/B⌉ = s/B + ½.
double attentionPassSeconds(const AttentionPass& p, bool causal, bool backward, const SegmentMoments& seg, double heads)
{
    const double bm = p.blockM, bn = p.blockN;
    double tiles = 0;
    if (!causal)
        tiles = seg.sumSquares / (bm * bn) + 0.5 * seg.sum * (1.0 / bm + 1.0 / bn) + 0.25 * seg.count;
    else if (!backward)
        tiles = seg.sumSquares / (2.0 * bm * bn) + seg.sum / bn + seg.count * (0.5 - bm / bn / 12.0);
    else
        tiles = seg.sumSquares / (2.0 * bm * bn) + seg.sum * (0.5 / bm + 0.5 / bn) +
                seg.count * ((bn / bm + 1.0) / 4.0 - bn / bm / 12.0);
    const double ctas = seg.sum / (backward ? bn : bm) + 0.5 * seg.count;
    return heads * (p.nsPerTile * tiles + p.nsPerCta * ctas + p.nsPerTokenHead * seg.sum) * 1e-9;
}

std::string fmtCount(double v)
{
    return v >= 1e9 ? fmt(v / 1e9, 2) + " G" : v >= 1e6 ? fmt(v / 1e6, 1) + " M" : fmt(v, 0);
}

// Parameters of the most-loaded pipeline stage on one rank (the first stage holds the embedding
// and the vision encoder, the last the output layer), and which of them train.
struct RankParameters {
    double all = 0, trainable = 0;
    double layerWeights = 0;   // the decoder layers' (re-cast by a full re-forward)
    double expertWeights = 0;  // the routed experts' (re-cast by a selective "moe" re-forward)
    double visionTrainable = 0;  // the vision blocks' and projector's, when they train
    // Trainable parameters that moe-train's FSDP shards over the expert-data-parallel group (the
    // routed experts) and over the data-parallel group (the rest).
    double expertTrainable = 0;
    // Trainable parameters whose gradients the backward produces last: the first stage's
    // embedding and vision encoder (the output layer's come first).
    double lastReady = 0;
    double embedding = 0;  // the token embedding (a gather: never a GEMM operand, so never cast)
    double denseTrainable() const { return std::max(0.0, trainable - expertTrainable); }
};

RankParameters rankParameters(const ModelConfig& m, const Layout& l)
{
    const DecoderConfig& d = m.decoder;
    const ParameterCounts counts = countParameters(m);
    const std::vector<int> stages = layersPerStage(l, d.numLayers);
    const double t = std::max(1, l.tp);
    RankParameters best;
    for (int s = 0; s < std::max(1, l.pp); ++s) {
        const int layers = stages.empty() ? (d.numLayers + l.pp - 1) / std::max(1, l.pp) : stages[size_t(s)];
        RankParameters p;
        p.expertWeights = layers * (double(d.numMoeExperts) / std::max(1, l.ep)) * expertParams(d) / std::max(1, l.etp);
        p.layerWeights = layers * decoderLayerDenseParams(d) / t + p.expertWeights;
        p.all = p.layerWeights;
        const double language = m.freezeLanguageModel ? 0.0 : 1.0;
        p.trainable = language * p.layerWeights;
        p.expertTrainable = language * p.expertWeights;
        if (s == 0) {
            const double vision = (counts.visionEncoder + counts.projector) / t;
            p.all += counts.embedding / t + vision;
            p.embedding = counts.embedding / t;
            p.trainable += language * counts.embedding / t + (l.freezeVision ? 0.0 : vision);
            p.visionTrainable = l.freezeVision ? 0.0 : vision;
            p.lastReady = language * counts.embedding / t + p.visionTrainable;
        }
        if (s == std::max(1, l.pp) - 1) {
            p.all += counts.outputLayer / t;
            p.trainable += language * counts.outputLayer / t;
        }
        if (p.all > best.all)
            best = p;
    }
    return best;
}

struct StageTime {
    double expert = 0, dense = 0, attention = 0, vision = 0, recompute = 0, elementwise = 0, overhead = 0;
    double linearAttention = 0;   // gated DeltaNet's conv + delta rule (hybrid decoders)
    double attentionForward = 0;  // the forward's share of `attention` (what a recompute repeats)
    double epComm = 0, tpComm = 0, cpComm = 0, ppComm = 0, fsdpComm = 0;
    double total() const
    {
        return expert + dense + attention + linearAttention + vision + recompute + elementwise + overhead + epComm + tpComm + cpComm + ppComm + fsdpComm;
    }
};

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

// moe-train's collectives inside the NVLink domain, as bus bandwidth in B/s: the profile's
// measured rate, else the fraction of the NVLink bandwidth measured on 2×H200 (2026-11-30:
// allreduce 0.45, FSDP reduce-scatter/all-gather with their copies 0.31, EP all-to-all 0.17).
// Beyond the domain, the network at the Megatron factor. `measured` says which.
double moeTrainRate(const Context& c, double measuredGbPerS, double nvlinkFraction, int groupSize, bool* measured = nullptr)
{
    if (measured)
        *measured = measuredGbPerS > 0;
    const double inDomain = measuredGbPerS > 0 ? measuredGbPerS : nvlinkFraction * c.hw.nvlinkGbPerS;
    if (groupSize > c.hw.nvlinkDomainSize)
        return std::min(inDomain, c.hw.networkGbPerS * c.o.eff.networkEfficiency) * 1e9;
    return inDomain * 1e9;
}

// Seconds to move `bytes` per GPU over a group of `groupSize` consecutive ranks: the share of
// peers inside the NVLink domain goes over NVLink, the rest over the network.
double transferSeconds(const Context& c, double bytes, int groupSize, double efficiency)
{
    if (bytes <= 0 || groupSize <= 1)
        return 0;
    const double inDomain = double(std::min(groupSize, c.hw.nvlinkDomainSize)) / groupSize;
    return bytes * (inDomain / (c.hw.nvlinkGbPerS * 1e9) + (1.0 - inDomain) / (c.hw.networkGbPerS * 1e9)) / efficiency;
}

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

TensorParallelTime moeTrainTensorParallel(const Context& c, bool first, bool last, int layers, double b)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    TensorParallelTime out;
    if (l.tp <= 1)
        return out;
    bool arMeasured = false, shardMeasured = false, a2aMeasured = false;
    const double arRate = moeTrainRate(c, c.o.rates.allreduceGbPerS, 0.45, l.tp, &arMeasured);
    const double shardRate = moeTrainRate(c, c.o.rates.shardGbPerS, 0.31, l.tp, &shardMeasured);
    const double a2aRate = moeTrainRate(c, c.o.rates.alltoallGbPerS, 0.17, l.tp, &a2aMeasured);
    const double f = double(l.tp - 1) / l.tp;
    const bool sp = l.sequenceParallel, etp = l.etp == l.tp;
    const double x = c.seq.positions * b / l.cp * d.hiddenSize * 2.0;
    const double allreduce = x * 2.0 * f / arRate, shard = x * f / shardRate, allToAll = x * f / a2aRate;
    const double attention = sp ? 2.0 * shard : allreduce;       // per pass
    const double moe = etp ? (sp ? 2.0 * allToAll : allreduce) : 0.0;
    const bool full = l.recomputeGranularity == "full";
    const bool moeAgain = full || (l.recomputeGranularity == "selective" && contains(l.recomputeModules, "moe"));
    double seconds = layers * (attention * (full ? 3.0 : 2.0) + moe * (moeAgain ? 3.0 : 2.0));
    if (first)
        seconds += allreduce + (sp ? shard : 0.0);  // embedding lookup; under SP its rows split (backward: gathered)
    if (last) {
        const double head = c.seq.labelled * b / l.cp * d.hiddenSize * 2.0;
        seconds += head * 2.0 * f / arRate + (sp ? shard : 0.0);
    }
    if (first && c.visionPerSample > 0 && !c.w.mockTextOnly) {
        const double patches = c.visionSegments(b).sum;
        const double xv = patches * c.m.vision.hiddenSize * 2.0;
        seconds += c.m.vision.numLayers * 2.0 * (l.freezeVision ? 1.0 : 2.0) * xv * 2.0 * f / arRate;
    }
    out.seconds = seconds;
    out.measured = arMeasured && (!sp || (shardMeasured && (!etp || a2aMeasured)));
    return out;
}

// What one pipeline stage's micro-batch is made of, as every part of stageTime reads it.
struct StageShape {
    int layers = 0;
    bool first = false, last = false;
    double peak = 0, gemmPeak = 0;                               // FLOP/s: bf16, and the GEMMs' (FP8 when on)
    double frac = 0;                                             // the stage's share of the decoder's layers
    double shard = 1;                                            // TP × CP: the positions split over ranks
    double b = 1;                                                // micro-batch size
    double tokensRank = 0;                                       // positions per rank (with SP)
    double imbalance = 1;                                        // the most-loaded expert rank's share over the mean
    double width = 0;                                            // the expert FFN width per ETP rank
    bool full = false, selective = false, moeReforward = false;  // recompute
};

StageShape stageShape(const Context& c, int stage, int layers)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    StageShape x;
    x.layers = layers;
    x.first = stage == 0;
    x.last = stage == l.pp - 1;
    x.peak = c.hw.peakDenseBf16Tflops * 1e12;
    x.gemmPeak = x.peak * (c.o.fp8 ? c.o.eff.fp8GemmSpeedup : 1.0);
    x.frac = double(layers) / d.numLayers;
    x.shard = double(l.tp) * l.cp;
    x.b = l.mbs;
    x.tokensRank = c.seq.positions * x.b / x.shard;  // with SP
    // Dropless routing: the most-loaded expert rank sets the pace of the expert GEMMs and receives
    // the most tokens (Workload::expertRankImbalance; 1 with forced balance).
    x.imbalance = c.w.expertRankImbalance(l.ep, d.numMoeExperts);
    x.width = double(d.moeFfnHiddenSize) / l.etp;
    x.full = l.recomputeGranularity == "full";
    x.selective = l.recomputeGranularity == "selective";
    x.moeReforward = x.full || (x.selective && contains(l.recomputeModules, "moe"));
    return x;
}

// The GEMMs, attention, gated DeltaNet and the vision encoder of the stage's micro-batch.
void addComputeTimes(const Context& c, const StageShape& x, StageTime& t)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    const EfficiencyFactors& e = c.o.eff;
    const double peak = x.peak, gemmPeak = x.gemmPeak, frac = x.frac, shard = x.shard, b = x.b, width = x.width;
    const double tokensRank = x.tokensRank, imbalance = x.imbalance;
    const int layers = x.layers;
    const bool first = x.first, last = x.last;
    const double tokensPerExpert = double(l.ep) * l.etp * tokensRank * d.moeRouterTopk / d.numMoeExperts;
    const double groupedEff = e.groupedGemm * tokensPerExpert / (tokensPerExpert + e.groupedGemmHalfTokens) *
                              (width / (width + e.groupedGemmHalfWidth)) /
                              (d.moeFfnHiddenSize / (d.moeFfnHiddenSize + e.groupedGemmHalfWidth));
    // Every position runs through the layers (padding included); moe-train's LM head runs over the
    // labelled tokens only (its fused cross-entropy gathers them), Megatron's over every position.
    const double headTokens = c.moeTrain() ? c.seq.labelled : c.seq.positions;
    t.expert = b * c.split.experts * c.seq.positions * frac / shard * imbalance / (gemmPeak * groupedEff);
    // Megatron's output layer is a plain ColumnParallelLinear, not a TransformerEngine module: its
    // logits GEMMs stay bf16 under an FP8 recipe.
    t.dense = b * c.split.projections * c.seq.positions * frac / shard / (gemmPeak * e.denseGemm) +
              (last ? b * c.split.logits * headTokens / shard / (peak * e.denseGemm) : 0.0);
    const bool fp8Attention = c.o.fp8 && l.fp8DotProductAttention && !c.moeTrain();
    if (const AttentionKernelRate* k = c.decoderKernel()) {
        // moe-train's varlen flash attention, tile by tile at the kernel's measured rates: every
        // packed sample is its own causal segment, so short samples pay diagonal and partial
        // tiles and a CTA each (≈ 4× their FLOPs at ~400 tokens on H200).
        const SegmentMoments seg = c.decoderSegments(b);
        const double heads = double(d.numAttentionHeads) / std::max(1, l.tp);
        t.attentionForward = layers * attentionPassSeconds(k->forward, true, false, seg, heads) / l.cp;
        t.attention = t.attentionForward + layers * attentionPassSeconds(k->backward, true, true, seg, heads) / l.cp;
    } else {
        t.attention = b * c.split.attentionCoef * c.seq.attentionScores * frac / shard /
                      (peak * e.attention * (fp8Attention ? e.fp8AttentionSpeedup : 1.0));
        t.attentionForward = t.attention / 3.0;
    }
    // Gated DeltaNet layers: no quadratic term, their conv and delta rule at their own rate.
    t.linearAttention = b * c.split.linearCore * c.seq.positions * frac / shard / (peak * e.linearAttentionCore);
    if (first && c.visionPerSample > 0) {
        const double share = l.freezeVision ? 1.0 / 3.0 : 1.0;  // frozen: forward only
        if (const AttentionKernelRate* k = c.visionKernel()) {
            // The linear part at the vision efficiency, the per-image attention tile by tile.
            const SegmentMoments seg = c.visionSegments(b);
            const double heads = double(std::max(1, c.m.vision.numAttentionHeads)) / l.tp;
            const double attention = c.m.vision.numLayers * (attentionPassSeconds(k->forward, false, false, seg, heads) +
                                                             (l.freezeVision ? 0.0 : attentionPassSeconds(k->backward, false, true, seg, heads)));
            t.vision = b * c.visionSplit.linear * share / l.tp / (peak * e.vision) + attention;
        } else {
            t.vision = b * c.visionPerSample * share / l.tp / (peak * e.vision);
        }
        t.vision += b * c.w.visionImagesPerSample() * e.perImageOverheadUs * 1e-6 * (l.freezeVision ? 0.5 : 1.0);
    }
}

// Recompute, the memory-bound elementwise passes (FP8 quantization included) and the per-layer
// launch overhead.
void addMemoryBoundTimes(const Context& c, const StageShape& x, StageTime& t)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    const EfficiencyFactors& e = c.o.eff;
    const double tokensRank = x.tokensRank, imbalance = x.imbalance, width = x.width;
    const int layers = x.layers;
    const bool full = x.full, selective = x.selective, moeReforward = x.moeReforward;
    const auto& mods = l.recomputeModules;
    if (full)
        t.recompute = (t.expert + t.dense + t.linearAttention) / 3.0 + t.attentionForward;  // one more forward of every layer
    else if (selective) {
        if (contains(mods, "core_attn"))
            t.recompute += t.attentionForward;
        if (contains(mods, "moe"))
            t.recompute += t.expert / 3.0;
    }
    double elementwiseFactor = 1.0 + (full ? 1.0 / 3.0 : 0.0) +
                               (selective ? 0.05 * (contains(mods, "moe_act") + contains(mods, "layernorm")) : 0.0);
    t.elementwise = layers * tokensRank * e.elementwiseBytesPerHidden * d.hiddenSize * elementwiseFactor / (c.hw.hbmTbPerS * 1e12 * e.hbmEfficiency);
    // Routed (token, expert) pairs on this rank: after the EP dispatch T·k·imbalance, after the ETP
    // all-gather ETP times that with f/ETP-wide activations. Permute, unpermute and SwiGLU are
    // memory-bound kernels over these rows; FP8 adds the quantization of every expert GEMM input.
    const double pairs = tokensRank * d.moeRouterTopk * imbalance * l.etp;
    // TE's op fuser (model.use_transformer_engine_op_fuser; the perf configs' cutedsl_fused_grouped_mlp)
    // runs the expert MLP as fused kernels: the SwiGLU and the FP8 quantization of the GEMM inputs
    // happen inside the GEMMs' prologue/epilogue, so only the permute/unpermute rows stay.
    const bool fusedMlp = l.teOpFuser && !c.moeTrain();
    const double routedBytes = e.routedBytesPerHidden * d.hiddenSize + (fusedMlp ? 0.0 : e.routedBytesPerFfn * width);
    t.elementwise += layers * pairs * routedBytes * (moeReforward ? 4.0 / 3.0 : 1.0) / (c.hw.hbmTbPerS * 1e12 * e.hbmEfficiency);
    // FP8 quantize kernels at their own (lower) bandwidth: the experts' GEMM inputs (unless fused
    // into the GEMMs) and the attention projections' (QKV input h and its gradient q + 2·kv wide,
    // the output projection's input q and gradient h wide, per token, over TP).
    if (c.o.fp8 && !c.moeTrain()) {
        const double fp8Routed = fusedMlp ? 0.0 : e.fp8QuantBytesPerHidden * d.hiddenSize + e.fp8QuantBytesPerFfn * width;
        const double q = double(d.numAttentionHeads) * d.kvChannels, kv = double(d.numQueryGroups) * d.kvChannels;
        const double projectionElements = (2.0 * d.hiddenSize + 2.0 * q + 2.0 * kv) / std::max(1, l.tp);
        const double quantBytes = layers * (pairs * fp8Routed * (moeReforward ? 4.0 / 3.0 : 1.0) +
                                            tokensRank * projectionElements * e.fp8QuantBytesPerElement * (full ? 4.0 / 3.0 : 1.0));
        t.elementwise += quantBytes / (c.hw.hbmTbPerS * 1e12 * e.fp8QuantHbmEfficiency);
    }
    // full_iteration: the whole step is one graph replay, no per-layer launches from the host.
    const bool wholeStep = l.cudaGraphImpl == "full_iteration";
    const bool graphed = l.cudaGraphImpl != "none" && contains(l.cudaGraphScope, "moe_router");
    t.overhead = wholeStep ? 0.0 : layers * (graphed ? e.graphedLayerOverheadUs : e.layerOverheadUs) * 1e-6;
}

// The expert-parallel token exchange (moe-train's NCCL all-to-alls, or Megatron's dispatchers).
void addExpertParallelTime(const Context& c, const StageShape& x, StageTime& t)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    const EfficiencyFactors& e = c.o.eff;
    const double tokensRank = x.tokensRank, imbalance = x.imbalance;
    const int layers = x.layers;
    const bool moeReforward = x.moeReforward;
    if (c.moeTrain() && l.ep > 1) {
        // moe-train's EP (runtime/parallel/expert_parallel.cpp): one NCCL all-to-all of the routed
        // rows per dispatch and per combine, forward and backward, on the training stream; each
        // MoE layer's forward first exchanges the routed counts and waits for them on the host
        // (the splits), which drains the GPU's queue. Rates measured on 2×H200 (profile).
        const double passes = moeReforward ? 6.0 : 4.0;
        const double rowBytes = tokensRank * imbalance * d.hiddenSize * 2.0;
        const double bytes = layers * rowBytes * d.moeRouterTopk * double(l.ep - 1) / l.ep * passes;
        const double sync = c.o.rates.epSyncMs > 0 ? c.o.rates.epSyncMs : 1.6;
        // (ETP's gather and scatter around the experts are TP collectives: moeTrainTensorParallel.)
        t.epComm = bytes / moeTrainRate(c, c.o.rates.alltoallGbPerS, 0.17, l.ep * l.etp) +
                   layers * (moeReforward ? 2.0 : 1.0) * sync * 1e-3;
    } else if (l.ep * l.etp > 1 && !c.moeTrain()) {
        // Dispatch + combine, forward and backward (4 passes; 6 when the MoE block is re-forwarded).
        // The most-loaded rank receives `imbalance` times the mean. Megatron's alltoall dispatcher
        // (token_dispatcher.py: permute → A2A over EP → AG over ETP; RS over ETP → A2A) sends one
        // copy per (token, expert) pair to the EP peers and then all-gathers the received pairs
        // over the ETP group, whose ranks are consecutive (innermost in the expert rank order).
        // The flex dispatcher (DeepEP/HybridEP) replicates the routing map over the ETP ranks and
        // sends each token once per distinct destination rank: a token whose k experts fall on
        // EP·(1 − (1 − 1/EP)^k) distinct EP slots goes to that many × ETP ranks, over the EP·ETP group.
        const double passes = moeReforward ? 6.0 : 4.0;
        const double rowBytes = tokensRank * imbalance * d.hiddenSize * 2.0;
        const bool flex = l.dispatcherType == "flex";
        double seconds = 0;
        if (flex) {
            const int group = l.ep * l.etp;
            const double slots = double(l.ep) * (1.0 - std::pow(1.0 - 1.0 / l.ep, d.moeRouterTopk));
            const double copies = slots * l.etp * double(group - 1) / group;
            seconds = transferSeconds(c, layers * rowBytes * copies * passes, group, e.hybridepEfficiency);
        } else {
            if (l.ep > 1)
                seconds += transferSeconds(c, layers * rowBytes * d.moeRouterTopk * double(l.ep - 1) / l.ep * passes,
                                           l.ep * l.etp, e.alltoallEfficiency);
            if (l.etp > 1)
                seconds += transferSeconds(c, layers * rowBytes * d.moeRouterTopk * double(l.etp - 1) * passes, l.etp,
                                           e.nvlinkEfficiency);
        }
        if (l.overlapMoeExpertParallelComm) {
            // EP overlap hides the communication of one micro-batch behind another's compute
            // (1F1B A2A overlap): it can hide at most that compute, and leaves a fixed share exposed.
            const double hideable = t.expert + t.dense + t.attention;
            seconds = std::max(seconds * e.epOverlapExposed, seconds - hideable);
        }
        t.epComm = seconds;
    }
}

// Tensor-, context- and pipeline-parallel traffic, and FSDP's per micro-batch.
void addParallelTimes(const Context& c, const StageShape& x, StageTime& t)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    const EfficiencyFactors& e = c.o.eff;
    const double b = x.b, tokensRank = x.tokensRank;
    const int layers = x.layers;
    const bool first = x.first, last = x.last;
    if (l.tp > 1 && c.moeTrain()) {
        t.tpComm = moeTrainTensorParallel(c, first, last, layers, b).seconds;
    } else if (l.tp > 1) {
        const double bytes = layers * 8.0 * double(c.w.seqLength) / l.cp * b * d.hiddenSize * 2.0 * double(l.tp - 1) / l.tp;
        t.tpComm = transferSeconds(c, bytes, l.tp, e.nvlinkEfficiency) * e.tpExposed;
    }
    if (l.cp > 1) {
        const double kv = double(d.numQueryGroups) * d.kvChannels;
        const double bytes = layers * 3.0 * 2.0 * kv * tokensRank * l.tp * 2.0 * double(l.cp - 1) / l.tp;
        t.cpComm = transferSeconds(c, bytes, l.cp * l.tp, e.nvlinkEfficiency) * e.cpExposed;
    }
    if (l.pp > 1) {
        // Activation forward, gradient back, once per model chunk: with VPP each micro-batch
        // crosses every rank v times. Adjacent stages are world/PP ranks apart: NVLink while that
        // stride stays inside the NVLink domain, the network beyond.
        const double bytes = 2.0 * tokensRank * d.hiddenSize * 2.0 * l.vpp;
        const bool crossesDomain = l.worldSize / l.pp >= c.hw.nvlinkDomainSize;
        t.ppComm = bytes / ((crossesDomain ? c.hw.networkGbPerS * e.networkEfficiency : c.hw.nvlinkGbPerS * e.nvlinkEfficiency) * 1e9);
    }
    if (c.moeTrain() && l.useMegatronFsdp && (l.fsdpStrategy == "optim_grads" || l.fsdpStrategy == "optim_grads_params")) {
        // moe-train's FSDP (runtime/parallel/fsdp.h) per micro-batch. ZeRO-2: every trainable
        // gradient reduce-scattered after the micro-batch's backward, before the next one starts.
        // ZeRO-3: each vision block and decoder layer all-gathered before its forward (the next
        // one prefetched: hidden up to the forward's compute), again before its backward unless
        // kept gathered (hidden up to the backward's), its gradients reduce-scattered right after
        // it (exposed), the root unit (embedding, output, projector) reduce-scattered once.
        // Shards and gathers are fp32 (4 B), reductions fp32 or bf16 (grad_reduce_in_fp32).
        const RankParameters& p = c.params;
        const int dpN = std::max(1, l.dp()) * l.cp, edpN = std::max(1, l.edp());
        const double gradBytes = l.gradReduceInFp32 ? 4.0 : 2.0;
        const double share = double(layers) / std::max(1, d.numLayers / std::max(1, l.pp));
        const double layerDense = std::max(0.0, p.layerWeights - p.expertWeights) * share + (first ? p.visionTrainable : 0.0);
        const double layerExperts = p.expertWeights * share;
        const double shardDense = (dpN - 1.0) / dpN, shardExperts = (edpN - 1.0) / edpN;
        const double rate = moeTrainRate(c, c.o.rates.shardGbPerS, 0.31, std::max(dpN, edpN));
        const double forward = (t.expert + t.dense + t.attention + t.vision + t.elementwise) / 3.0;
        const double backward = 2.0 * forward;
        if (l.fsdpStrategy == "optim_grads") {
            t.fsdpComm = (p.denseTrainable() * shardDense + p.expertTrainable * shardExperts) * gradBytes / rate;
        } else {
            const double gather = (layerDense * shardDense + layerExperts * shardExperts) * 4.0 / rate;
            const double rootDense = std::max(0.0, p.denseTrainable() - (p.layerWeights - p.expertWeights) - p.visionTrainable);
            const double reduce = (layerDense * shardDense + layerExperts * shardExperts) * gradBytes / rate +
                                  (first || last ? rootDense * shardDense * gradBytes / rate : 0.0);
            t.fsdpComm = std::max(0.0, gather - forward) + (l.fsdpReshardAfterForward ? std::max(0.0, gather - backward) : 0.0) +
                         reduce;
        }
    } else if (!c.moeTrain() && l.useMegatronFsdp && l.fsdpStrategy == "optim_grads_params") {
        const double dense = layers * decoderLayerDenseParams(d) / l.tp;
        const double experts = layers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp;
        const int dpN = std::max(1, l.dp()) * l.cp, edpN = std::max(1, l.edp());
        const double bytes = dense * 8.0 * (dpN - 1.0) / dpN + experts * 8.0 * (edpN - 1.0) / edpN;  // AG fwd, AG bwd, RS
        t.fsdpComm = transferSeconds(c, bytes, std::max(dpN, edpN) * 1, e.nvlinkEfficiency) * e.dpExposed;
        // The DP group is strided across the world: it stays in NVLink only if the world does.
        if (l.worldSize > c.hw.nvlinkDomainSize)
            t.fsdpComm = bytes / (c.hw.networkGbPerS * 1e9 * e.networkEfficiency) * e.dpExposed;
    }
}

StageTime stageTime(const Context& c, int stage, int layers)
{
    const StageShape x = stageShape(c, stage, layers);
    StageTime t;
    addComputeTimes(c, x, t);
    addMemoryBoundTimes(c, x, t);
    addExpertParallelTime(c, x, t);
    addParallelTimes(c, x, t);
    return t;
}

// moe-train's overlapped optimizer step (runtime/train/optimizer_overlap.h): the update stream
// runs the parts in forward order while the host queues the next step and its forward waits for
// each part. What it can hide is bounded by what the GPU can run beside it: the update is
// memory-bound (28–30 B per value) and so is much of the forward beside it. Measured on one H200
// (docs/benchmarks.md, 2026-12-05): with grid-stride kernels that hold every SM the 32 ms of
// updates hid 2.3 ms; with one-pass blocks that free SMs between blocks, 3.5 ms of 40 — the
// exposed update fell to 5.5 ms while the forward grew by 26.5 ms (HBM shared with the updates).
// Either way about the host gap: exposed = updates − host gap.
double overlappedOptimizerSeconds(double updateSeconds, double hostGap)
{
    return std::max(0.0, updateSeconds - hostGap);
}

// The step's terms as estimate() collects them: name, seconds, how sure, and why — the text built
// only when asked for (ThroughputOptions::explain; a search evaluates thousands of candidates).
class TermList {
public:
    TermList(ThroughputEstimate& est, bool explain) : m_est(est), m_explain(explain) {}
    template <typename Why>
    void add(const char* name, double seconds, TermBasis basis, Why&& why)
    {
        if (seconds > 0)
            m_est.terms.push_back(m_explain ? TimeTerm{name, seconds * 1e3, why(), termGroup(name), basis}
                                            : TimeTerm{{}, seconds * 1e3, {}, termGroup(name), basis});
    }

private:
    ThroughputEstimate& m_est;
    bool m_explain;
};

TermBasis measuredIf(bool measured)
{
    return measured ? TermBasis::Measured : TermBasis::Assumed;
}

#define WB_TERM(name, seconds, basis, why) terms.add(name, seconds, basis, [&] { return std::string(why); })

// Every micro-batch's terms (the slowest stage's), and the pipeline bubble.
void addMicroBatchTerms(const Context& c, const StageTime& slowest, double micro, double bubble, TermList& terms)
{
    const ModelConfig& m = c.m;
    const Layout& l = c.l;
    const HardwareSpec& hw = c.hw;
    const ThroughputOptions& o = c.o;
    using B = TermBasis;
    const std::string per = " × " + fmt(micro, 0) + " micro-batches";
    // Confidence: on Blackwell the published Megatron rows run slower than this model, in MXFP8
    // and in BF16 alike (docs/planner.md "Published rows"); said where it applies, not corrected.
    const std::string blackwellFp8 =
        hw.smMajor() >= 10 && !c.moeTrain()
            ? "; NOT validated on Blackwell: Megatron's published Qwen3 rows measure 0.58–0.82× of this model's "
              "throughput in MXFP8 and 0.55–0.58× in BF16 (Qwen3-30B-A3B, 16×GB200; H100 rows: 0.99–1.3×)"
            : "";
    WB_TERM("expert GEMMs", micro * slowest.expert, B::Assumed,
            "grouped GEMM at " + fmt(o.eff.groupedGemm) + " × saturation in tokens per expert" + per + blackwellFp8);
    WB_TERM("projection + logits GEMMs", micro * slowest.dense, B::Assumed, "dense GEMMs at " + fmt(o.eff.denseGemm) + " of peak" + per);
    const AttentionKernelRate* decoderKernel = c.decoderKernel();
    const AttentionKernelRate* visionKernel = c.visionKernel();
    WB_TERM("gated DeltaNet core", micro * slowest.linearAttention, TermBasis::Assumed,
            "the causal conv and the chunked delta rule of the " + std::to_string(m.decoder.linearAttentionLayers(m.decoder.numLayers)) +
                " gated DeltaNet layers (Megatron's FLOP count) at " + fmt(o.eff.linearAttentionCore) +
                " of peak (assumed: chunked Triton kernels, not measured)" + per);
    WB_TERM("core attention", micro * slowest.attention, measuredIf(decoderKernel),
            decoderKernel
                ? "varlen flash attention tile by tile (one causal segment per packed sample: " +
                      fmt(c.decoderSegments(1).count, 1) + " per sequence, Σs² " + fmtCount(c.decoderSegments(1).sumSquares) +
                      "), forward " + fmt(decoderKernel->forward.nsPerTile, 1) + " ns per " +
                      std::to_string(decoderKernel->forward.blockM) + "×" + std::to_string(decoderKernel->forward.blockN) +
                      " tile, backward " + fmt(decoderKernel->backward.nsPerTile, 1) + " ns per " +
                      std::to_string(decoderKernel->backward.blockM) + "×" + std::to_string(decoderKernel->backward.blockN) +
                      " tile, plus per-CTA and per-token costs (measured: " + o.rates.attentionSource + ")" + per
                : "flash attention at " + fmt(o.eff.attention) + " of peak" +
                      (o.fp8 && l.fp8DotProductAttention && !c.moeTrain() ? " × " + fmt(o.eff.fp8AttentionSpeedup) + " (FP8 attention)" : "") +
                      (c.moeTrain() ? " (assumed: no measured attention kernel for d " + std::to_string(m.decoder.kvChannels) +
                                          " on this hardware)"
                                    : "") +
                      per);
    WB_TERM("vision encoder", micro * slowest.vision, visionKernel ? B::PartlyMeasured : B::Assumed,
            visionKernel ? "ViT GEMMs + mergers at " + fmt(o.eff.vision) + " of peak, per-image attention tile by tile (" +
                               fmt(c.visionSegments(1).count, 1) + " images per sequence, measured kernel: " +
                               o.rates.attentionSource + ") + per-image overhead" + per
                         : "ViT + mergers at " + fmt(o.eff.vision) + " of peak + per-image overhead" + per);
    WB_TERM("recompute", micro * slowest.recompute, B::Assumed, "extra forward of recomputed parts (" + l.recomputeGranularity + ")" + per);
    WB_TERM("memory-bound elementwise", micro * slowest.elementwise, B::Assumed, fmt(o.eff.elementwiseBytesPerHidden, 0) + "·h bytes per token per layer + routed permute/unpermute/SwiGLU" + std::string(o.fp8 ? "/FP8 quantize" : "") + " traffic per (token, expert) pair at " + fmt(o.eff.hbmEfficiency) + " of HBM bandwidth" + per);
    WB_TERM("per-layer overhead", micro * slowest.overhead, B::Assumed, "router/permute/launch overhead per layer" + per);
    WB_TERM("EP all-to-all (exposed)", micro * slowest.epComm, measuredIf(c.moeTrain() && o.rates.alltoallGbPerS > 0),
            c.moeTrain()
                ? "moe-train: NCCL all-to-all of the routed rows, dispatch + combine fwd/bwd, at " +
                      fmt(moeTrainRate(c, o.rates.alltoallGbPerS, 0.17, l.ep * l.etp) / 1e9, 0) + " GB/s, + " +
                      fmt(o.rates.epSyncMs > 0 ? o.rates.epSyncMs : 1.6, 2) +
                      " ms per MoE layer forward while the host waits for the routed counts" +
                      (o.rates.alltoallGbPerS > 0 ? " (measured: " + o.rates.collectivesSource + ")"
                                                  : " (assumed: rates measured on 2×H200)") + per
                :
            l.dispatcherName() + ", dispatch + combine fwd/bwd" +
                (l.dispatcherType == "flex" ? ", one copy per distinct destination rank" : ", one copy per (token, expert) pair") +
                (l.etp > 1 ? (l.dispatcherType == "flex" ? " × ETP ranks" : " + all-gather over ETP") : "") +
                ", routing imbalance " + fmt(c.w.expertRankImbalance(l.ep, m.decoder.numMoeExperts)) +
                ", NVLink inside the domain, network beyond" +
                (l.overlapMoeExpertParallelComm ? "; EP overlap hides up to the compute" : "") + per);
    if (c.moeTrain()) {
        const bool tpMeasured = l.tp > 1 && moeTrainTensorParallel(c, true, true, 1, 1).measured;
        WB_TERM("TP/SP collectives (exposed)", micro * slowest.tpComm, measuredIf(tpMeasured),
                std::string("moe-train: every TP collective waited for on the training stream; per decoder layer ") +
                    (l.sequenceParallel ? "all-gather + reduce-scatter around the attention" : "the attention's allreduce") +
                    (l.etp == l.tp ? (l.sequenceParallel ? ", the MoE's rows gathered and scattered as all-to-alls"
                                                         : ", the MoE's allreduce")
                                   : "") +
                    " (each in both passes), the vision blocks' two allreduces per pass, the vocabulary-parallel "
                    "embedding and LM head; bf16 rows at the " +
                    (tpMeasured ? "measured rates (" + o.rates.collectivesSource + ")" : std::string("assumed NVLink fractions")) +
                    "; the per-layer row-count exchange under SP is not modelled" + per);
    } else {
        WB_TERM("TP/SP collectives (exposed)", micro * slowest.tpComm, B::Assumed,
                "4 all-gathers + 4 reduce-scatters per layer, " + fmt(o.eff.tpExposed) + " exposed");
    }
    WB_TERM("CP ring (exposed)", micro * slowest.cpComm, B::Assumed, "K/V exchange, " + fmt(o.eff.cpExposed) + " exposed");
    WB_TERM("PP send/recv", micro * slowest.ppComm, B::Assumed, "activations and their gradients between stages");
    WB_TERM("FSDP collectives (exposed)", micro * slowest.fsdpComm, measuredIf(c.moeTrain() && o.rates.shardGbPerS > 0),
            c.moeTrain() ? (l.fsdpStrategy == "optim_grads"
                                ? std::string("every gradient reduce-scattered after each micro-batch's backward (moe-train ZeRO-2)")
                                : std::string("per layer: fp32 all-gather before its forward (prefetched: hidden up to the forward's "
                                              "compute)") +
                                      (l.fsdpReshardAfterForward ? " and again before its backward (hidden up to the backward's)" : "") +
                                      ", its gradients reduce-scattered after it (exposed); moe-train ZeRO-3") +
                               " at " + fmt(moeTrainRate(c, o.rates.shardGbPerS, 0.31, std::max(1, l.dp()) * l.cp) / 1e9, 0) + " GB/s" + per
                         : "per micro-batch all-gather ×2 + reduce-scatter, " + fmt(o.eff.dpExposed) + " exposed");
    WB_TERM("pipeline bubble", bubble * slowest.total(), B::Assumed, "(p−1)/v = " + fmt(bubble) + " micro-batch slots idle");
}

// The most-loaded stage's parameters (Megatron's count: dense with the embedding, and the local
// experts) and the groups that shard or reduce them.
struct StageShares {
    double dense = 0, experts = 0;
    int dpN = 1, edpN = 1;
};

StageShares stageShares(const Context& c, const std::vector<int>& stages)
{
    const Layout& l = c.l;
    const DecoderConfig& d = c.m.decoder;
    const int layers = stages.empty() ? d.numLayers / l.pp : *std::max_element(stages.begin(), stages.end());
    StageShares out;
    out.dense = layers * decoderLayerDenseParams(d) / l.tp + countParameters(c.m).embedding / l.tp;
    out.experts = layers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp;
    out.dpN = std::max(1, l.dp()) * l.cp;
    out.edpN = std::max(1, l.edp());
    return out;
}

// Per-step collectives outside the micro-batch loop: the data-parallel gradient and parameter
// traffic of moe-train (DDP allreduce, or its FSDP) or of Megatron.
void addStepCollectives(const Context& c, const StageShares& shares, const StageTime& slowest, TermList& terms)
{
    const ModelConfig& m = c.m;
    const Layout& l = c.l;
    const HardwareSpec& hw = c.hw;
    const ThroughputOptions& o = c.o;
    using B = TermBasis;
    const double dense = shares.dense, experts = shares.experts;
    const int dpN = shares.dpN, edpN = shares.edpN;
    // The most-loaded stage's parameters, for moe-train's DP allreduce and its own passes below.
    const RankParameters& p = c.params;
    if (c.moeTrain() && !l.useMegatronFsdp) {
        // moe-train's data parallelism (runtime/parallel/gradient_reducer.h): the fp32 gradients
        // themselves are allreduced (ring: 2(n−1)/n × 4 B per parameter sent by each rank), in
        // buckets launched as the last micro-batch's backward produces them. That backward hides
        // at most its own length, and the gradients produced last — the first stage's embedding
        // and vision encoder — are reduced after it in any case.
        const double expertGrads = m.freezeLanguageModel ? 0.0 : p.expertWeights;
        const double otherGrads = std::max(0.0, p.trainable - expertGrads);
        const double bytes = otherGrads * 8.0 * (dpN - 1.0) / dpN + expertGrads * 8.0 * (edpN - 1.0) / edpN;
        if (bytes > 0) {
            bool measuredRate = false;
            const double comm = bytes / moeTrainRate(c, o.rates.allreduceGbPerS, 0.45, l.worldSize, &measuredRate);
            // The backward of one micro-batch: 2/3 of its compute (backward = 2 × forward).
            const double backward = 2.0 / 3.0 * (slowest.expert + slowest.dense + slowest.attention + slowest.linearAttention + slowest.vision +
                                                 slowest.elementwise);
            // The share of the allreduced bytes whose gradients are ready only when the backward ends.
            const double tail = bytes > 0 ? std::min(1.0, p.lastReady * 8.0 * (dpN - 1.0) / dpN / bytes) : 0.0;
            const double exposed = l.overlapGradReduce ? std::max(comm - backward, comm * tail) : comm;
            WB_TERM("DP gradient allreduce (exposed)", exposed, measuredIf(measuredRate),
                    "fp32 gradients allreduced in buckets (2(n−1)/n × 4 B per parameter), " +
                        std::string(l.overlapGradReduce
                                        ? "overlapped with the last micro-batch's backward (it hides at most that "
                                          "backward; the embedding's and vision's gradients, ready last, are not hidden)"
                                        : "after the backward (overlap_grad_reduce off)") +
                        ", at " + fmt(moeTrainRate(c, o.rates.allreduceGbPerS, 0.45, l.worldSize) / 1e9, 0) + " GB/s bus bandwidth" +
                        (measuredRate ? " (measured: " + o.rates.collectivesSource + ")"
                                      : " (assumed: 0.45 of NVLink, the fraction measured on 2×H200)"));
        }
    } else if (c.moeTrain()) {
        // moe-train's FSDP per step (runtime/parallel/fsdp.h): ZeRO-1 reduce-scatters the
        // accumulated gradients after the last micro-batch's backward; ZeRO-1 and ZeRO-2 then
        // all-gather the updated fp32 shards into the parameters after the step. Both wait for
        // the collective (nothing to overlap them with). ZeRO-3's parameters stay sharded.
        bool measuredRate = false;
        const double rate = moeTrainRate(c, o.rates.shardGbPerS, 0.31, std::max(dpN, edpN), &measuredRate);
        const double values = p.denseTrainable() * (dpN - 1.0) / dpN + p.expertTrainable * (edpN - 1.0) / edpN;
        const std::string why = " at " + fmt(rate / 1e9, 0) + " GB/s bus bandwidth" +
                                (measuredRate ? " (measured: " + o.rates.collectivesSource + ")"
                                              : " (assumed: 0.31 of NVLink, the fraction measured on 2×H200)");
        if (l.fsdpStrategy == "optim")
            WB_TERM("FSDP gradient reduce-scatter", values * (l.gradReduceInFp32 ? 4.0 : 2.0) / rate, measuredIf(measuredRate),
                    "the accumulated gradients reduce-scattered once per step after the backward (" +
                        std::string(l.gradReduceInFp32 ? "fp32" : "bf16") + ")" + why);
        if (l.fsdpStrategy == "optim" || l.fsdpStrategy == "optim_grads")
            WB_TERM("FSDP parameter all-gather", values * 4.0 / rate, measuredIf(measuredRate),
                    "the updated fp32 shards all-gathered into the parameters after the optimizer step" + why);
    } else if (!(l.useMegatronFsdp && l.fsdpStrategy == "optim_grads_params")) {
        const double bytes = dense * 6.0 * (dpN - 1.0) / dpN + experts * 6.0 * (edpN - 1.0) / edpN;
        const bool inDomain = l.worldSize <= hw.nvlinkDomainSize;
        const double bw = inDomain ? hw.nvlinkGbPerS * o.eff.nvlinkEfficiency : hw.networkGbPerS * o.eff.networkEfficiency;
        // Without overlap_grad_reduce (not FSDP, which has its own) the whole reduction follows backward.
        const double exposed = l.useMegatronFsdp || l.overlapGradReduce ? o.eff.dpExposed : 1.0;
        WB_TERM("DP grad/param collectives (exposed)", bytes / (bw * 1e9) * exposed, B::Assumed,
             "fp32 grad reduce-scatter + bf16 param all-gather once per step, " + fmt(exposed) + " exposed" +
                 (exposed == 1.0 ? " (overlap_grad_reduce off)" : ""));
    }
}

// The optimizer step and, for moe-train, its own passes over the parameters (casts or gradient
// widening, the gradient norm, AdamW, the host gap), at the rates measured on this GPU.
void addOptimizerTerms(const Context& c, const StageShares& shares, double micro, TermList& terms)
{
    const double dense = shares.dense, experts = shares.experts;
    const int dpN = shares.dpN, edpN = shares.edpN;
    using B = TermBasis;
    const ModelConfig& m = c.m;
    const Layout& l = c.l;
    const Workload& w = c.w;
    const HardwareSpec& hw = c.hw;
    const ThroughputOptions& o = c.o;
    const RankParameters& p = c.params;
    const std::string per = " × " + fmt(micro, 0) + " micro-batches";
    if (c.moeTrain()) {
        // moe-train's own passes (runtime/train: trainer.cpp, optimizer.cpp, fused_adamw.cpp), on
        // the most-loaded stage's parameters, at the rates measured on this GPU (RuntimeRates).
        const double hbm = hw.hbmTbPerS * 1e3;  // GB/s
        const bool measured = !o.rates.source.empty();
        const double castRate = o.rates.castGbPerS > 0 ? o.rates.castGbPerS : 0.55 * hbm;
        const double adamRate = o.rates.optimizerGbPerS > 0 ? o.rates.optimizerGbPerS : 0.83 * hbm;
        const double normRate = o.rates.reduceGbPerS > 0 ? o.rates.reduceGbPerS : 0.74 * hbm;
        const double gapMs = o.rates.stepGapMs > 0 ? o.rates.stepGapMs : 6.0;
        const std::string rateWhy = measured ? " (measured: the catalog's moe-train profile for " + hw.name + ")"
                                             : " (assumed: the fraction of HBM bandwidth measured on H200)";
        // Autocast casts every fp32 weight a forward uses to bf16 once per micro-batch (the experts
        // through their own MasterToBf16 pass), 4 + 2 B; backward widens each trainable weight's
        // bf16 gradient back to fp32, 2 + 4 B. A re-forward (full recompute; selective "moe")
        // casts its layers' weights again.
        // With train.bf16_weight_copies (bf16_weights.h; not FSDP) the forward casts nothing: the
        // AdamW pass writes each updated weight's bf16 copy (2 B more per value, below).
        const bool kept = l.bf16WeightCopies && !l.useMegatronFsdp;
        const bool full = l.recomputeGranularity == "full";
        const bool moeAgain = l.recomputeGranularity == "selective" && contains(l.recomputeModules, "moe");
        const double recast = full ? p.layerWeights : moeAgain ? p.expertWeights : 0.0;
        const double castValues = kept ? 0.0 : p.all + recast;
        WB_TERM(kept ? "gradient widening" : "weight casts (autocast)",
                micro * (6.0 * castValues + 6.0 * p.trainable) / (castRate * 1e9), measuredIf(measured),
                (kept ? std::string("no weight casts in the forward (bf16 copies kept by train.bf16_weight_copies); ")
                      : "fp32 → bf16 weight copies per forward (" + fmtCount(castValues) + " values) and ") +
                    "bf16 → fp32 gradients per backward (" + fmtCount(p.trainable) + "), 6 B each, at " +
                    fmt(castRate, 0) + " GB/s" + rateWhy + per);
        // clip_grad: one pass reading every fp32 gradient for the global norm before the step.
        WB_TERM("gradient-norm pass", p.trainable * 4.0 / (normRate * 1e9), measuredIf(measured),
                "reads 4 B per trainable parameter at " + fmt(normRate, 0) + " GB/s" + rateWhy);
        // Fused AdamW over every trainable parameter of the rank (moe-train has no distributed
        // optimizer; FSDP shards it): param, grad, m, v read, param, m, v written.
        const double owned = l.useMegatronFsdp ? p.denseTrainable() / std::max(1, dpN) + p.expertTrainable / std::max(1, edpN)
                                               : p.trainable;
        const double adamBytes = w.bf16AdamMoments ? 20.0 : 28.0;
        // The kept copies of the trainable GEMM weights (all but the embedding) are written too.
        const double copied = kept ? std::max(0.0, p.trainable - (m.freezeLanguageModel ? 0.0 : p.embedding)) : 0.0;
        const double adamSeconds = (owned * adamBytes + copied * 2.0) / (adamRate * 1e9);
        const std::string adamWhy = fmt(adamBytes, 0) + " B per trainable parameter (fp32 param and grad, " +
                                    std::string(w.bf16AdamMoments ? "bf16" : "fp32") + " m and v)" +
                                    (kept ? " + 2 B per kept bf16 copy (" + fmtCount(copied) + ")" : std::string()) +
                                    " in one fused pass at " + fmt(adamRate, 0) + " GB/s" + rateWhy;
        if (l.overlapOptimizer && !l.useMegatronFsdp) {
            const double exposed = overlappedOptimizerSeconds(adamSeconds, gapMs * 1e-3);
            WB_TERM("optimizer step", exposed, measuredIf(measured),
                    "exposed " + fmt(exposed * 1e3, 1) + " of " + fmt(adamSeconds * 1e3, 1) + " ms: " + adamWhy +
                        ", on a side stream while the host queues the next step (train.overlap_optimizer; the "
                        "forward shares the HBM with it, so about the host gap is hidden)");
        } else {
            WB_TERM("optimizer step", adamSeconds, measuredIf(measured), adamWhy);
        }
        WB_TERM("host gap per step", gapMs * 1e-3, measuredIf(measured),
                "GPU idle while the step synchronizes and the next step's first micro-batch is queued" + rateWhy);
    } else {
        const bool sharded = l.useDistributedOptimizer || l.useMegatronFsdp;
        const double owned = sharded ? dense / dpN + experts / edpN : dense + experts;
        // bf16 moments: m and v each read and written in 2 instead of 4 bytes (8 B less per parameter).
        const double stepBytes = o.eff.optimizerBytesPerParam - (w.bf16AdamMoments ? 8.0 : 0.0);
        WB_TERM("optimizer step", owned * stepBytes / (hw.hbmTbPerS * 1e12), B::Assumed,
                fmt(stepBytes, 0) + " B of HBM traffic per locally owned parameter" +
                    (w.bf16AdamMoments ? std::string(" (bf16 Adam moments: 8 B less)") : std::string()));
    }
}

#undef WB_TERM

// A calibration (plan --calibrate, --calibrate-run) scales the terms: one factor for the step and
// one per group of terms.
void applyCalibration(const ThroughputOptions& o, ThroughputEstimate& est)
{
    for (TimeTerm& t : est.terms) {
        const double group = t.group == TermGroup::Vision      ? o.eff.visionTimeFactor
                             : t.group == TermGroup::Optimizer ? o.eff.optimizerTimeFactor
                             : t.group == TermGroup::Compute   ? o.eff.computeTimeFactor
                                                               : 1.0;
        t.ms *= o.eff.stepTimeFactor * group;
        if (o.eff.stepTimeFactor != 1.0 || group != 1.0)
            t.basis = TermBasis::Calibrated;
        if (o.explain && o.eff.stepTimeFactor != 1.0)
            t.assumption += "; × " + fmt(o.eff.stepTimeFactor) + " (calibrated from stored runs)";
        if (o.explain && group != 1.0)
            t.assumption += "; × " + fmt(group, 3) + " (calibrated per term: " + o.eff.termCalibration + ")";
        est.stepMs += t.ms;
    }
}

ThroughputEstimate estimate(const ModelConfig& m, const Layout& l, const Workload& w, const HardwareSpec& hw,
                            const ThroughputOptions& o)
{
    Context c{m,
              l,
              w,
              hw,
              o,
              splitDecoderFlops(m.decoder),
              sequenceShape(m, w),
              visionFlopsOfSample(m, w),
              o.runtime == TrainingRuntime::MoeTrain ? rankParameters(m, l) : RankParameters{},
              visionFlopsSplit(m, w)};
    ThroughputEstimate est;
    est.runtime = trainingRuntimeName(o.runtime);
    const double samples = l.gbs;
    est.visionFlopsPerStep = samples * c.visionPerSample;
    // DESIGN.md §3.2: Megatron's decoder FLOPs over the effective tokens (the attention over each
    // packed sample), plus the vision term.
    const double decoderPerSample =
        (c.split.experts + c.split.projections + c.split.logits + c.split.linearCore) * c.seq.effective +
        c.split.attentionCoef * c.seq.attentionScores;
    est.modelFlopsPerStep = samples * decoderPerSample + est.visionFlopsPerStep;
    est.effectiveTokensPerStep = samples * c.seq.effective;

    const std::vector<int> stages = layersPerStage(l, m.decoder.numLayers);
    StageTime slowest;
    for (int s = 0; s < l.pp; ++s) {
        const int layers = stages.empty() ? (m.decoder.numLayers + l.pp - 1) / l.pp : stages[size_t(s)];
        StageTime t = stageTime(c, s, layers);
        if (t.total() > slowest.total())
            slowest = t;
    }
    const double micro = std::max(1, l.numMicroBatches());
    const double bubble = l.pp > 1 ? double(l.pp - 1) / l.vpp : 0.0;
    TermList terms(est, o.explain);
    addMicroBatchTerms(c, slowest, micro, bubble, terms);
    const StageShares shares = stageShares(c, stages);
    addStepCollectives(c, shares, slowest, terms);
    addOptimizerTerms(c, shares, micro, terms);
    applyCalibration(o, est);
    const double seconds = est.stepMs / 1e3;
    const double world = l.worldSize;
    est.tokensPerSecPerGpu = est.effectiveTokensPerStep / seconds / world;
    est.tflopsPerGpu = est.modelFlopsPerStep / seconds / world / 1e12;
    est.mfu = est.tflopsPerGpu / hw.peakDenseBf16Tflops;
    return est;
}

}  // namespace

TermGroup termGroup(std::string_view name)
{
    if (name == "vision encoder")
        return TermGroup::Vision;
    if (name == "optimizer step" || name == "gradient-norm pass")
        return TermGroup::Optimizer;
    if (name == "host gap per step")
        return TermGroup::Fixed;
    return TermGroup::Compute;
}

const char* trainingRuntimeName(TrainingRuntime runtime)
{
    return runtime == TrainingRuntime::MoeTrain ? "moe-train" : "megatron-bridge";
}

const char* termBasisName(TermBasis basis)
{
    switch (basis) {
    case TermBasis::Measured: return "measured";
    case TermBasis::PartlyMeasured: return "partly measured";
    case TermBasis::Calibrated: return "calibrated";
    case TermBasis::Assumed: break;
    }
    return "assumed";
}

std::string describeTermBases(const std::vector<TimeTerm>& terms)
{
    double total = 0, by[4] = {0, 0, 0, 0};
    for (const TimeTerm& t : terms) {
        total += t.ms;
        by[int(t.basis)] += t.ms;
    }
    if (total <= 0)
        return "no terms";
    std::string out;
    for (TermBasis b : {TermBasis::Measured, TermBasis::PartlyMeasured, TermBasis::Calibrated, TermBasis::Assumed}) {
        if (by[int(b)] <= 0)
            continue;
        out += (out.empty() ? "" : ", ") + std::string(termBasisName(b)) + " " + fmt(100.0 * by[int(b)] / total, 0) + " %";
    }
    return out + " of the step";
}

ThroughputEstimate estimateThroughput(const ModelConfig& m, const Layout& l, const Workload& w, const HardwareSpec& hw,
                                      const ThroughputOptions& o)
{
    // (No copy of the workload in the search's hot loop unless the model is text-only.)
    return m.vision.numLayers > 0 ? estimate(m, l, w, hw, o) : estimate(m, l, workloadSeenBy(w, m), hw, o);
}

Workload mockWorkload(Workload w, TrainingRuntime runtime)
{
    w.mock = true;
    w.packed = PackedShape{};  // mock samples are not the measured data: one sample per sequence
    if (runtime == TrainingRuntime::MoeTrain) {
        w.mockTextOnly = true;
        return w;
    }
    w.mockTextOnly = false;
    w.imagesPerSample = 1;
    w.imageWidth = w.imageHeight = 256;
    w.forceBalancedRouting = true;
    return w;
}

std::string describeMockWorkload(TrainingRuntime runtime)
{
    return runtime == TrainingRuntime::MoeTrain
               ? "moe-train's mock data: text only (data.source mock, mock_image_size 0), the same tokens, natural routing"
               : "Megatron-Bridge's mock data (MockVLMSFTDatasetConfig): one 256x256 noise image per sample, padded to "
                 "the sequence, router force-balanced as in Bridge's perf recipes";
}

ThroughputEstimate estimateMockThroughput(const ModelConfig& m, const Layout& l, const Workload& w, const HardwareSpec& hw,
                                          const ThroughputOptions& o)
{
    return estimate(m, l, workloadSeenBy(mockWorkload(w, o.runtime), m), hw, o);
}

MockRealComparison compareMockAndReal(const ModelConfig& m, const Layout& l, const Workload& real, const HardwareSpec& hw,
                                      const ThroughputOptions& o)
{
    MockRealComparison c;
    Workload realSeen = workloadSeenBy(real, m);
    realSeen.mock = realSeen.mockTextOnly = false;
    const Workload mockSeen = workloadSeenBy(mockWorkload(real, o.runtime), m);
    c.real = estimate(m, l, realSeen, hw, o);
    c.mock = estimate(m, l, mockSeen, hw, o);
    c.mockDescription = describeMockWorkload(o.runtime);
    c.realRoutingImbalance = realSeen.expertRankImbalance(l.ep, m.decoder.numMoeExperts);
    c.mockRoutingImbalance = mockSeen.expertRankImbalance(l.ep, m.decoder.numMoeExperts);
    std::map<std::string, MockRealTerm> byName;
    for (const TimeTerm& t : c.real.terms)
        byName[t.name].realMs += t.ms;
    for (const TimeTerm& t : c.mock.terms)
        byName[t.name].mockMs += t.ms;
    for (auto& [name, term] : byName) {
        term.name = name;
        c.terms.push_back(term);
    }
    std::sort(c.terms.begin(), c.terms.end(), [](const MockRealTerm& a, const MockRealTerm& b) {
        return std::abs(a.realMs - a.mockMs) > std::abs(b.realMs - b.mockMs);
    });
    return c;
}

std::string describeMockRealComparison(const MockRealComparison& c, int maxTerms)
{
    const double gap = c.real.stepMs - c.mock.stepMs;
    std::string out = "mock data looks " + fmt(c.mockSpeedup(), 2) + "x as fast as real (step " + fmt(c.mock.stepMs, 1) +
                      " against " + fmt(c.real.stepMs, 1) + " ms";
    if (c.realRoutingImbalance != c.mockRoutingImbalance)
        out += "; routing imbalance " + fmt(c.realRoutingImbalance, 2) + " real, " + fmt(c.mockRoutingImbalance, 2) + " mock";
    out += ")";
    int shown = 0;
    for (const MockRealTerm& t : c.terms) {
        const double d = t.realMs - t.mockMs;
        if (shown == maxTerms || std::abs(d) < 0.005 * std::max(1.0, c.real.stepMs))
            break;
        out += std::string(shown++ ? ", " : ": ") + t.name + " " + (d >= 0 ? "+" : "") + fmt(d, 1) + " ms";
        if (std::abs(gap) > 1e-9)
            out += " (" + fmt(100.0 * d / gap, 0) + " % of the gap)";
    }
    return out;
}

}  // namespace wb::core::planner
