// Data-parallel gradient averaging overlapped with the last micro-batch's backward (what c10d's
// Reducer with gradient_as_bucket_view and Megatron's DDP `overlap_grad_reduce` with its
// contiguous grad buffers do), applied from outside the model: a post hook on each trainable
// parameter's gradient accumulator marks the parameter ready once autograd has accumulated its
// gradient; a bucket whose parameters are all ready has its allreduce launched asynchronously,
// while backward goes on with earlier layers.
//
// Gradients ARE the buckets: each bucket owns one flat buffer (allocated once, dtype and device of
// its parameters) and every bucketed parameter's .grad is a view of its slice, so autograd's
// accumulator adds straight into the buffer (a defined, non-shared grad is accumulated in place
// without grad mode, LibTorch 1.13 and 2.x alike) and the allreduce and the scale run in place:
// no copy in, no copy back, no second copy of the gradients. zeroGradients(), after the
// optimizer's zero_grad, zeroes each buffer (one zero_ per bucket) and points the gradients back
// at their slices. Deferred parameters (tensor parallelism's partial gradients) stay on the copy
// path: their bucket is flattened with cat when launched and copied back in finish().
//
// Buckets (≤ bucketBytes, one group, dtype, device and divisor each) are fixed at construction,
// over the parameters in REVERSE order (the order given is the model's registration order, so the
// last layers, whose gradients backward produces first, fill the first buckets). Each group's
// buckets are launched strictly in bucket order on every rank: a collective of one group must be
// issued in the same order everywhere (NCCL hangs, Gloo pairs up the wrong buffers otherwise).
//
// Presence: a view is always defined, so a bucketed gradient counts as present on this rank when
// its accumulator received a gradient in ANY micro-batch of the step (or it was defined when the
// step began: LibTorch 1.13's zero_grad zeroes instead of dropping). finish() agrees presence over
// `world` (one small max-allreduce): present nowhere → .grad undefined after finish() (AdamW skips
// it, as on one rank), its view back at zeroGradients(); present elsewhere → the zeros already in
// the buffer.
//
// Late hooks (an accumulation after its bucket went out: a parameter used by two graphs of one
// backward, e.g. shared across reentrant recompute units) must not write into a buffer whose
// allreduce is in flight: a pre hook on the accumulator sees it coming and points that .grad at
// nothing, so autograd accumulates the late part into a tensor of its own. finish() agrees the
// late flags over the world, reduces the late parts of such a bucket (one extra allreduce of one
// bucket's size, zeros where none) and adds them to the first result; from then on that bucket is
// launched only in finish(), after the lane's others, on every rank. The first such step's sum is
// (Σ partial) + (Σ late) rather than Σ (partial + late): the same value up to rounding.
//
// Threads: arm() and finish() on the training thread; the hooks run inside backward (the training
// thread on the CPU, autograd's device thread on CUDA while the training thread waits in
// backward()); they share the state under m_mutex. CUDA: autograd accumulates into the views on
// the backward's stream (the forward's), which NCCL's stream waits for when the allreduce is
// enqueued from the hook; finish() waits on the training thread's current stream.
#pragma once

#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torch::autograd {
struct Node;
}

namespace wb::rt {

/// Bucket size: WB_GRAD_BUCKET_MB (MiB, may be fractional; for tests and tuning), else 25 MiB
/// (c10d's DDP default).
std::size_t gradientBucketBytes();

/// One parameter of the model and how its gradient is averaged.
struct ReducedParameter {
    torch::Tensor parameter;
    ProcessGroup* group = nullptr;  ///< the ranks holding the same values (null: not reduced, presence only)
    int divisor = 1;                ///< the sum over `group` is divided by this
    bool deferred = false;          ///< reduced only in finish(), after `beforeDeferred`
};

/// Counters over the reducer's life, for the rank's log and the tests.
struct GradientReducerStats {
    int64_t buckets = 0;             ///< per step, over all groups (groups of one rank have none)
    int64_t steps = 0;               ///< finish() calls
    int64_t launchedInBackward = 0;  ///< buckets whose allreduce started inside backward
    int64_t launchedAtFinish = 0;    ///< buckets started by finish() (incl. deferred ones)
    int64_t zeroFilled = 0;          ///< gradients missing here but present on another rank
    int64_t undefinedEverywhere = 0; ///< trainable gradients left undefined (on no rank)
    int64_t reReduced = 0;           ///< buckets whose late parts were reduced (a hook fired after their launch)
    int64_t finishOnlyBuckets = 0;   ///< buckets launched only in finish() since a late hook
    int64_t copiedIn = 0;            ///< gradients found not to be their bucket's view (someone replaced
                                     ///< .grad without zeroGradients()): copied into the buffer
    int64_t bufferBytes = 0;         ///< the flat buffers the gradients are views of (all buckets)
};

class GradientReducer {
public:
    /// `parameters`: every parameter of the model, in the same order on every rank of `world`
    /// (each `group` a sub-group of `world`, the same buckets on all of its ranks). Registers the
    /// hooks; they do nothing until arm(). `world` and the groups must outlive this.
    GradientReducer(ProcessGroup& world, std::vector<ReducedParameter> parameters, std::size_t bucketBytes);
    ~GradientReducer();
    GradientReducer(const GradientReducer&) = delete;
    GradientReducer& operator=(const GradientReducer&) = delete;

