// The trainer's class, shared by trainer.cpp (set-up, the run loop, the single-stage step, the
// optimizer step, reporting), trainer_setup.cpp (setUp's steps: meta line, GPU monitor, the
// runners installed into the model, the checkpointer) and trainer_pipeline.cpp (the pipelined
// step, PP > 1). What has state of its own lives in its own class: Checkpointer, StepReducer,
// RouterGraphsRunner, KernelProfiler. Internal to runtime/train: the public entry point is
// runTraining (trainer.h). Training thread only.
#pragma once

#include "core/metrics_schema.h"
#include "core/run_config.h"
#include "runtime/data/batch_loader.h"
#include "runtime/model/torch_compat.h"
#include "runtime/model/vlm_model.h"
#include "runtime/parallel/parallel_training.h"
#include "runtime/parallel/pipeline.h"
#include "runtime/parallel/process_group.h"
#include "runtime/train/checkpointer.h"
#include "runtime/train/early_grad_norm.h"
#include "runtime/train/gpu_monitor.h"
#include "runtime/train/metrics_writer.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/optimizer_overlap.h"
#include "runtime/train/recompute_runner.h"
#include "runtime/train/router_graphs_runner.h"
#include "runtime/train/run_reporting.h"
#include "runtime/train/status_file.h"
#include "runtime/train/step_reducer.h"
#include "runtime/train/step_timer.h"
#include "runtime/train/trainer.h"

#include <torch/torch.h>
#if WB_WITH_CUDA
#include <ATen/autocast_mode.h>
#endif

#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace wb::rt::train_detail {

// bf16 autocast on CUDA for the forward of one micro-batch (RAII). Leaving it clears the cache
// of bf16 weight copies, as Python's autocast does on exit; autograd keeps what backward needs.
class AutocastScope {
public:
    explicit AutocastScope(bool enable) : m_enabled(enable)
    {
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
        if (m_enabled) {
            at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
            at::autocast::set_autocast_enabled(at::kCUDA, true);
        }
#endif
    }
    ~AutocastScope()
    {
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
        if (m_enabled) {
            at::autocast::set_autocast_enabled(at::kCUDA, false);
            at::autocast::clear_cache();
        }
#endif
    }
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    bool m_enabled;
};

class Trainer {
public:
    Trainer(const core::RunConfig& config, const TrainOptions& options)
        : m_config(config), m_options(options), m_status(options.runDir),
          m_device(config.runtime.device == "cuda" ? torch::kCUDA : torch::kCPU),
          m_dtype(config.train.precision == "bf16" ? torch::kBFloat16 : torch::kFloat32)
    {
    }

    int run();

private:
    void setUp();
    void writeMeta();
    /// Rank 0 of a CUDA run: samples the node's GPUs (GpuMonitor); says once why not otherwise.
    void startGpuMonitor();
    core::StepRecord trainStep(int64_t step);
    std::optional<MicroBatch> nextMicroBatch(core::StepRecord& r, int64_t& stepEndSeq);
    /// Takes the next step's first local micro-batch from the loader and queues its upload, while
    /// the device still runs this step's optimizer (see m_prefetched).
    void prefetchFirstMicroBatch();
    double countMicroBatch(const MicroBatch& b, core::StepRecord& r) const;
    void pipelineMicroBatches(int64_t step, core::StepRecord& r, StepTimer& timer, double& flops, torch::Tensor& lmSum,
                              torch::Tensor& auxSum, int64_t& stepEndSeq);
    /// Rank log line of a logged step: the time this stage waited during the pipeline schedule.
    void logPipelineIdle(int64_t step, int micros, double scheduleMs);
    void event(const std::string& level, const std::string& message, int64_t step = -1);
    /// event() for the parts that report through it (checkpointer, runners).
    EventSink eventSink()
    {
        return [this](const std::string& level, const std::string& message, int64_t step) { event(level, message, step); };
    }
    /// status.json (rank 0); false when it could not be written (m_status.lastError()).
    bool writeStatus(const std::string& status, std::optional<int> exitCode, const std::string& message);
    bool writer() const { return m_env.rank == 0; }
    /// The clip, AdamW and the layout's after-step work. `beforeUpdates(norm)` runs once the
    /// gradient norm is queued and before the updates are (the host-ahead step's wait point).
    torch::Tensor optimizerStep(int64_t step, core::StepRecord& record,
                                const std::function<void(const torch::Tensor&)>& beforeUpdates = {});
    /// The step's record to metrics.jsonl and stdout (rank 0, every log_interval-th step and the last).
    void reportStep(const core::StepRecord& r);
    /// The host-ahead step left pending (m_pending): waits for its updates, completes its
    /// optimizer phase and reports it. No-op when nothing is pending.
    void completePendingStep();
    void installHostAhead();
    void reportEnvironmentSwitches();
    /// The micro-batch's tensors on the device (the decoder's segments dropped for
    /// WB_DECODER_ATTENTION=dense).
    VlmBatch upload(const MicroBatch& batch) const;
    void installRecompute();
    void installEarlyGradNorm();
    void installOptimizerOverlap();
    void attachOptimizerOverlap();
    void decideOptimizerOverlap();
    void installBf16WeightCopies();
    void makeCheckpointer();
    std::vector<torch::Tensor> optimizedParameters() const;
    std::string outOfMemoryReport(const std::string& what);
    int finish(int exitCode, const std::string& message);

