// Bf16 copies of the fp32 master weights (see bf16_weights.h).
#include "runtime/model/bf16_weights.h"

#include "runtime/model/cuda/fused_kernels.h"

namespace wb::rt {
namespace {

// The gradient of a bf16 operand, back in the master's fp32. ATen's copy for bf16 → fp32 is its
// generic unrolled kernel (~2 TB/s on an H200: the experts' gradient casts took 10.5 ms of a 267 ms
// step of the benchmark slice, 3.6 G values); cuda::widenToFloat is one vectorized pass.
torch::Tensor widenGradient(const torch::Tensor& grad)
{
    auto g = grad.contiguous();
    return cuda::widenSupports(g) ? cuda::widenToFloat(g) : g.to(torch::kFloat32);
}

// The kept copy as the operand of `master` in the graph: forward hands out the copy (a new
// TensorImpl on its storage, so that the graph's bookkeeping never lands on the kept tensor),
// backward widens the gradient for the master, or with bf16 gradients puts it in the master's
// .grad itself and hands autograd none (its AccumulateGrad node then does nothing).
class CopyOperand : public torch::autograd::Function<CopyOperand> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& master,
                                 const torch::Tensor& copy, bool bf16Gradient)
    {
        if (bf16Gradient)
            ctx->saved_data["master"] = master;  // a leaf: no version check, no cycle
        return copy.detach();
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto master = ctx->saved_data.find("master");
        if (master == ctx->saved_data.end())
            return {widenGradient(grads[0]), torch::Tensor(), torch::Tensor()};
        accumulateBf16Gradient(master->second.toTensor(), grads[0]);
        return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

// No kept copy: the cast autocast would make, with the same backward.
class CastOperand : public torch::autograd::Function<CastOperand> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& w)
    {
        return w.to(torch::kBFloat16).contiguous();
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*, torch::autograd::tensor_list grads)
    {
        return {widenGradient(grads[0])};
    }
};

}  // namespace

bool Bf16Weights::current(const Copy& c) const
{
    return c.master._version() == c.version && c.master.data_ptr() == c.data;
}

torch::Tensor Bf16Weights::operand(const torch::Tensor& master)
{
    if (master.scalar_type() != torch::kFloat32)
        return master;
    auto it = m_copies.find(master.unsafeGetTensorImpl());
    if (it == m_copies.end() || !current(it->second)) {
        // A new tensor, never the old one written over: a graph may still hold the old copy.
        torch::Tensor bf16;
        {
            torch::NoGradGuard noGrad;
            bf16 = master.detach().to(torch::kBFloat16).contiguous();
        }
        Copy c{master, bf16, master._version(), master.data_ptr()};
        it = m_copies.insert_or_assign(master.unsafeGetTensorImpl(), std::move(c)).first;
    }
    const torch::Tensor& copy = it->second.bf16;
    if (master.requires_grad() && torch::GradMode::is_enabled())
        return CopyOperand::apply(master, copy, m_bf16Gradients);
    return copy.detach();
}

torch::Tensor Bf16Weights::copyOf(const torch::Tensor& master) const
{
    const auto it = m_copies.find(master.unsafeGetTensorImpl());
    if (it == m_copies.end() || !current(it->second))
        return {};
    return it->second.bf16;
}

int64_t Bf16Weights::bytes() const
{
    int64_t total = 0;
    for (const auto& [impl, c] : m_copies)
        total += c.bf16.numel() * static_cast<int64_t>(c.bf16.element_size());
    return total;
}

void accumulateBf16Gradient(const torch::Tensor& master, const torch::Tensor& grad)
{
    if (!grad.defined())
        return;
    torch::NoGradGuard noGrad;
    torch::Tensor& held = const_cast<torch::Tensor&>(master).mutable_grad();
    if (!held.defined()) {
        // Kept as it is (never changed in place later: a second contribution makes a new fp32
        // tensor) unless it is strided or a view into a larger block: then a compact copy.
        const bool compact = grad.is_contiguous() && grad.storage_offset() == 0 &&
                             static_cast<int64_t>(grad.storage().nbytes()) == grad.numel() * grad.element_size();
        held = compact ? grad.detach() : grad.detach().clone(at::MemoryFormat::Contiguous);
        return;
    }
    if (held.scalar_type() != torch::kFloat32)
        held = widenGradient(held);
    held.add_(grad);  // fp32 += bf16: each value widened, then added in fp32
}

torch::Tensor UsesBf16Weights::applyLinear(const torch::nn::Linear& l, const torch::Tensor& x) const
{
    // LinearImpl::forward is this linear with the weight as it is.
    return torch::nn::functional::linear(x, weightOperand(l->weight), l->bias);
}

torch::Tensor bf16Operand(const torch::Tensor& w)
{
    if (w.scalar_type() == torch::kFloat32 && w.is_cuda() && w.requires_grad() && torch::GradMode::is_enabled())
        return CastOperand::apply(w);
    return w.to(torch::kBFloat16).contiguous();
}

}  // namespace wb::rt
