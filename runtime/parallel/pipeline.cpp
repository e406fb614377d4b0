// Pipeline stages: groups, layer split, parameter ownership, the p2p exchange (see pipeline.h).
#include "runtime/parallel/pipeline.h"

#include "runtime/model/vlm_model.h"

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

std::string pipelineLayerSplit(const core::RunConfig& config)
{
    const auto& p = config.parallel;
    if (p.pipelineModelParallelSize < 2)
        return {};
    try {
        const auto layers = pipelineStageLayers(config.model.decoder.numLayers, p.pipelineModelParallelSize,
                                                p.numLayersInFirstPipelineStage, p.numLayersInLastPipelineStage);
        std::string text = "pp_layers:";
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
    if (p.virtualPipelineModelParallelSize > 1)
        // moe-train --validate refuses this first (runtime_checks.cpp); kept for callers that skip it.
        throw std::invalid_argument("parallel.virtual_pipeline_model_parallel_size " +
                                    str(p.virtualPipelineModelParallelSize) +
                                    ": moe-train runs plain 1F1B only, without virtual (interleaved) stages "
                                    "(docs/parallel.md \"Not done\"); set it to 1");
    m_layers = pipelineStageLayers(config.model.decoder.numLayers, m_stages, p.numLayersInFirstPipelineStage,
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
        return layerBegin() <= layer && layer < layerEnd();
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
    std::string text = "pp" + str(m_stages) + " stage " + str(m_stage) + ": decoder layers [" + str(layerBegin()) + ", " +
                       str(layerEnd()) + ")";
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
    return received;
}

}  // namespace wb::rt