    const core::RunConfig& m_config;
    TrainOptions m_options;
    StatusFile m_status;
    torch::Device m_device;
    torch::ScalarType m_dtype;
    double m_peakTflops = 0.0;    // dense bf16 per GPU; 0 = unknown (CPU), MFU 0
    bool m_bf16Autocast = false;  // CUDA + bf16: forward under autocast, flash + grouped GEMM paths
    // WB_DECODER_ATTENTION=dense: the decoder uses the dense masked core even where varlen flash
    // runs (to measure one against the other); not a config field because it is never faster.
    bool m_denseDecoderAttention = [] {
        const char* v = std::getenv("WB_DECODER_ATTENTION");
        return v && std::string(v) == "dense";
    }();
    std::unique_ptr<MetricsWriter> m_metrics;
    // The node's GPU system metrics (rank 0 of a CUDA run; NVML on a thread of its own): a "gpu"
    // record after the step it was sampled during. Null on the CPU or without NVML (said once).
    std::unique_ptr<GpuMonitor> m_gpuMonitor;
    VlmModel m_model{nullptr};
    std::unique_ptr<torch::optim::AdamW> m_optimizer;
    MomentDtypes m_moments;                   // train.exp_avg_dtype / exp_avg_sq_dtype
    std::unique_ptr<BatchLoader> m_loader;
    RankEnvironment m_env;                    // rank 0 of 1 unless started by torchrun / --nproc-per-node
    std::unique_ptr<ProcessGroup> m_group;    // single-process group for one rank
    std::unique_ptr<Pipeline> m_pipeline;     // PP > 1 only: this rank's stage and its groups
    std::unique_ptr<ParallelTraining> m_parallel;  // DP / EP / FSDP layout (runtime/parallel)
    std::unique_ptr<StepReducer> m_reducer;        // the step's statistics and stop flag over all ranks
    std::unique_ptr<RecomputeRunner> m_recompute;  // null for recompute.granularity "none"
    // WB_EARLY_GRAD_NORM=1 on one rank: the layer runner around m_recompute that counts each
    // layer's gradients in the last micro-batch's backward; null = the norm pass at the step.
    std::unique_ptr<EarlyGradNorm> m_earlyNorm;
    // train.overlap_optimizer on CUDA (not FSDP): the layer runner around m_recompute (or m_earlyNorm) and the
    // model's parameter fence; null = the serial step.
    std::unique_ptr<OptimizerOverlap> m_overlap;
    // train.overlap_optimizer "auto" on one GPU: decideOptimizerOverlap() runs after this process's
    // first step, with m_gradientBytes (the bytes of the gradients that step's optimizer read,
    // counted only while undecided).
    bool m_overlapUndecided = false;
    double m_gradientBytes = 0.0;
    // train.bf16_weight_copies on CUDA bf16 (not FSDP): the weights' bf16 copies that the AdamW
    // pass writes and the forward reads; null = autocast casts every forward.
    std::unique_ptr<Bf16Weights> m_bf16Weights;
    std::unique_ptr<Checkpointer> m_checkpointer;  // save and resume (checkpointer.h), made after the optimizer
    std::unique_ptr<RouterGraphsRunner> m_routerGraphs;  // cuda_graph scope moe_router only
    int64_t m_step = 0;             // last completed optimizer step
    int64_t m_stepEndSeq = 0;       // loader position after the last completed step
    int64_t m_warningsEmitted = 0;
    // The next step's first local micro-batch, loaded and uploaded at the end of the previous step
    // between queueing the optimizer and the step's synchronize: the host work of a batch (loader
    // hand-off, pinning, index lists) then overlaps the device's optimizer instead of leaving the
    // device idle at the start of every step (≈ 10 ms per step measured on one H200 at MBS 4).
    // Not for pipeline parallelism (its schedule loads its own micro-batches). The loader position
    // of a step is still committed only when the step completes, so a run that stops with a batch
    // prefetched resumes exactly where an uninterrupted run would be.
    struct Prefetched {
        int micro = 0;  // its index in the step's micro-batch stream (the ones before it were another rank's)
        MicroBatch batch;
        VlmBatch tensors;
        double dataMs = 0.0;  // loader wait, reported by the step that trains it
    };
    std::optional<Prefetched> m_prefetched;
    // On by default on CUDA for one rank with the serial fused AdamW step (WB_HOST_AHEAD=0: off;
    // installHostAhead says where else it applies): the step's
    // synchronize waits for the backward and the gradient norm only, so the host queues the next
    // step while the device runs this step's AdamW (it would otherwise find an empty stream and
    // stay only just ahead of the GPU through the first layers). The losses and the norm reach the
    // host through m_stepScalars (pinned, copied before the updates are queued); the step's record
    // waits in m_pending for its optimizer phase and is reported once the next step's wait has
    // passed the updates (or before a checkpoint, the profile's last step, a stop, the end).
    bool m_hostAhead = false;
    torch::Tensor m_stepScalars;  // pinned fp32 [lm loss sum, aux loss sum, grad norm]
    struct PendingStep {
        std::unique_ptr<StepTimer> timer;
        core::StepRecord record;
    };
    std::optional<PendingStep> m_pending;
    std::exception_ptr m_prefetchError;  // a loader failure while prefetching, raised by the next step
};

}  // namespace wb::rt::train_detail
