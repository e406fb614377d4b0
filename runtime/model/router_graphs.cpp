// Bucketed, captured router graphs (see router_graphs.h for the scheme and its reasons).
#include "runtime/model/router_graphs.h"

#include <c10/util/Exception.h>

#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace wb::rt {

RouterGraphs::RouterGraphs(int64_t capacity, int64_t bucketTokens, std::unique_ptr<GraphCapturer> capturer)
    : m_capacity(capacity), m_bucketTokens(bucketTokens), m_capturer(std::move(capturer))
{
    if (capacity < 1 || bucketTokens < 1 || !m_capturer)
        throw std::invalid_argument("RouterGraphs: needs a capacity >= 1, a bucket size >= 1 and a graph capturer");
}

RouterGraphs::~RouterGraphs() = default;

int64_t RouterGraphs::bucketOf(int64_t T, int64_t bucketTokens)
{
    return (T + bucketTokens - 1) / bucketTokens * bucketTokens;
}

void RouterGraphs::setEnabled(bool enabled)
{
    std::lock_guard lock(m_mutex);
    m_enabled = enabled;
}

bool RouterGraphs::covers(int64_t T) const
{
    std::lock_guard lock(m_mutex);
    return m_enabled && T >= 1 && T <= m_capacity;
}

RouterGraphs::Workspace& RouterGraphs::workspace(const torch::Tensor& like_TE, int64_t topK)
{
    TORCH_CHECK(like_TE.dim() == 2 && topK >= 1 && topK <= like_TE.size(1), "RouterGraphs: [T, E] logits and 1 <= K <= E expected");
    const int64_t E = like_TE.size(1);
    const Signature key{E, topK, static_cast<int>(like_TE.scalar_type()), like_TE.device().str()};
    auto it = m_workspaces.find(key);
    if (it != m_workspaces.end())
        return it->second;
    // Capacity rows rounded up to a whole bucket, so the largest bucket's slice exists. Zeros (and
    // a uniform distribution over distinct ids), not empty: a padded row must never read NaN
    // garbage, or 0 · NaN would reach the real rows' sums.
    const int64_t C = bucketOf(m_capacity, m_bucketTokens);
    const auto real = like_TE.options();
    const auto ids = real.dtype(torch::kInt64);
    const auto fp32 = real.dtype(torch::kFloat32);
    Workspace ws;
    ws.logits_CE = torch::zeros({C, E}, real);
    ws.mask_C = torch::zeros({C}, real);
    ws.probs_CE = torch::full({C, E}, 1.0 / static_cast<double>(E), real);
    ws.ids_CK = torch::arange(topK, ids).unsqueeze(0).repeat({C, 1});
    ws.weights_CK = torch::zeros({C, topK}, fp32);
    ws.counts_E = torch::zeros({E}, real);
    ws.probSum_E = torch::zeros({E}, real);
    ws.gWeights_CK = torch::zeros({C, topK}, fp32);
    ws.gProbSum_E = torch::zeros({E}, real);
    ws.dLogits_CE = torch::zeros({C, E}, real);
    ws.padIds_1K = torch::arange(topK, ids).unsqueeze(0);
    return m_workspaces.emplace(key, std::move(ws)).first->second;
}

// Rows [0, T) are tokens, [T, Tb) padding.
void RouterGraphs::setMask(Workspace& ws, int64_t T, int64_t Tb)
{
    ws.mask_C.slice(0, 0, T).fill_(1.0);
    ws.mask_C.slice(0, T, Tb).zero_();
}

CapturedGraph& RouterGraphs::graph(std::map<int64_t, std::unique_ptr<CapturedGraph>>& graphs, int64_t Tb,
                                   const std::function<void()>& body)
{
    auto& slot = graphs[Tb];
    if (!slot)
        slot = m_capturer->capture(body);
    return *slot;
}

RouterTensors RouterGraphs::forward(const torch::Tensor& logits_TE, int64_t topK)
{
    std::lock_guard lock(m_mutex);
    torch::NoGradGuard noGrad;
    const int64_t T = logits_TE.size(0), Tb = bucketOf(T, m_bucketTokens);
    TORCH_CHECK(T >= 1 && T <= m_capacity, "RouterGraphs::forward: ", T, " tokens outside 1..", m_capacity);
    Workspace& ws = workspace(logits_TE, topK);
    // Padded rows: zero logits (a uniform softmax), masked out of the counts and sums.
    ws.logits_CE.slice(0, 0, T).copy_(logits_TE);
    ws.logits_CE.slice(0, T, Tb).zero_();
    setMask(ws, T, Tb);
    // The body reads and writes only the workspace (fixed addresses); its temporaries are the graph's.
    graph(ws.forwardGraphs, Tb, [&ws, Tb, topK] {
        RouterTensors r = routerForwardMath(ws.logits_CE.slice(0, 0, Tb), topK, ws.mask_C.slice(0, 0, Tb));
        ws.probs_CE.slice(0, 0, Tb).copy_(r.probs_TE);
        ws.ids_CK.slice(0, 0, Tb).copy_(r.ids_TK);
        ws.weights_CK.slice(0, 0, Tb).copy_(r.weights_TK);
        ws.counts_E.copy_(r.counts_E);
        ws.probSum_E.copy_(r.probSum_E);
    }).replay();
    RouterTensors out;
    out.weights_TK = ws.weights_CK.slice(0, 0, T).clone();
    out.ids_TK = ws.ids_CK.slice(0, 0, T).clone();
    out.probs_TE = ws.probs_CE.slice(0, 0, T).clone();
    out.counts_E = ws.counts_E.clone();
    out.probSum_E = ws.probSum_E.clone();
    return out;
}

