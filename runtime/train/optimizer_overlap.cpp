// The optimizer step overlapped with the next forward (see optimizer_overlap.h).
#include "runtime/train/optimizer_overlap.h"

#include "runtime/model/torch_compat.h"
#include "runtime/train/fused_adamw.h"

#if WB_WITH_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

namespace wb::rt {

namespace {

// "vision.blocks.12.qkv.weight" → 12 for prefix "vision.blocks."; −1 when it does not match.
int layerIndex(const std::string& name, const std::string& prefix)
{
    if (name.rfind(prefix, 0) != 0)
        return -1;
    const size_t end = name.find('.', prefix.size());
    if (end == std::string::npos || end == prefix.size())
        return -1;
    int index = 0;
    for (size_t i = prefix.size(); i < end; ++i) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        index = index * 10 + (name[i] - '0');
    }
    return index;
}

bool startsWith(const std::string& name, const char* prefix)
{
    return name.rfind(prefix, 0) == 0;
}

}  // namespace

std::vector<UpdateGroup> forwardOrderGroups(torch::nn::Module& model, const std::vector<torch::Tensor>& optimized)
{
    ParameterSubset wanted;
    for (const auto& p : optimized)
        wanted.insert(p.unsafeGetTensorImpl());
    // Sort key: (part, layer) in forward order; parts 0 vision input, 1 vision block, 2 projectors,
    // 3 decoder input, 4 decoder layer (the head joins the last one once it is known).
    std::map<std::pair<int, int>, UpdateGroup> byKey;
    std::vector<torch::Tensor> head, unplaced;
    int lastDecoderLayer = -1;
    ParameterSubset placed;
    for (const auto& item : model.named_parameters(/*recurse=*/true)) {
        const std::string& name = item.key();
        const torch::Tensor& p = item.value();
        if (!wanted.count(p.unsafeGetTensorImpl()) || !placed.insert(p.unsafeGetTensorImpl()).second)
            continue;  // not optimized (frozen, another stage's), or a parameter shared by two names
        std::pair<int, int> key;
        std::string groupName;
        if (int i = layerIndex(name, "vision.blocks."); i >= 0)
            key = {1, i}, groupName = "vision.blocks." + std::to_string(i);
        else if (startsWith(name, "vision."))
            key = {0, 0}, groupName = "vision.input";
        else if (startsWith(name, "projector.") || startsWith(name, "deepstack_projectors."))
            key = {2, 0}, groupName = "projectors";
        else if (int l = layerIndex(name, "decoder.layers."); l >= 0) {
            key = {4, l}, groupName = "decoder.layers." + std::to_string(l);
            lastDecoderLayer = std::max(lastDecoderLayer, l);
        } else if (startsWith(name, "decoder.final_norm.") || startsWith(name, "decoder.output.")) {
            head.push_back(p);
            continue;
        } else if (startsWith(name, "decoder."))
            key = {3, 0}, groupName = "decoder.input";
        else {
            unplaced.push_back(p);
            continue;
        }
        auto& group = byKey[key];
        group.name = groupName;
        group.params.push_back(p);
    }
    // The final norm and the output layer run right after the last decoder layer: they wait with
    // it. A stage without decoder layers but with the head (not a layout Megatron builds) gets a
    // group of its own after everything else.
    if (!head.empty()) {
        auto& group = byKey[{4, lastDecoderLayer >= 0 ? lastDecoderLayer : 1 << 30}];
        if (group.name.empty())
            group.name = "decoder.head";
        group.params.insert(group.params.end(), head.begin(), head.end());
    }
    std::vector<UpdateGroup> groups;
    for (auto& [key, group] : byKey)
        groups.push_back(std::move(group));
    // Optimized tensors the names do not reach (none in this model; a safety net): the first
    // group, which every wait covers (the update stream runs the groups in order).
    for (const auto& p : optimized)
        if (!placed.count(p.unsafeGetTensorImpl()))
            unplaced.push_back(p);
    if (!unplaced.empty()) {
        if (groups.empty())
            groups.push_back({"other", {}, {}});
        groups.front().params.insert(groups.front().params.end(), unplaced.begin(), unplaced.end());
    }
    for (auto& group : groups)
        for (const auto& p : group.params)
            group.subset.insert(p.unsafeGetTensorImpl());
    return groups;
}

