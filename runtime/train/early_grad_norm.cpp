// The gradient norm counted during the backward (see early_grad_norm.h).
#include "runtime/train/early_grad_norm.h"

#include "runtime/model/cuda/fused_kernels.h"

#if WB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include <optional>

namespace wb::rt {

struct EarlyGradNorm::Device {
#if WB_WITH_CUDA
    std::optional<c10::cuda::CUDAStream> stream;  // the sums' side stream
    at::cuda::CUDAEvent ready;                    // the backward got this far (re-recorded per layer)
    at::cuda::CUDAEvent done;                     // the side stream's last sum
#endif
};

torch::Tensor sumOfSquaresOf(const std::vector<torch::Tensor>& tensors, const torch::TensorOptions& options)
{
    torch::NoGradGuard noGrad;
    if (!tensors.empty() && cuda::sumOfSquaresSupports(tensors))
        return cuda::sumOfSquares(tensors);
    auto total = torch::zeros({}, options.dtype(torch::kFloat32));
    for (const auto& t : tensors)
        total += t.to(torch::kFloat32).pow(2).sum();
    return total;
}

EarlyGradNorm::EarlyGradNorm(torch::Device device, LayerRunner* inner)
    : m_device(device), m_inner(inner), m_side(std::make_unique<Device>())
{
#if WB_WITH_CUDA
    if (device.is_cuda())
        m_side->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
#endif
}

EarlyGradNorm::~EarlyGradNorm() = default;

void EarlyGradNorm::forget()
{
    m_layers.clear();
    m_seen.clear();
    m_twice.clear();
    m_counted.clear();
    m_partials.clear();
}

void EarlyGradNorm::arm()
{
    forget();
    m_armed = true;
}

std::vector<torch::Tensor> EarlyGradNorm::run(const LayerKey& key, const LayerFn& fn,
                                              const std::vector<torch::Tensor>& inputs)
{
    if (!m_armed || key.module == nullptr || !torch::GradMode::is_enabled() || !anyRequiresGrad(inputs))
        return runLayer(m_inner, key, fn, inputs);
    // A layer run twice in the micro-batch: its first run's hook would fire with the second's
    // gradient still to come, so neither counts it early.
    if (!m_seen.insert(key.module).second)
        m_twice.insert(key.module);
    const auto tag = static_cast<int64_t>(m_layers.size());
    m_layers.push_back(key.module);
    return runLayer(m_inner, key, fn, withBackwardHook(inputs, this, tag));
}

void EarlyGradNorm::onBackward(int64_t tag)
{
    if (!m_armed || tag < 0 || tag >= static_cast<int64_t>(m_layers.size()))
        return;
    torch::nn::Module* layer = m_layers[static_cast<size_t>(tag)];
    if (m_twice.count(layer))
        return;
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : layer->parameters(/*recurse=*/true)) {
        const torch::Tensor& g = p.grad();
        if (!p.requires_grad() || !g.defined() || m_counted.count(g.unsafeGetTensorImpl()))
            continue;
        m_counted[g.unsafeGetTensorImpl()] = g._version();
        grads.push_back(g);
    }
    if (grads.empty())
        return;
#if WB_WITH_CUDA
    if (m_side->stream) {
        // Behind the backward so far (the stream autograd runs this layer's backward on), on the
        // side stream, while the backward goes on to the layers before it.
        const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m_device.index());
        m_side->ready.record(current);
        m_side->ready.block(*m_side->stream);
        c10::cuda::CUDAStreamGuard onSide(*m_side->stream);
        m_partials.push_back(sumOfSquaresOf(grads, grads[0].options()));
        return;
    }
#endif
    m_partials.push_back(sumOfSquaresOf(grads, grads[0].options()));
}

torch::Tensor EarlyGradNorm::norm(const std::vector<torch::Tensor>& grads)
{
    torch::NoGradGuard noGrad;
    m_armed = false;
#if WB_WITH_CUDA
    if (m_side->stream && !m_partials.empty()) {
        const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m_device.index());
        m_side->done.record(*m_side->stream);
        m_side->done.block(current);
        // The sums were allocated on the side stream and are read (and freed) on this one.
        for (const auto& partial : m_partials)
            c10::cuda::CUDACachingAllocator::recordStream(partial.storage().data_ptr(), current);
    }
#endif
    // Every gradient counted early must still be the one the optimizer steps, unchanged since;
    // otherwise (a gradient replaced or added to after its layer's hook) all are read again here.
    std::vector<torch::Tensor> rest;
    size_t found = 0;
    for (const auto& g : grads) {
        const auto it = m_counted.find(g.unsafeGetTensorImpl());
        if (it != m_counted.end() && it->second == g._version())
            ++found;
        else
            rest.push_back(g);
    }
    if (found != m_counted.size()) {
        rest = grads;
        m_partials.clear();
        found = 0;
    }
    const torch::TensorOptions options = grads.empty() ? torch::TensorOptions().device(m_device) : grads[0].options();
    torch::Tensor total = sumOfSquaresOf(rest, options);
    for (const auto& partial : m_partials)
        total = total + partial;
    m_countedEarly = static_cast<int64_t>(found);
    m_countedTotal = static_cast<int64_t>(grads.size());
    forget();
    return total.sqrt();
}

}  // namespace wb::rt