torch::Tensor RouterGraphs::backward(const torch::Tensor& probs_TE, const torch::Tensor& ids_TK,
                                     const torch::Tensor& gWeights_TK, const torch::Tensor& gProbSum_E)
{
    std::lock_guard lock(m_mutex);
    torch::NoGradGuard noGrad;
    const int64_t T = probs_TE.size(0), Tb = bucketOf(T, m_bucketTokens), K = ids_TK.size(1);
    TORCH_CHECK(T >= 1 && T <= m_capacity, "RouterGraphs::backward: ", T, " tokens outside 1..", m_capacity);
    Workspace& ws = workspace(probs_TE, K);
    setMask(ws, T, Tb);
    // Padded rows: a uniform distribution over distinct ids (finite, a non-zero top-K sum) and a
    // zero incoming gradient, so their dlogits are exactly 0.
    ws.probs_CE.slice(0, 0, T).copy_(probs_TE);
    ws.probs_CE.slice(0, T, Tb).fill_(1.0 / static_cast<double>(probs_TE.size(1)));
    ws.ids_CK.slice(0, 0, T).copy_(ids_TK);
    ws.ids_CK.slice(0, T, Tb).copy_(ws.padIds_1K.expand({Tb - T, K}));
    if (gWeights_TK.defined())
        ws.gWeights_CK.slice(0, 0, T).copy_(gWeights_TK);
    else
        ws.gWeights_CK.slice(0, 0, T).zero_();
    ws.gWeights_CK.slice(0, T, Tb).zero_();
    if (gProbSum_E.defined())
        ws.gProbSum_E.copy_(gProbSum_E);
    else
        ws.gProbSum_E.zero_();
    graph(ws.backwardGraphs, Tb, [&ws, Tb] {
        ws.dLogits_CE.slice(0, 0, Tb).copy_(routerBackwardMath(ws.probs_CE.slice(0, 0, Tb), ws.ids_CK.slice(0, 0, Tb),
                                                               ws.mask_C.slice(0, 0, Tb), ws.gWeights_CK.slice(0, 0, Tb),
                                                               ws.gProbSum_E));
    }).replay();
    return ws.dLogits_CE.slice(0, 0, T).clone();
}

int RouterGraphs::graphsBuilt() const
{
    std::lock_guard lock(m_mutex);
    size_t n = 0;
    for (const auto& [key, ws] : m_workspaces)
        n += ws.forwardGraphs.size() + ws.backwardGraphs.size();
    return static_cast<int>(n);
}

std::vector<int64_t> RouterGraphs::buckets() const
{
    std::lock_guard lock(m_mutex);
    std::vector<int64_t> out;
    for (const auto& [key, ws] : m_workspaces) {
        for (const auto& [Tb, g] : ws.forwardGraphs)
            out.push_back(Tb);
        for (const auto& [Tb, g] : ws.backwardGraphs)
            if (!ws.forwardGraphs.count(Tb))
                out.push_back(Tb);
    }
    return out;
}

int64_t RouterGraphs::staticBytes() const
{
    std::lock_guard lock(m_mutex);
    int64_t bytes = 0;
    for (const auto& [key, ws] : m_workspaces)
        for (const torch::Tensor* t : {&ws.logits_CE, &ws.mask_C, &ws.probs_CE, &ws.ids_CK, &ws.weights_CK, &ws.counts_E,
                                       &ws.probSum_E, &ws.gWeights_CK, &ws.gProbSum_E, &ws.dLogits_CE, &ws.padIds_1K})
            bytes += static_cast<int64_t>(t->numel() * t->element_size());
    return bytes;
}

std::string RouterGraphs::describe() const
{
    std::ostringstream s;
    const std::vector<int64_t> b = buckets();
    s << "moe_router: " << graphsBuilt() << " graphs built (forward + backward) for " << b.size()
      << " token buckets of " << m_bucketTokens << " [";
    for (size_t i = 0; i < b.size(); ++i)
        s << (i ? " " : "") << b[i];
    s << "], shared by every MoE layer; static buffers " << std::fixed << std::setprecision(1)
      << static_cast<double>(staticBytes()) / (1 << 20) << " MiB; ";
    {
        std::lock_guard lock(m_mutex);
        s << m_capturer->describe();
    }
    return s.str();
}

}  // namespace wb::rt