    /// The next backward is the step's last on this rank: its hooks launch buckets.
    void arm();
    /// After that backward (or with none armed: all buckets launch here). Throws CommError.
    void finish(const std::function<void()>& beforeDeferred = {});
    /// Between steps, after the optimizer's zero_grad (which may have dropped the gradients,
    /// LibTorch 2.x's default, or zeroed them, 1.13): zeroes every bucket buffer in place and sets
    /// each bucketed parameter's .grad back to its view. The constructor does it once too.
    void zeroGradients();
    /// The buffer the bucketed `parameter`'s gradient is a view of (undefined for one not bucketed
    /// or deferred): for the tests' storage checks.
    torch::Tensor bucketBuffer(const torch::Tensor& parameter) const;

    GradientReducerStats stats() const;
    /// e.g. "gradient buckets: 6 per step over 2 groups; after 3 steps 15 launched during backward, …"
    std::string summary() const;

private:
    struct Bucket {
        ProcessGroup* group = nullptr;
        size_t lane = 0;
        std::vector<size_t> members;  // indices into m_params, in bucket order
        int64_t numel = 0;
        int divisor = 1;
        bool deferred = false;
        size_t pending = 0;  // members not ready yet (this backward)
        bool launched = false;
        bool launchedInBackward = false;
        bool finishOnly = false;  // a late hook was seen: launched only in finish() from then on
        torch::Tensor flat;       // the gradients' buffer (deferred: this step's copy, then released)
        std::unique_ptr<CommWork> work;
    };
    struct Lane {  // one group's buckets, launched in order
        ProcessGroup* group = nullptr;
        std::vector<size_t> buckets;  // indices into m_buckets
        size_t next = 0;              // first not launched
    };
    struct Param {
        ReducedParameter spec;
        int64_t offset = 0;  // in its bucket's flat buffer
        int bucket = -1;     // -1: not in a bucket (frozen, empty, or a one-rank group)
        bool ready = false;
        bool touched = false;          // its accumulator received a gradient this step
        bool definedAtStart = false;   // the view stands for a defined .grad: it was present at the last
                                       // finish() and zero_grad kept it (1.13), or someone set one
        bool late = false;  // its accumulator ran again after its bucket was launched
        std::shared_ptr<torch::autograd::Node> accumulator;
        uintptr_t hookKey = 0;
        torch::Tensor view;  // its slice of the bucket buffer, shaped as the parameter (not deferred)
    };

    void buildBuckets(std::size_t bucketBytes);
    void registerHooks();
    void onGradientReady(size_t index, bool received);  // the post hook; takes m_mutex
    void beforeAccumulation(size_t index);              // the pre hook; takes m_mutex
    bool isView(const Param& p) const;
    void attachViews();
    // The lane's next buckets while they are complete (in backward) or all non-deferred ones.
    void launchInOrder(Lane& lane, bool inBackward, bool all);  // m_mutex held
    void launch(Bucket& bucket, bool inBackward);
    void agreePresence(std::vector<bool>& present, std::vector<bool>& lateAnywhere);
    void reduceAgainWhereLate(const std::vector<bool>& lateAnywhere);
    void waitScaleCopyBack(Bucket& bucket, const std::vector<bool>& present);
    void moveFinishOnlyLast();
    void resetForNextStep();

    ProcessGroup& m_world;
    std::vector<Param> m_params;
    std::vector<Bucket> m_buckets;
    std::vector<Lane> m_lanes;
    mutable std::mutex m_mutex;
    bool m_armed = false;        // guarded by m_mutex
    GradientReducerStats m_stats;  // guarded by m_mutex
    // The hooks' way back here; nulled by the destructor (1.13 cannot remove a pre hook).
    std::shared_ptr<GradientReducer*> m_self;
};

}  // namespace wb::rt