void preferTrainingStream(torch::Device device)
{
#if WB_WITH_CUDA
    if (!device.is_cuda())
        return;
    const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
    // Work queued on the old stream (the weights' copies) must be done before the new one, which
    // does not wait for it, reads them.
    c10::cuda::device_synchronize();
    c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool(/*isHighPriority=*/true, index));
#else
    (void)device;
#endif
}

void carveMatmuls(int sms)
{
#if WB_WITH_CUDA
#if WB_TORCH_AT_LEAST(2, 7)
    at::globalContext()._setSMCarveout_EXPERIMENTAL(sms > 0 ? std::optional<int32_t>(sms) : std::nullopt);
#endif
    const int count = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    TORCH_CUDABLAS_CHECK(cublasSetSmCountTarget(at::cuda::getCurrentCUDABlasHandle(), sms > 0 ? count - sms : 0));
#else
    (void)sms;
#endif
}

struct OptimizerOverlap::Device {
#if WB_WITH_CUDA
    std::optional<c10::cuda::CUDAStream> stream;  // the update stream (created at the first step)
    at::cuda::CUDAEvent ready;                    // the training stream has the gradients and the norm
    std::vector<at::cuda::CUDAEvent> done;        // group g's update is written
#endif
};

OptimizerOverlap::OptimizerOverlap(std::vector<UpdateGroup> groups, LayerRunner* inner)
    : m_groups(std::move(groups)), m_inner(inner), m_device(std::make_unique<Device>())
{
    for (size_t g = 0; g < m_groups.size(); ++g) {
        const std::string& name = m_groups[g].name;
        const int index = static_cast<int>(g);
        auto place = [&](std::vector<int>& layers, int layer) {
            if (layer >= static_cast<int>(layers.size()))
                layers.resize(static_cast<size_t>(layer) + 1, -1);
            layers[static_cast<size_t>(layer)] = index;
        };
        if (int i = layerIndex(name + ".", "vision.blocks."); i >= 0)
            place(m_visionLayer, i);
        else if (int l = layerIndex(name + ".", "decoder.layers."); l >= 0)
            place(m_decoderLayer, l);
        else if (name == "vision.input")
            m_visionInput = index;
        else if (name == "projectors")
            m_projectors = index;
        else if (name == "decoder.input")
            m_decoderInput = index;
    }
#if WB_WITH_CUDA
    m_device->done.resize(m_groups.size());
#endif
}

OptimizerOverlap::~OptimizerOverlap()
{
#if WB_WITH_CUDA
    if (m_carved) {
        try {
            carveMatmuls(0);
        } catch (const std::exception&) {  // a device already in error: nothing left to give back
        }
    }
    // Nothing may free what the update stream still reads while it runs: let it finish.
    if (m_pending && m_device->stream) {
        try {
            m_device->stream->synchronize();
        } catch (const std::exception&) {  // a device already in error: nothing left to protect
        }
    }
#endif
}

std::vector<torch::Tensor> OptimizerOverlap::run(const LayerKey& key, const LayerFn& fn,
                                                 const std::vector<torch::Tensor>& inputs)
{
    const std::vector<int>& layers = std::string(key.stack) == "vision" ? m_visionLayer : m_decoderLayer;
    if (key.index >= 0 && key.index < static_cast<int>(layers.size()))
        waitFor(layers[static_cast<size_t>(key.index)]);
    return runLayer(m_inner, key, fn, inputs);
}

void OptimizerOverlap::beforeUse(ParameterUse use)
{
    switch (use) {
    case ParameterUse::VisionInput: waitFor(m_visionInput); break;
    case ParameterUse::Projectors: waitFor(m_projectors); break;
    case ParameterUse::DecoderInput: waitFor(m_decoderInput); break;
    }
}

