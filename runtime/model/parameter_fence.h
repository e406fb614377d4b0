// ParameterFence: where the forward first reads parameters that live outside the layers of a
// stack (the layers themselves are reached through the LayerRunner, layer_runner.h). An optimizer
// that updates the weights asynchronously (runtime/train/optimizer_overlap.h: each layer's AdamW
// update on a side stream, in forward order) makes the current stream wait there for the part it
// is still updating; the model only says where. Training thread only.
#pragma once

namespace wb::rt {

/// The parameters outside the stacks' layers, in the order the forward reaches them.
enum class ParameterUse {
    VisionInput,   ///< the vision encoder's patch embedding (before its first block)
    Projectors,    ///< the projector and the deepstack projectors
    DecoderInput,  ///< the token embedding (before the first decoder layer)
};

class ParameterFence {
public:
    virtual ~ParameterFence() = default;
    /// Called before the forward reads the parameters of `use`.
    virtual void beforeUse(ParameterUse use) = 0;
};

}  // namespace wb::rt
