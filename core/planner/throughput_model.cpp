// Throughput model. Per micro-batch and pipeline stage (throughput_stage.cpp): GEMM/attention/
// vision compute at named efficiencies, memory-bound elementwise work, per-layer overheads,
// exposed EP/TP/CP/FSDP communication. Here: the slowest stage sets the 1F1B rhythm, the bubble
// adds (p−1)/v of it, and the per-step DP collectives and optimizer step follow, each a named
// term with its reason; then the calibration and the rates.
#include "core/planner/throughput_model.h"

#include "core/planner/throughput_internal.h"

#include "core/model_flops.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace wb::core::planner {
using namespace detail;
namespace {

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
                    (l.sequenceParallel ? "all-gather + reduce-scatter around the attention"
                                        : "the attention's allreduce") +
                    (l.etp == l.tp ? (l.sequenceParallel ? ", the MoE's rows gathered and scattered as all-to-alls"
                                                         : ", the MoE's allreduce")
                                   : "") +
                    " (each in both passes), the vision blocks' two allreduces per pass, the vocabulary-parallel "
                    "embedding and LM head; bf16 rows at the " +
                    (tpMeasured ? "measured rates (" + o.rates.collectivesSource + ")"
                                : std::string("assumed NVLink fractions")) +
                    (l.sequenceParallel && l.etp == l.tp
                         ? "; under SP each MoE layer's forward waits on the host for the TP ranks' row counts "
                           "(exchangeCounts), at the measured EP routed-count wait per layer"
                         : std::string()) +
                    per);
    } else {
        WB_TERM("TP/SP collectives (exposed)", micro * slowest.tpComm, B::Assumed,
                "4 all-gathers + 4 reduce-scatters per layer, " + fmt(o.eff.tpExposed) + " exposed");
    }
    WB_TERM("CP ring (exposed)", micro * slowest.cpComm, B::Assumed, "K/V exchange, " + fmt(o.eff.cpExposed) + " exposed");
    WB_TERM("PP send/recv", micro * slowest.ppComm, B::Assumed, "activations and their gradients between stages");
    WB_TERM(
        "FSDP collectives (exposed)", micro * slowest.fsdpComm, measuredIf(c.moeTrain() && o.rates.shardGbPerS > 0),
        c.moeTrain()
            ? (l.fsdpStrategy == "optim_grads"
                   ? std::string("every gradient reduce-scattered after each micro-batch's backward (moe-train ZeRO-2)")
                   : std::string(
                         "per layer: fp32 all-gather before its forward (prefetched: hidden up to the forward's "
                         "compute)") +
                         (l.fsdpReshardAfterForward ? " and again before its backward (hidden up to the backward's)"
                                                    : "") +
                         ", its gradients reduce-scattered after it (exposed); moe-train ZeRO-3") +
                  " at " + fmt(moeTrainRate(c, o.rates.shardGbPerS, 0.31, std::max(1, l.dp()) * l.cp) / 1e9, 0) +
                  " GB/s" +
                  (std::max(1, l.dp()) * l.cp == 1 || std::max(1, l.edp()) == 1
                       ? "; a group of one rank (DP " + std::to_string(std::max(1, l.dp()) * l.cp) + ", expert DP " +
                             std::to_string(std::max(1, l.edp())) +
                             ") copies its units through fsdp.cpp's flat buffers instead (24 B per parameter per "
                             "gather, 32 B per reduce) at " +
                             fmt(moeTrainCopyRate(o, c.hw), 0) + " GB/s"
                       : std::string()) +
                  per
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
        // all-gather the updated fp32 shards into the parameters after the step; ZeRO-3 only its
        // root unit (the layers are gathered when next used). All wait for the collective
        // (nothing to overlap them with).
        bool measuredRate = false;
        const double rate = moeTrainRate(c, o.rates.shardGbPerS, 0.31, std::max(dpN, edpN), &measuredRate);
        const double values = p.denseTrainable() * (dpN - 1.0) / dpN + p.expertTrainable * (edpN - 1.0) / edpN;
        // Groups of one rank: copies instead of collectives (kLoneGatherBytes).
        const double lone = loneGroupParams(dpN, edpN, p.denseTrainable(), p.expertTrainable);
        const double copyRate = moeTrainCopyRate(o, hw) * 1e9;
        const std::string why = " at " + fmt(rate / 1e9, 0) + " GB/s bus bandwidth" +
                                (measuredRate ? " (measured: " + o.rates.collectivesSource + ")"
                                              : " (assumed: 0.31 of NVLink, the fraction measured on 2×H200)");
        auto loneWhy = [&](double params) {
            return params > 0 ? "; in a group of one rank (" + fmtCount(params) +
                                    " parameters) fsdp.cpp copies through its flat buffers instead, at " +
                                    fmt(copyRate / 1e9, 0) + " GB/s" +
                                    (o.rates.copyGbPerS > 0 ? std::string(" (measured: moe-train --self-check)")
                                                            : std::string(" (assumed: 0.89 of HBM, as on an H200)"))
                              : std::string();
        };
        if (l.fsdpStrategy == "optim")
            WB_TERM("FSDP gradient reduce-scatter",
                    values * (l.gradReduceInFp32 ? 4.0 : 2.0) / rate + lone * kLoneReduceBytes / copyRate,
                    measuredIf(measuredRate),
                    "the accumulated gradients reduce-scattered once per step after the backward (" +
                        std::string(l.gradReduceInFp32 ? "fp32" : "bf16") + ")" + why + loneWhy(lone));
        if (l.fsdpStrategy == "optim" || l.fsdpStrategy == "optim_grads")
            WB_TERM("FSDP parameter all-gather", values * 4.0 / rate + lone * kLoneGatherBytes / copyRate,
                    measuredIf(measuredRate),
                    "the updated fp32 shards all-gathered into the parameters after the optimizer step" + why +
                        loneWhy(lone));
        else if (l.fsdpStrategy == "optim_grads_params") {  // the root unit gathered after the step
            const double root = p.rootTrainable();
            WB_TERM("FSDP parameter all-gather",
                    root * (dpN - 1.0) / dpN * 4.0 / rate + (dpN == 1 ? root : 0.0) * kLoneGatherBytes / copyRate,
                    measuredIf(measuredRate),
                    "the root unit's updated fp32 shards (embedding, output layer, projector; " + fmtCount(root) +
                        ") all-gathered after the optimizer step (the layers are gathered when next used)" + why +
                        loneWhy(dpN == 1 ? root : 0.0));
        }
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
        // The kept copies of the trainable GEMM weights (all but the embedding).
        const double copied = kept ? std::max(0.0, p.trainable - (m.freezeLanguageModel ? 0.0 : p.embedding)) : 0.0;
        // train.bf16_gradients (kept copies, one GPU): the copies' bf16 gradients are read as they
        // are by the norm and AdamW; only a second micro-batch widens them (once, to accumulate).
        const bool bf16Grads = kept && l.bf16Gradients && l.worldSize == 1;
        const double bf16GradValues = bf16Grads && micro <= 1.0 ? copied : 0.0;
        if (bf16Grads) {
            const double widened = micro > 1.0 ? copied : 0.0;
            WB_TERM("gradient widening", 6.0 * widened / (castRate * 1e9), measuredIf(measured),
                    "no weight casts in the forward (train.bf16_weight_copies) and no gradient widening: the "
                    "norm and AdamW read the bf16 gradients (train.bf16_gradients)" +
                        (widened > 0 ? "; the second micro-batch widens " + fmtCount(widened) +
                                           " values once to accumulate in fp32, 6 B each, at " + fmt(castRate, 0) +
                                           " GB/s" + rateWhy
                                     : std::string()));
        } else {
            WB_TERM(
                kept ? "gradient widening" : "weight casts (autocast)",
                micro * (6.0 * castValues + 6.0 * p.trainable) / (castRate * 1e9), measuredIf(measured),
                (kept ? std::string("no weight casts in the forward (bf16 copies kept by train.bf16_weight_copies); ")
                      : "fp32 → bf16 weight copies per forward (" + fmtCount(castValues) + " values) and ") +
                    "bf16 → fp32 gradients per backward (" + fmtCount(p.trainable) + "), 6 B each, at " +
                    fmt(castRate, 0) + " GB/s" + rateWhy + per);
        }
        // clip_grad: one pass reading every gradient for the global norm before the step.
        WB_TERM("gradient-norm pass", (p.trainable * 4.0 - bf16GradValues * 2.0) / (normRate * 1e9),
                measuredIf(measured),
                (bf16GradValues > 0 ? "reads 2 B per bf16 gradient (" + fmtCount(bf16GradValues) + ") and 4 B per other"
                                    : std::string("reads 4 B per")) +
                    " trainable parameter at " + fmt(normRate, 0) + " GB/s" + rateWhy);
        // Fused AdamW over every trainable parameter of the rank (moe-train has no distributed
        // optimizer; FSDP shards it): param, grad, m, v read, param, m, v written.
        const double owned = l.useMegatronFsdp ? p.denseTrainable() / std::max(1, dpN) + p.expertTrainable / std::max(1, edpN)
                                               : p.trainable;
        const double adamBytes = w.bf16AdamMoments ? 20.0 : 28.0;
        // The kept copies are written too; a bf16 gradient is read in 2 B instead of 4.
        const double adamSeconds = (owned * adamBytes + copied * 2.0 - bf16GradValues * 2.0) / (adamRate * 1e9);
        const std::string adamWhy = fmt(adamBytes, 0) + " B per trainable parameter (fp32 param and grad, " +
                                    std::string(w.bf16AdamMoments ? "bf16" : "fp32") + " m and v)" +
                                    (kept ? " + 2 B per kept bf16 copy (" + fmtCount(copied) + ")" : std::string()) +
                                    (bf16GradValues > 0 ? " − 2 B per bf16 gradient" : std::string()) +
                                    " in one fused pass at " + fmt(adamRate, 0) + " GB/s" + rateWhy;
        // train.overlap_optimizer "auto": one GPU, when the predicted peak and the gradients the
        // updates hold fit the card (overlapOptimizerFits, the runtime's rule from its first step).
        const double gradientBytes = (p.trainable - bf16GradValues) * 4.0 + bf16GradValues * 2.0;
        const bool autoOverlap = l.overlapOptimizer == Toggle::Auto && l.worldSize == 1 && l.pp == 1 &&
                                 l.cudaGraphScope.empty() && o.predictedPeakBytes > 0 &&
                                 overlapOptimizerFits(o.predictedPeakBytes, gradientBytes, hw.hbmGib * 1073741824.0);
        if ((l.overlapOptimizer == Toggle::On || autoOverlap) && !l.useMegatronFsdp) {
            const double exposed = overlappedOptimizerSeconds(adamSeconds, gapMs * 1e-3);
            WB_TERM("optimizer step", exposed, measuredIf(measured),
                    "exposed " + fmt(exposed * 1e3, 1) + " of " + fmt(adamSeconds * 1e3, 1) + " ms: " + adamWhy +
                        ", on a side stream while the host queues the next step (train.overlap_optimizer" +
                        (autoOverlap ? " \"auto\": " + fmt(o.predictedPeakBytes / 1073741824.0, 1) +
                                           " GiB predicted + " + fmt(gradientBytes / 1073741824.0, 1) +
                                           " GiB of gradients held fit 90 % of " + fmt(hw.hbmGib, 0) + " GiB"
                                     : std::string()) +
                        "; the forward shares the HBM with it, so about the host gap is hidden)");
        } else {
            WB_TERM("optimizer step", adamSeconds, measuredIf(measured), adamWhy);
        }
        WB_TERM("host gap per step", gapMs * 1e-3, measuredIf(measured),
                "GPU idle per step: between its kernels and where the host launches late (moe-train queues the "
                "next step while AdamW runs)" +
                    rateWhy);
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
