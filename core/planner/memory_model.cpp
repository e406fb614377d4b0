// Memory model. Shapes: s = tokens of one sequence on this rank (seq/CP), b = micro-batch,
// h = hidden, q/kv = query/KV widths, f = expert FFN, k = top-k, E = experts, t = TP, P = vision
// patches per micro-batch, m = spatial merge. All byte counts are bf16 (2 B) unless said.
#include "core/planner/memory_model.h"

#include "core/model_flops.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>

namespace wb::core::planner {
namespace {

std::string fmtCount(double v)
{
    if (v >= 1e9)
        return fmt(v / 1e9) + " B";
    if (v >= 1e6)
        return fmt(v / 1e6) + " M";
    return fmt(v, 0);
}

struct Sharding {
    double weightBytes;     ///< per parameter held
    double gradBytes;
    double optimizerBytes;
    std::string text;
};

// Bytes per parameter for a parameter sharded over `n` data-parallel ranks. Optimizer state per
// parameter: 12 (fp32 master 4 + Adam m, v 4 + 4), or 8 with bf16 moments (master 4 + m, v 2 + 2:
// Megatron's precision-aware optimizer). Literal texts: this runs for every candidate of a search.
Sharding shardingFor(const Layout& l, double n, bool trainable, bool bf16Moments)
{
    if (!trainable) {
        const bool sharded = l.useMegatronFsdp && l.fsdpStrategy == "optim_grads_params";
        return {sharded ? 2.0 / n : 2.0, 0, 0, sharded ? "frozen: bf16 weights sharded by FSDP" : "frozen: bf16 weights only"};
    }
    const double opt = bf16Moments ? 8.0 : 12.0;
    const bool b = bf16Moments;
    if (l.useMegatronFsdp) {
        if (l.fsdpStrategy == "optim_grads_params")
            return {2.0 / n, 4.0 / n, opt / n, b ? "FSDP optim_grads_params: (2+4+8)/N" : "FSDP optim_grads_params: (2+4+12)/N"};
        if (l.fsdpStrategy == "optim_grads")
            return {2.0, 4.0 / n, opt / n, b ? "FSDP optim_grads: 2 + (4+8)/N" : "FSDP optim_grads: 2 + (4+12)/N"};
        if (l.fsdpStrategy == "optim")
            return {2.0, 4.0, opt / n, b ? "FSDP optim: 2 + 4 + 8/N" : "FSDP optim: 2 + 4 + 12/N"};
        return {2.0, 4.0, opt, b ? "FSDP no_shard: 14 B/param" : "FSDP no_shard: 18 B/param"};
    }
    if (l.useDistributedOptimizer)
        return {2.0, 4.0, opt / n, b ? "distributed optimizer: 6 + 8/N" : "distributed optimizer: 6 + 12/N"};
    return {2.0, 4.0, opt, b ? "unsharded: 14 B/param" : "unsharded: 18 B/param"};
}

int inFlightMicroBatches(const Layout& l, int stage)
{
    if (l.pp <= 1)
        return 1;
    const int m = std::max(1, l.numMicroBatches());
    return std::min(l.pp - stage, m);
}

// Korthikanti's interleaved-schedule multiplier for the first stage, 1 + (p-1)/(p·v).
double interleaveFactor(const Layout& l, int stage)
{
    if (l.pp <= 1 || l.vpp <= 1 || stage != 0)
        return 1.0;
    return 1.0 + double(l.pp - 1) / (double(l.pp) * l.vpp);
}

ActivationShape decoderShape(const ModelConfig& m, const Layout& l, const Workload& w, const MemoryOptions& o)
{
    const DecoderConfig& d = m.decoder;
    ActivationShape a;
    a.s = double(w.seqLength) / l.cp;
    a.b = l.mbs;
    a.h = d.hiddenSize;
    a.a = d.numAttentionHeads;
    a.q = double(d.numAttentionHeads) * d.kvChannels;
    a.kv = double(d.numQueryGroups) * d.kvChannels;
    a.ffn = d.moeFfnHiddenSize;
    a.gated = true;
    a.topk = d.moeRouterTopk;
    a.experts = d.numMoeExperts;
    a.t = l.tp;
    a.etp = l.etp;
    a.sp = l.sequenceParallel || l.tp > 1;  // Qwen3-VL forces SP with TP>1
    a.flash = o.flashAttention;
    a.dropout = o.dropout;
    a.imbalance = w.routingImbalance;
    a.outputGate = d.attentionOutputGate;
    a.sharedFfn = d.moeSharedExpertFfnHiddenSize;
    if (d.hybridAttention()) {
        const GatedDeltaNetWidths w = gatedDeltaNetWidths(d);
        a.linearShare = double(d.linearAttentionLayers(d.numLayers)) / std::max(1, d.numLayers);
        // in_proj output (q, k, v, z, b, a), conv output (q, k, v), core output, gated-norm output
        // (the out_proj input), bf16.
        a.linearMixerBytes = 2.0 * w.inProj + 2.0 * w.conv + 4.0 * w.v;
    }
    a.granularity = l.recomputeGranularity;
    a.modules = l.recomputeModules;
    return a;
}

}  // namespace

double MemoryEstimate::total() const
{
    double t = 0;
    for (const MemoryTerm& term : terms)
        t += term.bytes;
    return t;
}

double MemoryEstimate::category(const std::string& name) const
{
    double t = 0;
    for (const MemoryTerm& term : terms)
        if (term.category == name)
            t += term.bytes;
    return t;
}

double layerActivationBytes(const ActivationShape& x)
{
    const double sb = x.s * x.b;
    if (x.granularity == "full")  // only the layer input is kept (sharded along s with SP)
        return 2.0 * sb * x.h / (x.sp ? x.t : 1);
    const bool selective = x.granularity == "selective";
    const bool recomputeNorm = selective && contains(x.modules, "layernorm");
    const bool recomputeCore = selective && contains(x.modules, "core_attn");
    const bool recomputeMoe = selective && x.topk > 0 && contains(x.modules, "moe");
    const bool recomputeAct = selective && x.topk > 0 && contains(x.modules, "moe_act");

    // Bytes per token. "replicated" parts are full-size on every TP rank unless SP splits them.
    double replicated = 4.0 * x.h;                      // inputs of the two norms
    replicated += recomputeNorm ? 0.0 : 4.0 * x.h;      // norm outputs = QKV input and MLP input
    replicated += x.dropout ? 2.0 * x.h : 0.0;          // attention and MLP dropout masks (1 B each)
    double softmaxMixer = 2.0 * x.q + 4.0 * x.kv + 2.0 * x.q;  // Q, K, V, output-projection input
    if (x.outputGate)
        softmaxMixer += 4.0 * x.q;                      // gate pre-activation and gated output
    if (!x.flash && !recomputeCore)
        softmaxMixer += 5.0 * x.a * x.s;                // softmax output, its dropout mask and output
    double sharded = (1.0 - x.linearShare) * softmaxMixer + x.linearShare * x.linearMixerBytes;
    sharded += 6.0 * x.sharedFfn;                       // shared expert: FC1 outputs and activation
    if (x.topk <= 0) {
        sharded += x.gated ? 6.0 * x.ffn : 4.0 * x.ffn;  // FC1 output(s) and activation output
    } else if (!recomputeMoe) {
        replicated += 8.0 * x.experts;                   // router logits and probabilities, fp32
        const double copies = x.topk * x.imbalance;
        const double fc1 = 4.0 * x.ffn / x.etp;          // gate and up outputs
        const double act = recomputeAct ? 0.0 : 2.0 * x.ffn / x.etp;
        sharded += copies * (2.0 * x.h + fc1 + act + 2.0 * x.h);  // permuted input, FC1, act, FC2 output
    }
    const double perToken = x.sp ? (replicated + sharded) / x.t : replicated + sharded / x.t;
    return sb * perToken;
}

// What one pipeline stage holds, as every part of estimateStageMemory reads it.
struct StageFrame {
    int stage = 0, layers = 0;
    bool first = false, last = false;
    double t = 1;     // TP
    double dpN = 1;   // dense grads reduce over DP×CP
    double edpN = 1;  // expert grads over expert-DP
    ParameterCounts counts;
};

// moe-train's own state layout (MemoryOptions::moeTrain, not FSDP): what the optimizer step's
// peak adds up (MemoryOptions's header).
struct RuntimeState {
    bool on = false, keptCopies = false;
    bool bf16Grads = false;  // train.bf16_gradients in effect (kept copies, one GPU)
    double grads = 0;        // gradients of the trainable parameters (fp32; bf16 for the copies' with bf16Grads)
    double fp32 = 0;         // the fp32 parameters
    double heldGrads = 0;    // of those gradients, the ones that exist during the forward
    double copies = 0;       // bf16 copies of the weights
    // moe-train's FSDP ZeRO-1/2 (runtime/parallel/fsdp.h): 1 or 2, else 0. The full fp32 gradients
    // of a micro-batch exist at the end of its backward and are reduce-scattered unit by unit
    // into fp32 shard gradients (`stepGrads`, what the optimizer step holds instead of `grads`);
    // `reduceTransient`: what the largest unit's reduce-scatter adds on top (its concatenated
    // input and its output).
    int zero = 0;
    double stepGrads = 0;
    double reduceTransient = 0;
    // The trainable parameters of FSDP's root unit (everything outside the vision blocks and
    // decoder layers). ZeRO-3: the decoder layer unit's parameters, and what the last layer's
    // backward adds to the forward's state (its gradients and reduce-scatter, the output layer's
    // gradients, less its bf16 copies freed).
    double rootParams = 0;
    double unitParams = 0;
    double layerBackward = 0;
};

// The decoder's activation shape and what the other terms read of it.
struct ActivationFrame {
    ActivationShape shape;
    double held = 1;          // micro-batches in flight × interleave
    double tokensOnRank = 0;  // with SP
    double layerBytes = 0;    // one decoder layer's stored activations, one micro-batch
    double logitsBytes = 0;   // the logits-and-loss term
};

// Memory terms as estimateStageMemory collects them; the texts are built only when asked for
// (the search evaluates ~10^5 layouts numbers-only).
class MemoryTermList {
public:
    MemoryTermList(MemoryEstimate& est, bool explain) : m_est(est), m_explain(explain) {}
    template <typename Name, typename Why>
    void add(Name&& name, const char* cat, double bytes, Why&& why)
    {
        if (bytes > 0)
            m_est.terms.push_back(m_explain ? MemoryTerm{name(), cat, bytes, why()} : MemoryTerm{{}, cat, bytes, {}});
    }

private:
    MemoryEstimate& m_est;
    bool m_explain;
};

#define WB_ADD(name, cat, bytes, why) \
    terms.add([&] { return std::string(name); }, cat, bytes, [&] { return std::string(why); })

// Parameters, gradients and optimizer states (and FSDP's gathered units).
RuntimeState addStateTerms(const ModelConfig& m, const Layout& l, const Workload& w, const MemoryOptions& o,
                           const StageFrame& f, MemoryTermList& terms)
{
    const DecoderConfig& d = m.decoder;
    const int layers = f.layers;
    const bool first = f.first, last = f.last;
    const double t = f.t, dpN = f.dpN, edpN = f.edpN;
    const ParameterCounts& counts = f.counts;
    const char* optimizerText = w.bf16AdamMoments ? "fp32 master + bf16 Adam m, v (precision-aware optimizer) = 8 B; "
                                                   : "fp32 master + Adam m, v = 12 B; ";
    // bf16Copied: a GEMM weight that moe-train keeps a bf16 copy of (all but the input embedding,
    // whose gradient its own backward makes in fp32).
    struct Group {
        const char* name;
        double params;
        double n;
        bool trainable;
        std::string where;
        bool bf16Copied = true;
        bool layerUnit = true;  // in a vision block's or decoder layer's FSDP unit (else the root unit)
    };
    std::vector<Group> groups;
    groups.push_back({"decoder attention/norm/router", layers * decoderLayerDenseParams(d) / t, dpN, !m.freezeLanguageModel,
                      !o.explain ? std::string() : std::to_string(layers) + " layers / TP" + std::to_string(l.tp)});
    groups.push_back({"routed experts", layers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp, edpN,
                      !m.freezeLanguageModel,
                      !o.explain ? std::string()
                                 : std::to_string(layers) + " layers × " + std::to_string(d.numMoeExperts / std::max(1, l.ep)) +
                                       " local experts / ETP" + std::to_string(l.etp) + ", sharded over expert-DP " + fmt(edpN, 0)});
    if (first) {
        groups.push_back({"input embedding", counts.embedding / t, dpN, !m.freezeLanguageModel, "vocab × hidden / TP",
                          false, false});
        groups.push_back({"vision encoder", counts.visionEncoder / t, dpN, !l.freezeVision, "on the first stage, / TP"});
        groups.push_back({"projector + deepstack mergers", counts.projector / t, dpN, !l.freezeVision,
                          "on the first stage, / TP", true, false});
    }
    if (last && d.mtpNumLayers > 0) {
        groups.push_back(
            {"MTP layers", mtpDenseParams(d) / t, dpN, !m.freezeLanguageModel,
             !o.explain ? std::string()
                        : std::to_string(d.mtpNumLayers) + " multi-token-prediction layer(s) on the last stage / TP",
             true, false});
        groups.push_back({"MTP routed experts",
                          d.mtpNumLayers * (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp, edpN,
                          !m.freezeLanguageModel, "the MTP layers' experts, as the decoder's", true, false});
    }
    if (last)
        groups.push_back({"output layer + final norm", counts.outputLayer / t + d.hiddenSize, dpN,
                          !m.freezeLanguageModel, "untied, vocab × hidden / TP", true, false});
    double largestUnit = layers > 0 ? (decoderLayerDenseParams(d) / t + (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp) : 0;
    // moe-train (MemoryOptions::moeTrain): its own state layout, see the header.
    RuntimeState rt;
    // moe-train's FSDP strategies hold its own state (below): ZeRO-1, 2, 3.
    const int zero = !l.useMegatronFsdp                       ? 0
                     : l.fsdpStrategy == "optim"              ? 1
                     : l.fsdpStrategy == "optim_grads"        ? 2
                     : l.fsdpStrategy == "optim_grads_params" ? 3
                                                              : -1;  // no_shard: Megatron's form
    rt.on = o.moeTrain && zero >= 0;
    rt.zero = rt.on ? zero : 0;
    // train.bf16_weight_copies: the copies live from one step to the next (also through the
    // optimizer step, which writes them); without it autocast makes them in the forward. Not
    // under FSDP (the trainer refuses them there: the parameters are the gathered shards).
    rt.keptCopies = rt.on && l.bf16WeightCopies && rt.zero == 0;
    // train.bf16_gradients (one GPU): the copied weights' gradients stay bf16 through a step of one
    // micro-batch; a second micro-batch makes them fp32 (accumulated), so they are bf16 while the
    // second micro-batch's forward runs and fp32 from the third on.
    rt.bf16Grads = rt.keptCopies && l.bf16Gradients && l.worldSize == 1;
    const int microBatches = std::max(1, l.numMicroBatches());
    const bool runtimeState = rt.on, keptCopies = rt.keptCopies;
    double& runtimeGrads = rt.grads;
    double& runtimeFp32 = rt.fp32;
    double& runtimeHeldGrads = rt.heldGrads;
    double& runtimeCopies = rt.copies;
    for (const Group& g : groups) {
        if (runtimeState && rt.zero > 0) {
            // moe-train's FSDP (fsdp.h): an fp32 shard of each trainable parameter (the
            // optimizer's tensor) with its moments; the whole fp32 parameters on every rank
            // (ZeRO-3: only the root unit's and the frozen ones; a layer's are gathered around its
            // forward and backward); autocast casts the bf16 copies in the forward (saved for
            // backward, ZeRO-3 too); the backward makes the whole fp32 gradients, reduce-scattered
            // into the shards' gradients after the micro-batch (ZeRO-2), the last one (ZeRO-1) or
            // each layer's backward (ZeRO-3).
            const std::string base = o.explain ? fmtCount(g.params) + " params (" + g.where + "); " : std::string();
            const bool freed = rt.zero == 3 && g.trainable && g.layerUnit;
            if (!freed) {
                WB_ADD(std::string(g.name) + " weights", "weights", g.params * 4.0,
                       base + "fp32 parameters, whole on every rank (moe-train FSDP " + l.fsdpStrategy +
                           (rt.zero == 3 ? (g.trainable ? ": the root unit" : ": frozen, not sharded") : "") + ")");
                runtimeFp32 += g.params * 4.0;
            }
            WB_ADD(std::string(g.name) + " bf16 copies", "weights", g.params * 2.0,
                   base + "bf16 casts made by autocast in the forward and saved for backward (moe-train)");
            runtimeCopies += g.params * 2.0;
            if (!g.trainable)
                continue;  // frozen: not sharded, no optimizer state
            if (!g.layerUnit)
                rt.rootParams += g.params;
            WB_ADD(std::string(g.name) + " fp32 shard", "weights", g.params * 4.0 / g.n,
                   base + "the rank's fp32 shard that AdamW updates, 4 B / N (N = " + fmt(g.n, 0) + ")");
            WB_ADD(std::string(g.name) + " optimizer", "optimizer", g.params * (w.bf16AdamMoments ? 4.0 : 8.0) / g.n,
                   base +
                       (w.bf16AdamMoments ? "bf16 Adam m, v of the shard = 4 B / N"
                                          : "fp32 Adam m, v of the shard = 8 B / N") +
                       " (N = " + fmt(g.n, 0) + ")");
            runtimeFp32 += g.params * 4.0 / g.n;
            runtimeGrads += g.params * 4.0;
            rt.stepGrads += g.params * 4.0 / g.n;
            // Through a later micro-batch's forward: ZeRO-1 accumulates the whole gradients,
            // ZeRO-2/3 the reduced shards'.
            if (microBatches > 1)
                runtimeHeldGrads += g.params * (rt.zero == 1 ? 4.0 : 4.0 / g.n);
            continue;
        }
        if (runtimeState) {
            const std::string base = o.explain ? fmtCount(g.params) + " params (" + g.where + "); " : std::string();
            WB_ADD(std::string(g.name) + " weights", "weights", g.params * 4.0, base + "fp32 parameters, also the master copy (moe-train)");
            WB_ADD(std::string(g.name) + " bf16 copies", "weights", g.params * 2.0,
                base + (keptCopies ? "bf16 copies kept between steps, written by the AdamW pass (moe-train, "
                                     "train.bf16_weight_copies)"
                                   : "bf16 casts made by autocast in the forward and saved for backward (moe-train)"));
            runtimeCopies += g.params * 2.0;
            if (g.trainable) {
                WB_ADD(std::string(g.name) + " optimizer", "optimizer", g.params * (w.bf16AdamMoments ? 4.0 : 8.0),
                    base + (w.bf16AdamMoments ? "bf16 Adam m, v = 4 B (no separate master: the parameters are fp32)"
                                              : "fp32 Adam m, v = 8 B (no separate master: the parameters are fp32)"));
                const bool bf16 = rt.bf16Grads && g.bf16Copied;
                runtimeGrads += g.params * (bf16 && microBatches == 1 ? 2.0 : 4.0);
                // Gradients that live through the forward: accumulated over micro-batches, or
                // views of the overlapped reducer's buckets (allocated once) where this group is
                // data-parallel.
                if (l.numMicroBatches() > 1 || (g.n > 1 && l.overlapGradReduce))
                    runtimeHeldGrads += g.params * (bf16 && microBatches == 2 ? 2.0 : 4.0);
            }
            runtimeFp32 += g.params * 4.0;
            continue;
        }
        const Sharding s = shardingFor(l, g.n, g.trainable, w.bf16AdamMoments);
        const std::string base = o.explain ? fmtCount(g.params) + " params (" + g.where + "); " : std::string();
        WB_ADD(std::string(g.name) + " weights", "weights", g.params * s.weightBytes, base + s.text);
        WB_ADD(std::string(g.name) + " grads", "grads", g.params * s.gradBytes, base + "fp32 main grads; " + s.text);
        WB_ADD(std::string(g.name) + " optimizer", "optimizer", g.params * s.optimizerBytes,
            base + optimizerText + s.text + " (N = " + fmt(g.n, 0) + ")");
    }
    if (rt.zero > 0) {
        // The reduce-scatter of one unit (fsdp.cpp reduceUnit; units: the root — embedding,
        // output layer, projector, norms — then each vision block and decoder layer; one
        // collective per group), beyond the unit's whole gradients: the padded gradient columns
        // replace them (fp32; bf16 reduction: half of them), their concatenation is the
        // collective's input (4 B; 2 B), its output 4 B / N (2 B / N widened to 4 B / N) and the
        // shard's gradient a copy of it (4 B / N) while the output is still held.
        const bool bf16Reduce = !l.gradReduceInFp32;
        auto transient = [&](double params, double n) { return params * (bf16Reduce ? 8.0 / n : 4.0 + 8.0 / n); };
        const double dense = layers > 0 && !m.freezeLanguageModel ? decoderLayerDenseParams(d) / t : 0.0;
        const double experts =
            layers > 0 && !m.freezeLanguageModel ? (double(d.numMoeExperts) / l.ep) * expertParams(d) / l.etp : 0.0;
        const double layer =
            l.ep > 1 ? std::max(transient(dense, dpN), transient(experts, edpN)) : transient(dense + experts, dpN);
        if (rt.zero < 3) {
            // The root goes first, with every gradient still whole; a layer after it, once the
            // root's gradients became shards.
            const double root = rt.rootParams;
            rt.reduceTransient = std::max(transient(root, dpN), layer - root * (4.0 - 4.0 / dpN));
        } else {
            // ZeRO-3: the last decoder layer's backward, the first and largest: it is gathered
            // again (4 B) with the layer before it prefetched (4 B), makes its fp32 gradients
            // (4 B) and reduce-scatters them (above), beside the output layer's whole gradients
            // (the root's, reduced only after the micro-batch). By then its saved bf16 copies and
            // the logits are gone. (Gathering in forward: the "FSDP gathered layers" term.)
            rt.unitParams = dense + experts;
            rt.layerBackward = rt.unitParams * 4.0 + layer - rt.unitParams * 2.0 +
                               (last && !m.freezeLanguageModel ? (counts.outputLayer / t + d.hiddenSize) * 4.0 : 0.0);
            if (!l.fsdpReshardAfterForward)
                rt.layerBackward -= rt.unitParams * 4.0;  // still gathered from its forward: no prefetch
        }
    }
    if (rt.zero == 3) {
        // Forward: the layer being computed, gathered into fresh fp32 memory (4 B), and the next
        // one's all-gather output (4 B) prefetched meanwhile. fsdp_reshard_after_forward false
        // keeps every layer gathered (fresh memory beside its shard) until its backward.
        const double layerParams = rt.unitParams * layers + (first && !l.freezeVision ? counts.visionEncoder / t : 0.0);
        if (l.fsdpReshardAfterForward)
            WB_ADD("FSDP gathered layers", "other", rt.unitParams * 8.0,
                   "the layer in compute and the next one prefetched, fp32 (4 + 4 B), " + fmtCount(rt.unitParams) +
                       " params per decoder layer (moe-train FSDP optim_grads_params)");
        else
            WB_ADD(
                "FSDP gathered layers", "other", layerParams * 4.0 + rt.unitParams * 4.0,
                "every layer's fp32 parameters gathered from its forward to its backward (fsdp_reshard_after_forward "
                "false), " +
                    fmtCount(layerParams) + " params, + one all-gather output (moe-train)");
    }
    if (l.useMegatronFsdp && l.fsdpStrategy == "optim_grads_params" && !rt.on)
        WB_ADD("FSDP all-gathered units", "other", largestUnit * (2.0 * 2.0 + 4.0),
            "two layers' bf16 weights gathered (double buffer) + one layer's fp32 grads before reduce-scatter, " +
                fmtCount(largestUnit) + " params per layer");
    else if (l.useMegatronFsdp && l.fsdpStrategy == "optim_grads" && !rt.on)
        WB_ADD("FSDP grad reduce-scatter buffer", "other", largestUnit * 4.0,
               "one layer's fp32 grads before reduce-scatter");

    return rt;
}

// The activations: the decoder's layers, the vision encoder, the logits and loss.
ActivationFrame addActivationTerms(const ModelConfig& m, const Layout& l, const Workload& w, const MemoryOptions& o,
                                   const StageFrame& f, MemoryTermList& terms)
{
    const DecoderConfig& d = m.decoder;
    const VisionConfig& v = m.vision;
    const int stage = f.stage, layers = f.layers;
    const bool first = f.first, last = f.last;
    const double t = f.t;
    const ActivationShape shape = decoderShape(m, l, w, o);
    const int inFlight = inFlightMicroBatches(l, stage);
    const double interleave = interleaveFactor(l, stage);
    const double held = inFlight * interleave;
    const std::string heldText = !o.explain ? std::string() : fmt(held) + " micro-batches in flight (1F1B: min(PP − stage, m)" +
                                 (interleave > 1 ? ", × interleave 1+(p−1)/(pv)" : std::string()) + ")";
    std::string mode = l.recomputeGranularity;
    if (l.recomputeGranularity == "full") {
        const int recomputed = l.recomputeMethod == "block" ? std::min(layers, l.recomputeNumLayers) : layers;
        ActivationShape fullShape = shape;
        fullShape.granularity = "none";
        WB_ADD("decoder activations", "activations",
            held * (recomputed * layerActivationBytes(shape) + (layers - recomputed) * layerActivationBytes(fullShape)),
            "full recompute (" + l.recomputeMethod + "): 2sbh(/t with SP) per recomputed layer, " + std::to_string(layers - recomputed) +
                " layers stored whole; " + heldText);
        const int unit = l.recomputeMethod == "block" ? 1 : std::max(1, l.recomputeNumLayers);
        WB_ADD("recompute working set", "activations", unit * layerActivationBytes(fullShape),
            "backward re-runs " + std::to_string(unit) + " layer(s) forward: their full activations for one micro-batch (frameworks' estimators omit this)");
    } else {
        WB_ADD("decoder activations", "activations", held * layers * layerActivationBytes(shape),
            "Korthikanti per layer, GQA + SwiGLU experts × top-" + std::to_string(d.moeRouterTopk) + " × imbalance " +
                fmt(w.routingImbalance) + (o.flashAttention ? ", flash attention (no 5as/h term)" : "") +
                (mode == "selective" ? ", selective recompute" : ", no recompute") + "; " + heldText);
    }
    const double tokensOnRank = shape.s * shape.b / (shape.sp ? t : 1.0);
    double logitsBytes = 0;
    if (first && w.visionImagesPerSample() > 0 && v.numLayers > 0) {
        const double patches = double(l.mbs) * w.visionPatchesPerSample(v);
        const double m2 = double(v.spatialMergeSize) * v.spatialMergeSize;
        const double perLayer = patches * (16.0 * v.hiddenSize + 4.0 * v.ffnHiddenSize) / t;
        const double mergers = double(1 + v.deepstackLayers.size()) * (patches / m2) * 8.0 * v.hiddenSize * m2 / t;
        if (l.freezeVision)
            WB_ADD("vision forward working set", "activations", perLayer,
                "frozen encoder stores nothing for backward; one layer's transient, " + fmtCount(patches) + " patches");
        else
            WB_ADD("vision encoder activations", "activations", held * (v.numLayers * perLayer + mergers),
                std::to_string(v.numLayers) + " ViT layers × " + fmtCount(patches) + " patches × (16·h_v + 4·I_v) B (flash varlen, GeLU MLP) + mergers; not recomputed (assumption); " + heldText);
        WB_ADD("deepstack features", "activations",
            held * double(v.deepstackLayers.size()) * (patches / m2) * d.hiddenSize * 2.0,
            std::to_string(v.deepstackLayers.size()) + " merged feature maps kept until decoder layers 0.." +
                std::to_string(std::max<int>(0, int(v.deepstackLayers.size()) - 1)) + " run backward");
    }
    if (last && o.moeTrain) {
        // moe-train projects only the target positions (runtime/model/moe_decoder.cpp) and its fused
        // cross-entropy keeps their bf16 logits; the head's backward writes a bf16 gradient of the
        // same size while they are still held.
        const double labelled = w.packed.measured() ? w.packed.textTokens
                                                    : std::max(0.0, double(w.seqLength) - double(w.imageTokensPerSample(v)));
        logitsBytes = labelled * shape.b * double(d.vocabSize) / t * 4.0;
        WB_ADD("logits and loss", "activations", logitsBytes,
               fmtCount(labelled * shape.b) +
                   " target tokens × V/t × (2 B bf16 logits kept by the fused cross-entropy + 2 B "
                   "their gradient in the head's backward); one micro-batch (moe-train)");
    } else if (last) {
        WB_ADD("logits and loss", "activations", shape.s * shape.b * double(d.vocabSize) / t * 6.0,
            "s·b·V/t × (2 B bf16 logits + 4 B fp32 softmax kept by the fused cross-entropy); one micro-batch");
        if (d.mtpNumLayers > 0) {
            ActivationShape mtpShape = shape;  // an MTP layer runs softmax attention
            mtpShape.linearShare = 0;
            WB_ADD("MTP activations and logits", "activations",
                d.mtpNumLayers * (held * layerActivationBytes(mtpShape) + shape.s * shape.b * double(d.vocabSize) / t * 6.0 +
                                  held * shape.s * shape.b * 2.0 * d.hiddenSize * 2.0),
                std::to_string(d.mtpNumLayers) + " MTP layer(s): one decoder layer's activations, the eh_proj input (2h) and "
                "their own logits and loss each");
        }
    }

    ActivationFrame frame{shape, held, tokensOnRank};
    frame.layerBytes = l.recomputeGranularity == "full" ? 0.0 : layerActivationBytes(shape);
    frame.logitsBytes = logitsBytes;
    return frame;
}

// Dispatcher buffers, CUDA graphs, and the context and allocator (or moe-train's optimizer-step peak).
void addOtherTerms(const ModelConfig& m, const Layout& l, const Workload& w, const MemoryOptions& o,
                   const StageFrame& f, const RuntimeState& rt, const ActivationFrame& a, MemoryEstimate& est,
                   MemoryTermList& terms)
{
    const DecoderConfig& d = m.decoder;
    const int layers = f.layers;
    const double held = a.held, tokensOnRank = a.tokensOnRank;
    const double routed = tokensOnRank * d.moeRouterTopk * w.routingImbalance;
    if (l.dispatcherType == "flex")
        WB_ADD("dispatcher buffers", "other", routed * d.hiddenSize * 2.0 * 2.0 + o.dispatcherWorkspaceGib * 1073741824.0,
            l.dispatcherBackend + " registered buffers: dispatch + combine of " + fmtCount(routed) +
                " routed tokens × h in bf16, plus " + fmt(o.dispatcherWorkspaceGib, 1) + " GiB workspace (assumption)");
    else if (l.ep > 1)
        WB_ADD("dispatcher buffers", "other", routed * d.hiddenSize * 2.0 * 2.0,
            "all-to-all send + receive copies of " + fmtCount(routed) + " routed tokens × h, bf16 (transient, one layer)");
    if (l.cudaGraphImpl == "full_iteration")
        WB_ADD("CUDA graphs", "other", 2.0 * 1073741824.0 + 0.10 * est.category("activations"),
            "full-iteration graph: private pool cannot reuse memory across phases; 2 GiB + 10% of activations (assumption)");
    else if (l.cudaGraphImpl != "none")
        WB_ADD("CUDA graphs", "other",
            0.5 * 1073741824.0 + layers * held * tokensOnRank * (2.0 * d.hiddenSize + 8.0 * d.numMoeExperts),
            "per-layer static inputs/outputs of the captured router/preprocess (" + std::to_string(layers) +
                " layers × in-flight micro-batches) + 0.5 GiB pool (assumption)");
    if (rt.on) {
        // Gradients that exist from the first forward on (accumulation over micro-batches, or the
        // overlapped reducer's bucket views on a data-parallel group) add to the forward/backward
        // peak. The others are allocated as the backward frees activations: the peak is then the
        // larger of that phase and the optimizer step (fp32 weights + all gradients + moments;
        // the activations gone; the bf16 copies gone too unless they are kept).
        WB_ADD("gradients held through the forward", "grads", rt.heldGrads,
               "fp32 gradients of accumulated micro-batches or of the reducer's buckets (DP groups with "
               "overlap_grad_reduce)" +
                   std::string(rt.bf16Grads ? "; bf16 where only one micro-batch came before (train.bf16_gradients)"
                                            : ""));
        const double forwardPeak = est.total();
        if (rt.zero == 3) {
            // The last decoder layer's backward, less the logits (freed after the head's backward)
            // and the layer's own activations (freed with its backward).
            const double extra = rt.layerBackward - a.logitsBytes - a.layerBytes;
            WB_ADD("gradients beyond the forward peak", "grads", std::max(0.0, extra),
                   "the last decoder layer's backward: gathered again, the layer before prefetched, its fp32 "
                   "gradients and their reduce-scatter (" +
                       std::string(l.gradReduceInFp32 ? "fp32" : "bf16") +
                       " reduction), beside the output layer's whole gradients; its bf16 copies, its activations "
                       "and the logits freed (moe-train FSDP optim_grads_params)");
            return;
        }
        if (rt.zero > 0) {
            // FSDP ZeRO-1/2: the end of a backward holds the whole fp32 gradients (ZeRO-2 beside
            // the shards' gradients of earlier micro-batches) and the largest unit's
            // reduce-scatter; the optimizer step only the shards' gradients.
            const double backwardEnd = rt.fp32 + est.category("optimizer") + rt.grads +
                                       (rt.zero == 2 ? rt.heldGrads : 0.0) + rt.reduceTransient;
            const double step = rt.fp32 + est.category("optimizer") + rt.stepGrads;
            WB_ADD("gradients beyond the forward/backward peak", "grads",
                   std::max(0.0, std::max(backwardEnd, step) - forwardPeak),
                   "the end of the backward holds the fp32 weights and shards + moments + the whole fp32 gradients (" +
                       fmt(MemoryEstimate::gib(rt.grads), 1) + " GiB) + the largest unit's reduce-scatter buffers (" +
                       fmt(MemoryEstimate::gib(rt.reduceTransient), 1) + " GiB, " +
                       (l.gradReduceInFp32 ? "fp32" : "bf16") + " reduction) (moe-train FSDP " + l.fsdpStrategy +
                       "); the backward allocates the gradients as it frees activations");
            return;
        }
        const double optimizerStep = rt.fp32 + est.category("optimizer") + rt.grads + (rt.keptCopies ? rt.copies : 0.0);
        WB_ADD("gradients beyond the forward/backward peak", "grads", std::max(0.0, optimizerStep - forwardPeak),
               "the optimizer step holds fp32 weights + gradients (" + fmt(MemoryEstimate::gib(rt.grads), 1) +
                   (rt.bf16Grads ? " GiB, the copied weights' in bf16: train.bf16_gradients" : " GiB") + ") + moments" +
                   (rt.keptCopies ? std::string(" + the kept bf16 copies") : std::string()) +
                   "; the backward allocates the other gradients as it frees activations");
        return;
    }
    WB_ADD("CUDA context + NCCL", "other", o.contextAndNcclGib * 1073741824.0,
        "context, cuBLAS/cuDNN workspaces and NCCL communicator buffers (assumption)");
    WB_ADD("allocator slack", "other", o.allocatorSlack * est.total(),
        fmt(o.allocatorSlack * 100, 0) + "% fragmentation of the caching allocator with expandable segments (assumption)");
}

#undef WB_ADD

MemoryEstimate estimateStageMemory(const ModelConfig& m, const Layout& l, const Workload& w, int stage,
                                   const MemoryOptions& o)
{
    const DecoderConfig& d = m.decoder;
    MemoryEstimate est;
    est.stage = stage;
    std::vector<int> stages = layersPerStage(l, d.numLayers);
    StageFrame f;
    f.stage = stage;
    f.layers = stages.empty() ? (d.numLayers + l.pp - 1) / l.pp : stages[size_t(stage)];
    f.first = stage == 0;
    f.last = stage == l.pp - 1;
    f.t = l.tp;
    f.dpN = std::max(1, l.dp()) * double(l.cp);
    f.edpN = std::max(1, l.edp());
    f.counts = countParameters(m);
    MemoryTermList terms(est, o.explain);
    const RuntimeState rt = addStateTerms(m, l, w, o, f, terms);
    const ActivationFrame a = addActivationTerms(m, l, w, o, f, terms);
    addOtherTerms(m, l, w, o, f, rt, a, est, terms);
    return est;
}

MemoryEstimate estimateMemory(const ModelConfig& m, const Layout& l, const Workload& w, const MemoryOptions& o)
{
    if (m.vision.numLayers <= 0 && w.imagesPerSample > 0)  // a text-only model: no images
        return estimateMemory(m, l, workloadSeenBy(w, m), o);
    MemoryEstimate worst;
    double worstTotal = -1;
    for (int stage = 0; stage < std::max(1, l.pp); ++stage) {
        // Middle stages with equal layer counts are identical except for in-flight micro-batches,
        // which only fall with the stage index; only stage 1 can beat stage 0 among them.
        if (stage > 1 && stage < l.pp - 1)
            continue;
        MemoryEstimate e = estimateStageMemory(m, l, w, stage, o);
        if (e.total() > worstTotal) {
            worstTotal = e.total();
            worst = std::move(e);
        }
    }
    return worst;
}

}  // namespace wb::core::planner
