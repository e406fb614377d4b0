// Pipeline stages: groups, layer split, parameter ownership, the p2p exchange (see pipeline.h).
#include "runtime/parallel/pipeline.h"

#include "runtime/model/vlm_model.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace wb::rt {

namespace {

std::string str(int64_t v)
{
    return std::to_string(v);
}

bool startsWith(const std::string& text, const std::string& prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::vector<std::pair<int, int>> pipelineStageLayers(int numLayers, int stages, int first, int last)
{
    if (stages < 1)
        throw std::invalid_argument("parallel.pipeline_model_parallel_size " + str(stages) + " must be at least 1");
    if (first < 0 || last < 0)
        throw std::invalid_argument("parallel.num_layers_in_first/last_pipeline_stage must not be negative");
    std::vector<int> counts(static_cast<size_t>(stages), 0);
    if (stages == 1) {
        if (first > 0 || last > 0)
            throw std::invalid_argument("parallel.num_layers_in_first/last_pipeline_stage need pipeline_model_parallel_size > 1");
        counts[0] = numLayers;
    } else {
        const int middleStages = stages - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
        const int middleLayers = numLayers - first - last;
        if (middleLayers < 0 || (middleStages == 0 && middleLayers != 0) ||
            (middleStages > 0 && middleLayers % middleStages != 0))
            throw std::invalid_argument(
                str(numLayers) + " decoder layers do not split over " + str(stages) + " pipeline stages with " +
                str(first) + " on the first and " + str(last) + " on the last (0 = even): the remaining " +
                str(middleLayers) + " must divide evenly over the other " + str(middleStages) +
                " stages; change parallel.num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage");
        const int each = middleStages > 0 ? middleLayers / middleStages : 0;
        for (int s = 0; s < stages; ++s)
            counts[static_cast<size_t>(s)] = each;
        if (first > 0)
            counts.front() = first;
        if (last > 0)
            counts.back() = last;
    }
    std::vector<std::pair<int, int>> out;
    int begin = 0;
    for (int c : counts) {
        out.emplace_back(begin, begin + c);
        begin += c;
    }
    return out;
}

std::vector<std::pair<int, int>> pipelineChunkLayers(int numLayers, int stages, int chunks, int first, int last)
{
    if (chunks < 1)
        throw std::invalid_argument("parallel.virtual_pipeline_model_parallel_size " + str(chunks) + " must be at least 1");
    if (chunks == 1)
        return pipelineStageLayers(numLayers, stages, first, last);
    // Megatron-Core also places uneven first/last stages with virtual stages (a layout of its
    // own per chunk); moe-train does not, and says so rather than guess one.
    if (first > 0 || last > 0)
        throw std::invalid_argument(
            "parallel.num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage (" + str(first) + ", " +
            str(last) + ") are not supported together with parallel.virtual_pipeline_model_parallel_size " + str(chunks) +
            " by moe-train; set both to 0 (even chunks) or virtual_pipeline_model_parallel_size to 1");
    const int total = stages * chunks;
    if (stages < 2 || numLayers % total != 0)
        throw std::invalid_argument(str(numLayers) + " decoder layers do not split into pipeline_model_parallel_size " +
                                    str(stages) + " × virtual_pipeline_model_parallel_size " + str(chunks) + " = " +
                                    str(total) + " equal model chunks; change model.decoder.num_layers or "
                                    "parallel.virtual_pipeline_model_parallel_size");
    const int each = numLayers / total;
    std::vector<std::pair<int, int>> out;
    for (int c = 0; c < total; ++c)
        out.emplace_back(c * each, (c + 1) * each);
    return out;
}

std::string pipelineLayerSplit(const core::RunConfig& config)
{
    const auto& p = config.parallel;
    if (p.pipelineModelParallelSize < 2)
        return {};
    try {
        const int chunks = p.virtualPipelineModelParallelSize;
        const auto layers = pipelineChunkLayers(config.model.decoder.numLayers, p.pipelineModelParallelSize, chunks,
                                                p.numLayersInFirstPipelineStage, p.numLayersInLastPipelineStage);
        std::string text = (chunks > 1 ? "vpp" + str(chunks) + " " : std::string()) + "pp_layers:";
        for (size_t s = 0; s < layers.size(); ++s) {
            if (s > 0)
                text += ',';
            text += str(layers[s].second - layers[s].first);
        }
        return text;
    } catch (const std::invalid_argument&) {
        return {};
    }
}

Pipeline::Pipeline(const core::RunConfig& config, ProcessGroup& world)
{
    const auto& p = config.parallel;
    m_stages = p.pipelineModelParallelSize;
    const int n = world.size(), r = world.rank();
    if (m_stages < 2 || n % m_stages != 0)
        throw std::invalid_argument("pipeline_model_parallel_size " + str(m_stages) + " must be > 1 and divide the " +
                                    str(n) + " ranks");
    m_chunks = p.virtualPipelineModelParallelSize;
    m_layers = pipelineChunkLayers(config.model.decoder.numLayers, m_stages, m_chunks, p.numLayersInFirstPipelineStage,
                                   p.numLayersInLastPipelineStage);
    const int perStage = n / m_stages;
    m_stage = r / perStage;
    // Every rank creates its stage group, then its pipeline group: the same order everywhere, so
    // no rank waits in its second group for one still forming its first.
    std::vector<int> stageRanks, pipeRanks;
    for (int i = 0; i < perStage; ++i)
        stageRanks.push_back(m_stage * perStage + i);
    for (int s = 0; s < m_stages; ++s)
        pipeRanks.push_back(r % perStage + s * perStage);
    m_dataGroup = world.newGroup(stageRanks, "ppstage" + str(m_stage));
    m_pipeGroup = world.newGroup(pipeRanks, "pipe" + str(r % perStage));
}

bool Pipeline::owns(const std::string& name) const
{
    if (startsWith(name, "vision.") || startsWith(name, "projector.") || startsWith(name, "deepstack_projectors.") ||
        startsWith(name, "decoder.embedding."))
        return isFirst();
    if (startsWith(name, "decoder.final_norm.") || startsWith(name, "decoder.output."))
        return isLast();
    const std::string layers = "decoder.layers.";
    if (startsWith(name, layers)) {
        const int layer = std::stoi(name.substr(layers.size()));
        for (int c = 0; c < m_chunks; ++c)
            if (layerBegin(c) <= layer && layer < layerEnd(c))
                return true;
        return false;
    }
    throw std::logic_error("pipeline: no stage owns parameter '" + name +
                           "' (a model part runtime/parallel/pipeline.cpp does not know; add it to Pipeline::owns)");
}

void Pipeline::keepOwnStage(VlmModelImpl& model) const
{
    torch::NoGradGuard noGrad;
    for (auto& item : model.named_parameters(/*recurse=*/true)) {
        if (owns(item.key()))
            continue;
        torch::Tensor p = item.value();
        // set_data keeps the parameter object (the module's member) and drops its storage.
        p.set_data(torch::empty({0}, p.options()));
        p.set_requires_grad(false);
    }
}

std::string Pipeline::describe(const VlmModelImpl& model) const
{
    int64_t bytes = 0;
    for (const auto& p : model.parameters())
        bytes += p.numel() * static_cast<int64_t>(p.element_size());
    std::string text = "pp" + str(m_stages) + (m_chunks > 1 ? " vpp" + str(m_chunks) : std::string()) + " stage " +
                       str(m_stage) + ": decoder layers ";
    for (int c = 0; c < m_chunks; ++c)
        text += (c > 0 ? ", [" : "[") + str(layerBegin(c)) + ", " + str(layerEnd(c)) + ")";
    if (isFirst())
        text += " + vision encoder, projectors, embedding";
    if (isLast())
        text += " + final norm, output layer, loss";
    char mib[64];
    std::snprintf(mib, sizeof mib, "; parameters held %.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text + mib;
}

torch::Tensor Pipeline::combineGradNorm(const torch::Tensor& stageNorm)
{
    std::vector<torch::Tensor> squares{stageNorm.to(torch::kFloat32).pow(2).reshape({1})};
    m_pipeGroup->allreduce(squares, ReduceOp::Sum);
    return squares[0].squeeze().sqrt();
}

std::vector<torch::Tensor> Pipeline::exchange(int peerStage, const std::vector<torch::Tensor>& tensors,
                                              const std::vector<TensorSpec>& recvSpecs, int sendTag, int recvTag,
                                              torch::Device device)
{
    const auto start = std::chrono::steady_clock::now();
    std::vector<torch::Tensor> received;
    std::vector<torch::Tensor> sent;  // contiguous copies stay alive until the sends are done
    std::vector<std::unique_ptr<CommWork>> works;
    auto postSends = [&] {
        for (const auto& t : tensors) {
            sent.push_back(t.detach().contiguous());
            works.push_back(m_pipeGroup->sendAsync(sent.back(), peerStage, sendTag));
        }
    };
    auto postRecvs = [&] {
        for (const auto& spec : recvSpecs) {
            received.push_back(torch::empty(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(device)));
            works.push_back(m_pipeGroup->recvAsync(received.back(), peerStage, recvTag));
        }
    };
    if (m_stage % 2 == 0) {
        postSends();
        postRecvs();
    } else {
        postRecvs();
        postSends();
    }
    for (auto& w : works)
        w->wait();
    m_waitMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return received;
}

void Pipeline::postSends(int peerStage, const std::vector<torch::Tensor>& tensors, int tag)
{
    for (const auto& t : tensors) {
        m_sent.push_back(t.detach().contiguous());
        m_sends.push_back(m_pipeGroup->sendAsync(m_sent.back(), peerStage, tag));
    }
}

void Pipeline::waitSends()
{
    const auto start = std::chrono::steady_clock::now();
    for (auto& w : m_sends)
        w->wait();
    m_sends.clear();
    m_sent.clear();
    m_waitMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<torch::Tensor> Pipeline::receive(int peerStage, const std::vector<TensorSpec>& specs, int tag,
                                             torch::Device device)
{
    const auto start = std::chrono::steady_clock::now();
    std::vector<torch::Tensor> received;
    std::vector<std::unique_ptr<CommWork>> works;
    for (const auto& spec : specs) {
        received.push_back(torch::empty(spec.shape, torch::TensorOptions().dtype(spec.dtype).device(device)));
        works.push_back(m_pipeGroup->recvAsync(received.back(), peerStage, tag));
    }
    for (auto& w : works)
        w->wait();
    m_waitMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return received;
}

double Pipeline::takeWaitMs()
{
    const double ms = m_waitMs;
    m_waitMs = 0.0;
    return ms;
}

}  // namespace wb::rt
