// Captured graphs of the MoE router's forward and backward between its GEMMs (cuda_graph.impl
// "local", scope "moe_router"; docs/runtime.md "CUDA graphs"): logits → softmax, top-K, weights,
// aux statistics; and d weights, d prob sums → dlogits (router.h says why the GEMMs stay out).
// Device-agnostic: the capture itself is a GraphCapturer (CUDA graphs in cuda/cuda_graph.h); this
// class owns the bucketing, the static buffers and the copies in and out, and is tested on the CPU
// with a capturer that re-runs the recorded body.
//
// Shapes as in router.h; Tb = T rounded up to the bucket size, C = the capacity (the most tokens
// a micro-batch can have). moe-train removes padding, so T changes every micro-batch, but a graph
// replays fixed shapes and fixed addresses. So:
//  - T is padded up to a bucket (a multiple of bucketTokens); the padded rows are zero logits
//    masked out of the aux statistics (mask_T), get a zero gradient, and are sliced off;
//  - one forward and one backward graph per (router signature, bucket), built lazily on the
//    first micro-batch of that bucket and kept. Every MoE layer shares them: the layer's weight
//    only enters through the logits (and the GEMMs after dlogits), which are copied in and out,
//    so graphs per layer would be identical copies (and a new weight after an optimizer step
//    needs nothing);
//  - the static buffers are allocated once per signature at the capacity C and every bucket's
//    graph works on their first Tb rows; results are cloned out after the replay, because the
//    next layer's replay overwrites them and pipeline parallelism runs several forwards before
//    their backwards.
// Thread: the training thread (forward) or the autograd engine's thread (backward) — never both
// at once (the training thread waits inside backward()); a mutex makes that an invariant.
#pragma once

#include "runtime/model/graph_capturer.h"
#include "runtime/model/router.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace wb::rt {

class RouterGraphs {
public:
    /// Tokens per bucket: the router's FLOPs per padded row are ~6·D·E, so padding is nearly
    /// free, and with this size a micro-batch of up to 16k tokens meets at most 64 buckets.
    static constexpr int64_t kBucketTokens = 256;

    /// `capacity`: the most tokens a micro-batch can hold (MBS × seq_length); larger T (and T = 0)
    /// run eagerly. Starts disabled (the trainer enables it after cuda_graph.warmup_steps).
    RouterGraphs(int64_t capacity, int64_t bucketTokens, std::unique_ptr<GraphCapturer> capturer);
    ~RouterGraphs();
    RouterGraphs(const RouterGraphs&) = delete;
    RouterGraphs& operator=(const RouterGraphs&) = delete;

    /// T rounded up to a multiple of `bucketTokens` (T ≥ 1).
    static int64_t bucketOf(int64_t T, int64_t bucketTokens);

    void setEnabled(bool enabled);
    /// True when a micro-batch of T tokens replays graphs: enabled and 1 ≤ T ≤ capacity.
    bool covers(int64_t T) const;

    /// routerForwardMath(logits_TE, topK) by graph replay (logits in the router dtype): the values
    /// for the T real rows (mask 1), as owned tensors.
    RouterTensors forward(const torch::Tensor& logits_TE, int64_t topK);
    /// routerBackwardMath by graph replay: dlogits_TE (router dtype), an owned tensor.
    torch::Tensor backward(const torch::Tensor& probs_TE, const torch::Tensor& ids_TK, const torch::Tensor& gWeights_TK,
                           const torch::Tensor& gProbSum_E);

    /// Graphs captured so far (forward + backward), and the buckets (Tb) they were built for.
    int graphsBuilt() const;
    std::vector<int64_t> buckets() const;
    /// Bytes of the static buffers (the graphs' own temporaries live in the capturer's pool).
    int64_t staticBytes() const;
    std::string describe() const;

private:
    // One router signature's static buffers, at capacity rows, and its graphs per bucket.
    struct Workspace {
        torch::Tensor logits_CE, mask_C;                // forward inputs (mask: backward too)
        torch::Tensor probs_CE, ids_CK;                 // forward outputs = backward inputs
        torch::Tensor weights_CK, counts_E, probSum_E;  // forward outputs
        torch::Tensor gWeights_CK, gProbSum_E;          // backward inputs
        torch::Tensor dLogits_CE;                       // backward output
        torch::Tensor padIds_1K;                        // 0..K-1: distinct ids for padded rows
        std::map<int64_t, std::unique_ptr<CapturedGraph>> forwardGraphs, backwardGraphs;
    };
    using Signature = std::tuple<int64_t, int64_t, int, std::string>;  // E, K, dtype, device

    Workspace& workspace(const torch::Tensor& like_TE, int64_t topK);
    void setMask(Workspace& ws, int64_t T, int64_t Tb);
    CapturedGraph& graph(std::map<int64_t, std::unique_ptr<CapturedGraph>>& graphs, int64_t Tb,
                         const std::function<void()>& body);

    const int64_t m_capacity;
    const int64_t m_bucketTokens;
    mutable std::mutex m_mutex;
    std::unique_ptr<GraphCapturer> m_capturer;  // guarded by m_mutex
    std::map<Signature, Workspace> m_workspaces;  // guarded by m_mutex
    bool m_enabled = false;                       // guarded by m_mutex
};

}  // namespace wb::rt
