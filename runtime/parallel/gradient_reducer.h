// Data-parallel gradient averaging overlapped with the last micro-batch's backward (what c10d's
// Reducer and Megatron's DDP `overlap_grad_reduce` do), applied from outside the model: a post hook
// on each trainable parameter's gradient accumulator marks the parameter ready once autograd has
// accumulated its gradient; a bucket whose parameters are all ready is copied into a flat buffer
// and its allreduce launched asynchronously, while backward goes on with earlier layers.
//
// Buckets (≤ bucketBytes, one group, dtype, device and divisor each) are fixed at construction,
// over the parameters in REVERSE order (the order given is the model's registration order, so the
// last layers, whose gradients backward produces first, fill the first buckets). Each group's
// buckets are launched strictly in bucket order on every rank: a collective of one group must be
// issued in the same order everywhere (NCCL hangs, Gloo pairs up the wrong buffers otherwise).
//
// finish(), after the backward: launches the buckets not launched yet (their missing gradients —
// an expert no token of this rank reached, a vision tower a text-only micro-batch never ran —
// as zeros), agrees over `world` which gradients exist anywhere (one small max-allreduce) and
// whether any rank's hook fired again after its bucket had gone out (then that bucket is reduced
// again, everywhere), launches the deferred buckets (gradients that need a step of their own
// first: tensor parallelism's partial ones, summed over TP by `beforeDeferred`), waits for all,
// scales and copies back. A gradient undefined on every rank stays undefined (AdamW skips it,
// as on one rank); one defined somewhere counts as zero where it is missing. The sums are the
// same elementwise sums as DataParallel::averageGradients' (same operands, same reduction, same
// scale), so the result is the synchronous path's.
//
// Threads: arm() and finish() on the training thread; the hooks run inside backward (the training
// thread on the CPU, autograd's device thread on CUDA while the training thread waits in
// backward()); they share the state under m_mutex. CUDA: a bucket's copy runs on the hook
// thread's current stream (autograd's: the one its forward ran on), which NCCL's stream waits
// for when the allreduce is enqueued; finish() waits on the training thread's current stream.
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
    int64_t reReduced = 0;           ///< buckets reduced again (a hook fired after their launch)
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
        torch::Tensor flat;
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
        bool late = false;  // its hook fired again after its bucket was launched
        std::shared_ptr<torch::autograd::Node> accumulator;
        uintptr_t hookKey = 0;
    };

    void buildBuckets(std::size_t bucketBytes);
    void registerHooks();
    void onGradientReady(size_t index);  // the hook; takes m_mutex
    // The lane's next buckets while they are complete (in backward) or all non-deferred ones.
    void launchInOrder(Lane& lane, bool inBackward, bool all);  // m_mutex held
    void launch(Bucket& bucket, bool inBackward);
    void agreePresence(std::vector<bool>& present, std::vector<bool>& lateAnywhere);
    void reduceAgainWhereLate(const std::vector<bool>& lateAnywhere);
    void waitScaleCopyBack(Bucket& bucket, const std::vector<bool>& present);
    void resetForNextStep();

    ProcessGroup& m_world;
    std::vector<Param> m_params;
    std::vector<Bucket> m_buckets;
    std::vector<Lane> m_lanes;
    mutable std::mutex m_mutex;
    bool m_armed = false;        // guarded by m_mutex
    GradientReducerStats m_stats;  // guarded by m_mutex
};

}  // namespace wb::rt
