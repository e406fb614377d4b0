// One pipeline stage's micro-batch for the throughput model (throughput_internal.h): GEMM,
// attention and vision compute at named efficiencies or measured kernels, the memory-bound passes,
// the per-layer overhead, and the exposed EP/TP/CP/PP/FSDP traffic. FLOPs always come from
// core/model_flops.h: the split into expert / projection / attention / logits parts is derived
// from decoderFlops itself (by zeroing top-k or layers), so the two can never disagree.
#include "core/planner/throughput_internal.h"

#include "core/text_format.h"

#include <algorithm>
#include <cmath>

namespace wb::core::planner::detail {

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
            p.visionBlocks = l.freezeVision ? 0.0 : counts.visionBlocks / t;
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

// moe-train's collectives inside the NVLink domain, as bus bandwidth in B/s: the profile's
// measured rate, else the fraction of the NVLink bandwidth measured on 2×H200 (2026-11-30:
// allreduce 0.45, FSDP reduce-scatter/all-gather with their copies 0.31, EP all-to-all 0.17).
// Beyond the domain, the network at the Megatron factor. `measured` says which.
double moeTrainCopyRate(const ThroughputOptions& o, const HardwareSpec& hw)
{
    // Measured: moe-train --self-check's 2 GiB copy_ on this GPU; else the fraction of HBM
    // bandwidth it reached on an H200 (4,260 of 4,800 GB/s).
    return o.rates.copyGbPerS > 0 ? o.rates.copyGbPerS : 0.89 * hw.hbmTbPerS * 1e3;
}

double moeTrainRate(const Context& c, double measuredGbPerS, double nvlinkFraction, int groupSize, bool* measured)
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
    const double attention = sp ? 2.0 * shard : allreduce;  // per pass
    const double moe = etp ? (sp ? 2.0 * allToAll : allreduce) : 0.0;
    const bool full = l.recomputeGranularity == "full";
    const bool moeAgain = full || (l.recomputeGranularity == "selective" && contains(l.recomputeModules, "moe"));
    double seconds = layers * (attention * (full ? 3.0 : 2.0) + moe * (moeAgain ? 3.0 : 2.0));
    // Under SP with ETP = TP each MoE layer's forward (and re-forward) first exchanges the ranks'
    // row counts and reads them on the host (tensor_parallel.cpp ExpertTensorParallelRunner:
    // exchangeCounts), which drains the GPU's queue as EP's routed-count wait does: the same
    // measured wait per layer.
    if (sp && etp)
        seconds += layers * (moeAgain ? 2.0 : 1.0) * (c.o.rates.epSyncMs > 0 ? c.o.rates.epSyncMs : 1.6) * 1e-3;
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

namespace {

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
            const double attention =
                c.m.vision.numLayers *
                (attentionPassSeconds(k->forward, false, false, seg, heads) +
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
        t.recompute =
            (t.expert + t.dense + t.linearAttention) / 3.0 + t.attentionForward;  // one more forward of every layer
    else if (selective) {
        if (contains(mods, "core_attn"))
            t.recompute += t.attentionForward;
        if (contains(mods, "moe"))
            t.recompute += t.expert / 3.0;
    }
    double elementwiseFactor = 1.0 + (full ? 1.0 / 3.0 : 0.0) +
                               (selective ? 0.05 * (contains(mods, "moe_act") + contains(mods, "layernorm")) : 0.0);
    t.elementwise = layers * tokensRank * e.elementwiseBytesPerHidden * d.hiddenSize * elementwiseFactor /
                    (c.hw.hbmTbPerS * 1e12 * e.hbmEfficiency);
    // Routed (token, expert) pairs on this rank: after the EP dispatch T·k·imbalance, after the ETP
    // all-gather ETP times that with f/ETP-wide activations. Permute, unpermute and SwiGLU are
    // memory-bound kernels over these rows; FP8 adds the quantization of every expert GEMM input.
    const double pairs = tokensRank * d.moeRouterTopk * imbalance * l.etp;
    // TE's op fuser (model.use_transformer_engine_op_fuser; the perf configs' cutedsl_fused_grouped_mlp)
    // runs the expert MLP as fused kernels: the SwiGLU and the FP8 quantization of the GEMM inputs
    // happen inside the GEMMs' prologue/epilogue, so only the permute/unpermute rows stay.
    const bool fusedMlp = l.teOpFuser && !c.moeTrain();
    const double routedBytes = e.routedBytesPerHidden * d.hiddenSize + (fusedMlp ? 0.0 : e.routedBytesPerFfn * width);
    t.elementwise +=
        layers * pairs * routedBytes * (moeReforward ? 4.0 / 3.0 : 1.0) / (c.hw.hbmTbPerS * 1e12 * e.hbmEfficiency);
    // FP8 quantize kernels at their own (lower) bandwidth: the experts' GEMM inputs (unless fused
    // into the GEMMs) and the attention projections' (QKV input h and its gradient q + 2·kv wide,
    // the output projection's input q and gradient h wide, per token, over TP).
    if (c.o.fp8 && !c.moeTrain()) {
        const double fp8Routed =
            fusedMlp ? 0.0 : e.fp8QuantBytesPerHidden * d.hiddenSize + e.fp8QuantBytesPerFfn * width;
        const double q = double(d.numAttentionHeads) * d.kvChannels, kv = double(d.numQueryGroups) * d.kvChannels;
        const double projectionElements = (2.0 * d.hiddenSize + 2.0 * q + 2.0 * kv) / std::max(1, l.tp);
        const double quantBytes =
            layers * (pairs * fp8Routed * (moeReforward ? 4.0 / 3.0 : 1.0) +
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
        const double bytes =
            layers * 8.0 * double(c.w.seqLength) / l.cp * b * d.hiddenSize * 2.0 * double(l.tp - 1) / l.tp;
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
        t.ppComm =
            bytes /
            ((crossesDomain ? c.hw.networkGbPerS * e.networkEfficiency : c.hw.nvlinkGbPerS * e.nvlinkEfficiency) * 1e9);
    }
    if (c.moeTrain() && l.useMegatronFsdp &&
        (l.fsdpStrategy == "optim_grads" || l.fsdpStrategy == "optim_grads_params")) {
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
        const double layerDense =
            std::max(0.0, p.layerWeights - p.expertWeights) * share + (first ? p.visionBlocks : 0.0);
        const double layerExperts = p.expertWeights * share;
        const double shardDense = (dpN - 1.0) / dpN, shardExperts = (edpN - 1.0) / edpN;
        const double rate = moeTrainRate(c, c.o.rates.shardGbPerS, 0.31, std::max(dpN, edpN));
        const double forward = (t.expert + t.dense + t.attention + t.vision + t.elementwise) / 3.0;
        const double backward = 2.0 * forward;
        // A group of one rank copies its units through the flat buffers instead (kLoneGatherBytes),
        // on the training stream: nothing hides them.
        const double copyRate = moeTrainCopyRate(c.o, c.hw) * 1e9;
        auto lone = [&](double dense, double experts) { return loneGroupParams(dpN, edpN, dense, experts); };
        if (l.fsdpStrategy == "optim_grads") {
            t.fsdpComm = (p.denseTrainable() * shardDense + p.expertTrainable * shardExperts) * gradBytes / rate +
                         lone(p.denseTrainable(), p.expertTrainable) * kLoneReduceBytes / copyRate;
        } else {
            const double gather = (layerDense * shardDense + layerExperts * shardExperts) * 4.0 / rate;
            const double rootDense = p.rootTrainable();
            const double reduce = (layerDense * shardDense + layerExperts * shardExperts) * gradBytes / rate +
                                  (first || last ? rootDense * shardDense * gradBytes / rate : 0.0);
            const double gathers = l.fsdpReshardAfterForward ? 2.0 : 1.0;
            const double copies = lone(layerDense, layerExperts) * (gathers * kLoneGatherBytes + kLoneReduceBytes) +
                                  (first || last ? lone(rootDense, 0.0) * kLoneReduceBytes : 0.0);
            t.fsdpComm = std::max(0.0, gather - forward) +
                         (l.fsdpReshardAfterForward ? std::max(0.0, gather - backward) : 0.0) + reduce +
                         copies / copyRate;
        }
    } else if (!c.moeTrain() && l.useMegatronFsdp && l.fsdpStrategy == "optim_grads_params") {
        const double dense = layers * decoderLayerDenseParams(d) / l.tp;
        const double experts = layers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp;
        const int dpN = std::max(1, l.dp()) * l.cp, edpN = std::max(1, l.edp());
        const double bytes =
            dense * 8.0 * (dpN - 1.0) / dpN + experts * 8.0 * (edpN - 1.0) / edpN;  // AG fwd, AG bwd, RS
        t.fsdpComm = transferSeconds(c, bytes, std::max(dpN, edpN) * 1, e.nvlinkEfficiency) * e.dpExposed;
        // The DP group is strided across the world: it stays in NVLink only if the world does.
        if (l.worldSize > c.hw.nvlinkDomainSize)
            t.fsdpComm = bytes / (c.hw.networkGbPerS * 1e9 * e.networkEfficiency) * e.dpExposed;
    }
}

}  // namespace

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

}  // namespace wb::core::planner::detail