void OptimizerOverlap::waitFor(int group)
{
    // The update stream runs the groups in order: waiting for group g covers every group before
    // it, and a group waited for once this step needs no second wait (recompute, more micro-batches).
    if (group <= m_waitedUpTo || !m_pending)
        return;
#if WB_WITH_CUDA
    m_device->done[static_cast<size_t>(group)].block(at::cuda::getCurrentCUDAStream());
    ++m_waits;
    // From the last group on, the training stream runs after every update: all SMs are its own.
    if (m_carved && group + 1 == static_cast<int>(m_groups.size())) {
        carveMatmuls(0);
        m_carved = false;
    }
#endif
    m_waitedUpTo = group;
}

void OptimizerOverlap::waitAll()
{
    if (!m_groups.empty())
        waitFor(static_cast<int>(m_groups.size()) - 1);
}

void OptimizerOverlap::step(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes,
                            const torch::Tensor& gradScale, const std::function<void()>& afterUpdates)
{
    torch::NoGradGuard noGrad;
    const bool onCuda = !m_groups.empty() && !m_groups.front().params.empty() &&
                        m_groups.front().params.front().is_cuda();
    if (!onCuda) {  // CPU: the same groups, now, in order
        if (gradScale.defined())
            for (const auto& group : m_groups)
                for (const auto& p : group.params)
                    if (p.grad().defined())
                        p.mutable_grad().div_(gradScale.to(p.grad().scalar_type()));
        for (const auto& group : m_groups)
            adamWStepAten(optimizer, dtypes, &group.subset);
        for (const auto& group : m_groups)
            for (const auto& p : group.params)
                p.mutable_grad().reset();
        if (afterUpdates)
            afterUpdates();
        return;
    }
#if WB_WITH_CUDA
    const c10::DeviceIndex deviceIndex = m_groups.front().params.front().device().index();
    const c10::cuda::CUDAStream training = at::cuda::getCurrentCUDAStream(deviceIndex);
    if (!m_device->stream)
        m_device->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, deviceIndex);
    const c10::cuda::CUDAStream updates = *m_device->stream;
    // The previous step's updates were all waited for by this step's forward, or are waited for
    // here (a step whose forward skipped a part: a stage, a text-only micro-batch).
    waitAll();
    m_device->ready.record(training);
    m_device->ready.block(updates);
    {
        c10::cuda::CUDAStreamGuard guard(updates);
        if (m_beforeUpdates)
            m_beforeUpdates();
        for (size_t g = 0; g < m_groups.size(); ++g) {
            // Short blocks: the training stream's kernels get SMs as soon as any block retires; with an
            // SM budget, that many resident blocks beside the carved matmuls instead.
            fusedAdamWStep(optimizer, dtypes, gradScale,
                           {&m_groups[g].subset, m_bf16Weights, /*onePassGrid=*/true, /*residentBlocks=*/m_smBudget});
            if (g + 1 < m_groups.size())
                m_device->done[g].record(updates);
        }
        // The gradients came from the training stream's memory pool and the update stream reads
        // them until its kernels ran: recorded, so the allocator does not hand their blocks out
        // before that. Dropped, as zero_grad drops them: the next backward makes new ones.
        for (const auto& group : m_groups)
            for (const auto& p : group.params)
                if (p.grad().defined()) {
                    p.grad().record_stream(updates.unwrap());
                    p.mutable_grad().reset();
                }
        if (gradScale.defined())
            gradScale.record_stream(updates.unwrap());
        if (afterUpdates)
            afterUpdates();  // e.g. re-zeroing the reducer's buckets: after every update read them
        m_device->done.back().record(updates);
    }
    m_pending = true;
    m_waitedUpTo = -1;
    if (m_smBudget > 0) {  // until the forward reaches the last group (waitFor)
        carveMatmuls(m_smBudget);
        m_carved = true;
    }
#else
    (void)optimizer;
    (void)dtypes;
    (void)afterUpdates;
    throw std::logic_error("OptimizerOverlap: CUDA parameters in a build without CUDA");
#endif
}

}  // namespace wb::rt
