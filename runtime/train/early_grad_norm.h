// The gradient norm counted during the backward (WB_EARLY_GRAD_NORM=1, one rank; experimental,
// off by default until a GPU round has measured it). The clip needs ‖g‖ over every gradient
// before AdamW may start, and the serial step reads all of them once more after the backward
// (cuda::sumOfSquares: 3.8 ms a step of the benchmark slice on an H200). But a layer's gradients
// are final as soon as the last micro-batch's backward has left that layer: this runner puts a
// backward hook (backward_hook.h) on each layer's inputs during that micro-batch, and when it
// fires sums the squares of that layer's gradients on a side stream, behind the backward of the
// layers before it. At the optimizer step the current stream waits for the side stream, and only
// the gradients no layer counted (embedding, output layer, norms, projectors, the vision input)
// are read there. The norm is the same sum in another order (fp32 rounding of the norm only).
// On the CPU the sums run at once on the calling thread (the tests' path).
#pragma once

#include "runtime/model/backward_hook.h"
#include "runtime/model/layer_runner.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

namespace wb::rt {

class EarlyGradNorm final : public LayerRunner, public BackwardHookTarget {
public:
    /// `inner`: the runner each layer goes on to (recompute; not owned, may be null).
    EarlyGradNorm(torch::Device device, LayerRunner* inner);
    ~EarlyGradNorm() override;
    EarlyGradNorm(const EarlyGradNorm&) = delete;
    EarlyGradNorm& operator=(const EarlyGradNorm&) = delete;

    /// Before the forward of the step's last micro-batch: from now on a layer's gradients are
    /// counted when its backward is done.
    void arm();
    /// The global L2 norm of `grads` (every gradient the optimizer steps, as globalGradNorm takes
    /// them): the layers' sums counted during the backward plus the rest, read now. Ends the
    /// step's counting (the next arm() starts afresh).
    torch::Tensor norm(const std::vector<torch::Tensor>& grads);

    std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn,
                                   const std::vector<torch::Tensor>& inputs) override;
    void onBackward(int64_t tag) override;

    /// For tests and the log: gradients counted early in the last norm() (of how many).
    int64_t countedEarly() const { return m_countedEarly; }
    int64_t countedTotal() const { return m_countedTotal; }

private:
    void forget();  // the step's layers, counted gradients and sums

    struct Device;  // the side stream and its last event (CUDA builds)
    torch::Device m_device;
    LayerRunner* m_inner;
    bool m_armed = false;
    std::vector<torch::nn::Module*> m_layers;  // tag → layer hooked during the armed micro-batch
    std::set<torch::nn::Module*> m_seen;       // layers run while armed (a second run: not early)
    std::set<torch::nn::Module*> m_twice;
    std::map<const c10::TensorImpl*, int64_t> m_counted;  // gradient counted early → its version then
    std::vector<torch::Tensor> m_partials;                // Σ x² per counted layer (fp32, 0-d)
    int64_t m_countedEarly = 0, m_countedTotal = 0;
    std::unique_ptr<Device> m_side;
};

/// Σ x² over `tensors` in fp32 as a 0-d tensor: cuda::sumOfSquares where it applies, else per
/// tensor in ATen.
torch::Tensor sumOfSquaresOf(const std::vector<torch::Tensor>& tensors, const torch::TensorOptions& options);

}  // namespace wb::rt
