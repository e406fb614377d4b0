// The training loop (see trainer.h), in the order a run goes: setUp (its steps in
// trainer_setup.cpp), run (the loop over steps: train the step, record it, heartbeat, checkpoint,
// stop checks; failures become exit codes), trainStep (the micro-batches' data, forward and
// backward, the gradients' reduction, clipping and the optimizer, the statistics over ranks:
// StepReducer), then the step's helpers and the reporting. The parts with state of their own are
// called at clear points: Checkpointer (save/resume), RouterGraphsRunner, KernelProfiler.
//
// Timing: StepTimer (host clock on CPU; CUDA events on the GPU,
// read after one synchronize at the end of the step). On CUDA nothing in the step reads a device
// value back before that synchronize (losses, grad norm and clipping stay on the device; small
// host tensors go up from pinned memory, host_copy.h), except the loop expert path's group sizes
// when the grouped GEMM is unavailable. With the host ahead (m_hostAhead: one rank on CUDA by
// default, WB_HOST_AHEAD=0 off) the synchronize waits up to the gradient norm only and the step's
// record is reported once its updates have run (m_pending).
//
// bf16 on CUDA: fp32 master weights and fp32 AdamW state; the forward runs under CUDA autocast
// (bf16 matmuls and linears from weight copies cast once per micro-batch and cached), with the
// router logits/softmax (autocast excluded there), RMSNorm, softmax and the loss in fp32; the
// experts run as bf16 grouped GEMMs. Gradients arrive in fp32 on the fp32 parameters.
//
// Several ranks (DP/EP/FSDP, docs/parallel.md): every rank walks the same deterministic
// micro-batch stream and keeps micro-batches i with i % DP == rank, so a step covers exactly the
// micro-batches a single rank would, split disjointly; gradients are averaged over ranks before
// clipping, so the update equals the single-rank one up to reduction order. Rank 0 alone writes
// metrics.jsonl and status.json; values are reduced over ranks first (DESIGN.md §3.2). Checkpoints:
// rank 0 writes ckpt/latest.pt when every rank holds the same weights (one rank, plain DP); under
// FSDP, EP, TP and PP every rank writes its part and rank 0 commits ckpt/layout.json
// (checkpointer.h).
//
// Pipeline parallel (PP > 1, docs/parallel.md): each rank keeps its stage's part of the model and
// runs the step's micro-batches of its data-parallel slice through the 1F1B schedule
// (pipeline_schedule.h) instead of the loop below; the rest of the step is shared.
#include "runtime/train/trainer.h"
#include "runtime/train/trainer_internal.h"

#include "core/metrics_schema.h"
#include "core/model_flops.h"
#include "runtime/data/batch_loader.h"
#include "runtime/data/manifest.h"
#include "runtime/data/tokenizer.h"
#include "runtime/model/vlm_model.h"
#include "runtime/model/torch_compat.h"
#include "runtime/parallel/parallel_training.h"
#include "runtime/parallel/pipeline.h"
#include "runtime/parallel/pipeline_schedule.h"
#include "runtime/parallel/process_group.h"
#include "runtime/train/checkpointer.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/gpu_info.h"
#include "runtime/train/kernel_profiler.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/memory_report.h"
#include "runtime/train/metrics_writer.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/process_stats.h"
#include "runtime/train/recompute_runner.h"
#include "runtime/train/router_graphs_runner.h"
#include "runtime/train/runtime_checks.h"
#include "runtime/train/status_file.h"
#include "runtime/train/step_reducer.h"
#include "runtime/train/step_timer.h"

#include <torch/torch.h>
#if WB_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>

namespace wb::rt {

std::atomic<bool>& stopRequestedFlag()
{
    static std::atomic<bool> flag{false};
    return flag;
}

namespace {

// Debian's LibTorch calls whatever libblas.so.3 is installed; OpenBLAS starts one thread per core
// by default and LibTorch does not tell it its own thread count, so BLAS threads and intra-op
// threads fight over the cores (measured on 2 cores: median step 152 → 78 ms, worst 1.9 s →
// 0.3 s when limited). Looked up at run time: no link dependency on a particular BLAS.
void limitBlasThreads(int threads)
{
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
        set(std::max(1, threads));
}

}  // namespace

namespace train_detail {

void Trainer::setUp()
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(m_options.runDir, ec);
    if (ec)
        throw RunFailure{2, "cannot create the run directory " + m_options.runDir + ": " + ec.message()};
    m_env = RankEnvironment::fromEnvironment();
    // Counts CPU tensor bytes (and their peak) for the out-of-memory report; before any tensor.
    installCpuTensorCounter();
    // status.json first, then the pid file: a watcher that finds this process's group in DIR/pid
    // then finds status.json written by this process (a live writer), never the previous run's
    // final word — a run resumed by hand in a stopped run's directory is followed, not taken for
    // the stopped one (issue 20 item 6).
    if (!writeStatus("running", std::nullopt, "starting"))
        throw RunFailure{1, m_status.lastError()};
    if (writer())
        m_status.writePid();
#if WB_WITH_CUDA
    // One GPU per local rank (NCCL refuses two ranks on one device), and make it the current
    // device so kernels, the caching allocator and NCCL all use it.
    if (m_device.is_cuda() && torch::cuda::is_available()) {
        const int count = static_cast<int>(torch::cuda::device_count());
        m_device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(m_env.localRank % std::max(1, count)));
        c10::cuda::set_device(m_device.index());
    }
#endif
    if (m_device.is_cuda()) {
        m_peakTflops = peakDenseBf16Tflops(deviceName(m_device));
        m_bf16Autocast = m_dtype == torch::kBFloat16;
    }
    if (writer()) {
        auto metrics = MetricsWriter::open(m_options.runDir + "/metrics.jsonl");
        if (!metrics)
            throw RunFailure{1, metrics.error().toString()};
        m_metrics = std::move(*metrics);
        if (m_metrics->wasEmpty())  // the meta line comes first, even if the run fails right away
            writeMeta();
    }
    if (writer())
        startGpuMonitor();
    if (m_device.is_cuda() && m_peakTflops == 0.0)
        event("warning", "no peak bf16 rate known for '" + deviceName(m_device) +
                             "': mfu is reported as 0 (known: H100, H200, B200, GB200, GB300)");
    reportEnvironmentSwitches();

    auto problems = allProblems(m_config, m_env.worldSize);
    if (!problems.empty())
        throw RunFailure{2, "the config has problems:\n" + core::formatProblems(problems)};
    // Every rank checks the same config, so they all stop here together or all go on.
    m_group = createProcessGroup(m_env, m_device, commTimeoutFromEnvironment());
    // With PP the data-parallel layout (DP, EP) lives inside each stage's group of ranks.
    if (m_config.parallel.pipelineModelParallelSize > 1)
        m_pipeline = std::make_unique<Pipeline>(m_config, *m_group);
    m_parallel = std::make_unique<ParallelTraining>(m_config, m_pipeline ? m_pipeline->dataGroup() : *m_group);
    m_reducer = std::make_unique<StepReducer>(*m_group, *m_parallel, m_device);
    if (m_config.runtime.numThreads > 0)
        torch::set_num_threads(m_config.runtime.numThreads);
    limitBlasThreads(torch::get_num_threads());
    torch::manual_seed(m_config.train.seed);

    std::vector<ManifestEntry> entries;
    if (!m_config.data.manifest.empty()) {
        auto loaded = loadManifest(m_config.data.manifest);
        if (loaded)
            entries = std::move(*loaded);
        else if (m_config.data.source == "real")
            throw RunFailure{2, loaded.error().toString()};
        else
            event("warning", "mock data: " + loaded.error().toString() + "; using synthetic captions");
    }
    if (entries.empty())  // mock without a manifest: synthetic captions of a few shapes
        for (int i = 0; i < 256; ++i)
            entries.push_back({"", "mock sample " + std::to_string(i) + ": noise image"});

    m_model = VlmModel(m_config.model, m_device);
    m_model->applyFreezing();
    if (m_pipeline) {  // before the move: the other stages' parameters never reach the device
        m_pipeline->keepOwnStage(*m_model);
        const std::string stage = m_pipeline->describe(*m_model);
        event("info", stage);
        std::printf("moe-train: rank %d: %s\n", m_env.rank, stage.c_str());
    }
    m_model->to(m_device);
    // Parallelism from outside: broadcast, expert slicing, FSDP sharding and its layer runner;
    // the activation-recompute runner, when there is one, goes in as the inner runner.
    installRecompute();
    m_parallel->attach(*m_model, m_recompute.get());
    // CUDA graphs over the router, from outside the model like recompute (cuda_graph scope moe_router).
    m_routerGraphs = RouterGraphsRunner::install(m_config, *m_model, m_env.rank, eventSink());
    m_moments = momentDtypes(m_config.train);
    {
        const std::string memory = m_parallel->memorySummary(m_moments.bytesPerValue());
        event("info", memory);
        std::printf("moe-train: rank %d: %s\n", m_env.rank, memory.c_str());
    }
    // Trainable parameters only (frozen ones get no state); under FSDP: this rank's shards, whose
    // moments are then sharded in their configured dtype too.
    m_optimizer = makeOptimizer(m_parallel->optimizedParameters(true), m_parallel->optimizedParameters(false),
                                m_config.train);
    installEarlyGradNorm();
    installOptimizerOverlap();
    installHostAhead();
    installBf16WeightCopies();
    makeCheckpointer();

    if (m_options.resume)
        m_checkpointer->load(m_step, m_stepEndSeq);  // left at 0 when there is no checkpoint
    LoaderOptions loaderOptions = LoaderOptions::fromConfig(m_config);
    loaderOptions.startSampleSeq = m_stepEndSeq;
    m_loader = std::make_unique<BatchLoader>(std::move(entries), loaderOptions);
}

int Trainer::run()
{
    try {
        setUp();
        const int64_t iters = m_config.train.trainIters;
        std::printf("moe-train: %s, %lld steps from step %lld, data %s, device %s, %d threads\n",
                    m_config.name.c_str(), static_cast<long long>(iters), static_cast<long long>(m_step),
                    m_config.data.source.c_str(), deviceName(m_device).c_str(), torch::get_num_threads());
        std::fflush(stdout);
        std::unique_ptr<KernelProfiler> profiler = KernelProfiler::fromEnvironment(m_options.runDir, m_env.rank, m_step, eventSink());
        // A SIGTERM during start-up (model, process group, checkpoint load) ends the run before its
        // first step; with several ranks they stop together after a step (StepReducer::stopAgreed).
        if (m_group->size() == 1 && stopRequestedFlag().load())
            throw RunFailure{5, "stopped by signal during start-up"};
        const int64_t firstStep = m_step;
        while (m_step < iters) {
            if (m_overlapUndecided && m_step > firstStep)
                decideOptimizerOverlap();  // train.overlap_optimizer "auto", after the first step
            if (profiler) {
                if (profiler->startsAt(m_step + 1))
                    completePendingStep();  // no earlier step's updates inside the trace
                profiler->beforeStep(m_step + 1);
            }
            if (m_routerGraphs)
                m_routerGraphs->beforeStep();
            core::StepRecord r = trainStep(m_step + 1);
            m_step = r.step;
            // Host-ahead: r waits in m_pending for its optimizer phase; whoever completes it reports it.
            const bool deferred = m_pending.has_value();
            if (m_routerGraphs)
                m_routerGraphs->afterStep(m_step);
            if (profiler) {
                if (profiler->endsAfter(m_step))
                    completePendingStep();  // the trace holds the whole last step
                profiler->afterStep(m_step);
            }
            if (!deferred)
                reportStep(r);
            if (m_step == 1 || m_step == iters)
                if (const std::string s = m_parallel->gradientReductionSummary(); !s.empty()) {
                    std::printf("moe-train: rank %d: %s\n", m_env.rank, s.c_str());
                    std::fflush(stdout);
                }
            // A status.json that cannot be written stops the run: the workbench would read a run
            // that never moves (issue 20 item 8), and the disk is what the checkpoint needs next.
            if (writer() && !m_status.heartbeat(m_step))
                throw RunFailure{1, m_status.lastError() + "; the run stopped at step " + std::to_string(m_step)};
            if (m_config.train.checkpointInterval > 0 && m_step % m_config.train.checkpointInterval == 0) {
                completePendingStep();
                m_checkpointer->save(m_step, m_stepEndSeq, "interval");
            }
            const bool stop = m_group->size() == 1 ? stopRequestedFlag().load() : m_reducer->stopAgreed();
            if (stop && m_step < iters)
                throw RunFailure{5, "stopped by signal"};  // finish() reports a pending step first
        }
        completePendingStep();
        m_loader.reset();
        m_group->barrier();  // no rank reports success while another may still fail
        return finish(0, "finished " + std::to_string(m_step) + " steps");
    } catch (const RunFailure& failure) {
        if (m_loader)
            m_loader->stop();
        if (failure.exitCode == 5 && m_checkpointer && m_step > 0) {  // nothing trained yet: nothing to save
            try {
                m_optimizer->zero_grad();  // a half-accumulated step is dropped, not saved
                m_checkpointer->save(m_step, m_stepEndSeq, "signal");
            } catch (const RunFailure& saveFailure) {
                return finish(1, "stopped by signal, but " + saveFailure.message);
            } catch (const MetricsWriteError& e) {
                return finish(1, std::string("stopped by signal, but ") + e.what());
            }
        }
        return finish(failure.exitCode, failure.message);
    } catch (const CommError& e) {
        if (m_loader)
            m_loader->stop();
        return finish(4, e.what());
    } catch (const c10::Error& e) {
        const std::string what = e.what_without_backtrace();
        if (m_loader)
            m_loader->stop();
        if (isOutOfMemoryMessage(what))
            return finish(3, outOfMemoryReport(what));
        return finish(1, "LibTorch error: " + what);
    } catch (const MetricsWriteError& e) {
        // metrics.jsonl is the run's record: a step that cannot be recorded ends the run.
        if (m_loader)
            m_loader->stop();
        return finish(1, std::string(e.what()) + "; the run stopped at step " + std::to_string(m_step));
    } catch (const LoaderError& e) {
        // The loader's threads have stopped; its host memory is not the model's, so the message
        // names the data knobs rather than the model-memory report.
        return finish(e.outOfMemory ? 3 : e.badData ? 2 : 1, e.what());
    } catch (const std::bad_alloc&) {
        if (m_loader)
            m_loader->stop();
        return finish(3, outOfMemoryReport("host memory: std::bad_alloc"));
    } catch (const std::exception& e) {
        if (m_loader)
            m_loader->stop();
        if (isOutOfMemoryMessage(e.what()))
            return finish(3, outOfMemoryReport(e.what()));
        return finish(1, std::string("error: ") + e.what());
    }
}

core::StepRecord Trainer::trainStep(int64_t step)
{
    core::StepRecord r;
    r.step = step;
    // The global step takes numMicro micro-batches of the stream; this rank trains on every
    // dp-th of them (numLocal), so ranks never share one and together cover them all.
    // With tensor parallelism the TP ranks of a DP rank take the same micro-batches.
    const int dp = m_parallel->dataParallelSize();
    const int numMicro = std::max(1, m_config.train.globalBatchSize / m_config.train.microBatchSize);
    const int numLocal = std::max(1, numMicro / dp);
    const auto stepStart = std::chrono::steady_clock::now();
    auto timer = std::make_unique<StepTimer>(m_device);  // kept past the step when its optimizer is pending
    double flops = 0.0;
    // Loss sums stay on the device until the one synchronize at the end of the step.
    torch::Tensor lmSum, auxSum;
    // The loader position is committed only when the step completes: a stop between micro-batches
    // drops the half-accumulated step, and the resumed run must load those micro-batches again.
    int64_t stepEndSeq = m_stepEndSeq;
    // This rank's last micro-batch of the step: its backward reduces the gradients as it goes.
    const int dpRank = m_parallel->dataParallelRank();
    const int lastLocal = dpRank < numMicro ? dpRank + (numMicro - 1 - dpRank) / dp * dp : numMicro - 1;
    if (m_pipeline)  // 1F1B over this stage's micro-batches instead of the loop below
        pipelineMicroBatches(step, r, *timer, flops, lmSum, auxSum, stepEndSeq);
    for (int micro = 0; !m_pipeline && micro < numMicro; ++micro) {
        // With several ranks a stop is agreed at the step's end instead (StepReducer): a rank
        // leaving mid-step would strand the others in the gradient allreduce.
        if (m_group->size() == 1 && stopRequestedFlag())
            throw RunFailure{5, "stopped by signal"};
        if (m_prefetchError)
            std::rethrow_exception(std::exchange(m_prefetchError, nullptr));
        std::optional<MicroBatch> batch;
        std::optional<VlmBatch> uploaded;
        if (m_prefetched) {
            if (micro < m_prefetched->micro)
                continue;  // taken from the loader by the prefetch: another rank's micro-batch
            batch = std::move(m_prefetched->batch);
            uploaded = std::move(m_prefetched->tensors);
            r.dataMs += m_prefetched->dataMs;
            stepEndSeq = batch->nextSampleSeq;
            m_prefetched.reset();
        } else {
            batch = nextMicroBatch(r, stepEndSeq);
            if (micro % dp != m_parallel->dataParallelRank())
                continue;  // another rank's micro-batch
        }
        for (const std::string& w : batch->warnings)
            if (m_warningsEmitted++ < 5)
                event("warning", w, step);

        if (micro == lastLocal && m_earlyNorm)
            m_earlyNorm->arm();  // this backward leaves each layer's gradients final
        timer->begin();
        VlmBatch tensors = uploaded ? std::move(*uploaded) : upload(*batch);
        m_parallel->beginMicroBatch(tensors.hasImages());
        DecoderOutput out;
        {
            AutocastScope autocast(m_bf16Autocast);
            VisionOutput vision = m_model->encodeImages(tensors);
            timer->end(StepTimer::Vision);
            m_model->project(vision, tensors);
            timer->end(StepTimer::Projector);
            m_parallel->shardSequence(tensors);  // context parallelism: this rank's tokens
            out = m_model->decode(tensors);
            timer->end(StepTimer::Decoder);
        }
        if (micro == lastLocal)
            m_parallel->beforeLastBackward();  // overlap_grad_reduce: buckets go out during this backward
        ((out.lmLoss + out.auxLoss) / static_cast<double>(numLocal)).backward();
        m_parallel->afterBackward();  // FSDP: reduce-scatter what backward has not reduced yet
        timer->end(StepTimer::Backward);
        lmSum = lmSum.defined() ? lmSum + out.lmLoss.detach() : out.lmLoss.detach();
        auxSum = auxSum.defined() ? auxSum + out.auxLoss.detach() : out.auxLoss.detach();
        flops += countMicroBatch(*batch, r);
    }
    timer->begin();
    m_parallel->finishGradients();  // counted as backward, as in DDP
    timer->end(StepTimer::Backward);
    timer->begin();
    // Host-ahead (m_hostAhead): the losses and the norm go to pinned host memory before the
    // updates are queued, and the step's wait ends there; the updates run on into the next step.
    torch::Tensor hostScalars;
    torch::Tensor gradNorm = optimizerStep(step, r, [&](const torch::Tensor& norm) {
        if (!m_hostAhead || !lmSum.defined() || !auxSum.defined())
            return;
        m_stepScalars.copy_(torch::stack({lmSum.to(torch::kFloat32).reshape({}), auxSum.to(torch::kFloat32).reshape({}),
                                          norm.to(torch::kFloat32).reshape({})}),
                            /*non_blocking=*/true);
        hostScalars = m_stepScalars;
        timer->markHostWait();
    });
    timer->end(StepTimer::Optimizer);
    if (!m_pipeline && step < m_config.train.trainIters && !stopRequestedFlag())
        prefetchFirstMicroBatch();
    m_stepEndSeq = stepEndSeq;
    timer->finish();  // the step's one device synchronize (host-ahead: up to the updates)
    // The previous step's updates ran before this step's forward: its record is complete now.
    completePendingStep();
    r.stepMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stepStart).count();
    r.visionMs = timer->ms(StepTimer::Vision);
    r.projectorMs = timer->ms(StepTimer::Projector);
    r.decoderMs = timer->ms(StepTimer::Decoder);
    r.backwardMs = timer->ms(StepTimer::Backward);
    r.optimizerMs = timer->ms(StepTimer::Optimizer);  // host-ahead: completed by completePendingStep
    const MemoryReading memory = readMemory(m_device);
    r.memAllocGib = memory.allocatedGib;
    r.memReservedGib = memory.reservedGib;
    r.memPeakGib = memory.peakGib;
    m_reducer->reduce(r, flops, lmSum, auxSum, stopRequestedFlag());

    // Read from the pinned copy where there is one: .item() would wait for the updates too.
    const float* scalars = hostScalars.defined() ? hostScalars.data_ptr<float>() : nullptr;
    const double lm = (scalars ? scalars[0] : lmSum.item<double>()) / numMicro;
    const double aux = (scalars ? scalars[1] : auxSum.item<double>()) / numMicro;
    r.gradNorm = scalars ? scalars[2] : gradNorm.item<double>();
    // Checked after the step (a check before it would be a sync per micro-batch); the run stops
    // here, so the updated weights are never checkpointed.
    if (!std::isfinite(lm) || !std::isfinite(aux))
        throw RunFailure{1, "the loss is not finite (lm " + std::to_string(lm) + ", aux " + std::to_string(aux) +
                                ") at step " + std::to_string(step) + "; lower train.lr or check the data"};
    if (!std::isfinite(r.gradNorm))
        throw RunFailure{1, "the gradient norm is not finite at step " + std::to_string(step) + "; lower train.lr"};
    r.loss = lm;
    r.auxLoss = aux;
    r.time = unixNow();
    r.effectiveTokens = r.imageTokens + r.textTokens;
    r.tokensPerSPerGpu = r.stepMs > 0 ? r.effectiveTokens / (r.stepMs / 1000.0) / m_group->size() : 0.0;
    r.tflopsPerGpu = r.stepMs > 0 ? flops / (r.stepMs / 1000.0) / 1e12 / m_group->size() : 0.0;
    r.mfu = m_peakTflops > 0.0 ? r.tflopsPerGpu / m_peakTflops : 0.0;
    if (timer->hasRest())
        m_pending = PendingStep{std::move(timer), r};
    return r;
}

void Trainer::reportStep(const core::StepRecord& r)
{
    const int64_t iters = m_config.train.trainIters;
    if (!writer() || (r.step % m_config.train.logInterval != 0 && r.step != iters))
        return;
    m_metrics->write(r);
    if (m_gpuMonitor)
        if (auto gpu = m_gpuMonitor->takeNew()) {
            gpu->step = r.step;
            m_metrics->write(*gpu);
        }
    std::printf("step %lld/%lld loss %.4f aux %.4f lr %.2e grad %.3f step_ms %.1f data_ms %.1f tok/s %.0f\n",
                static_cast<long long>(r.step), static_cast<long long>(iters), r.loss, r.auxLoss, r.lr, r.gradNorm,
                r.stepMs, r.dataMs, r.tokensPerSPerGpu);
    std::fflush(stdout);
}

void Trainer::completePendingStep()
{
    if (!m_pending)
        return;
    PendingStep pending = std::move(*m_pending);
    m_pending.reset();
    pending.timer->finishRest();
    pending.record.optimizerMs = pending.timer->ms(StepTimer::Optimizer);
    reportStep(pending.record);
}

// The loader's next micro-batch of the stream (every rank walks all of them); the wait is the
// step's data time, and the loader position after it becomes the step's end position.
std::optional<MicroBatch> Trainer::nextMicroBatch(core::StepRecord& r, int64_t& stepEndSeq)
{
    const auto waitStart = std::chrono::steady_clock::now();
    // SIGTERM while the step waits for data (the first batch can take long to decode) is honoured
    // here: the wait is not a phase where a signal is lost.
    std::optional<MicroBatch> batch = m_loader->next([] { return stopRequestedFlag().load(); });
    if (!batch && stopRequestedFlag().load())
        throw RunFailure{5, "stopped by signal while waiting for data"};
    if (!batch)
        throw RunFailure{1, "the data loader stopped"};
    r.dataMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - waitStart).count();
    stepEndSeq = batch->nextSampleSeq;
    return batch;
}

void Trainer::prefetchFirstMicroBatch()
{
    const int rank = m_parallel->dataParallelRank();
    const int numMicro = std::max(1, m_config.train.globalBatchSize / m_config.train.microBatchSize);
    if (rank >= numMicro)
        return;
    try {
        // The stream's micro-batches 0..rank: the last is this rank's first (micro % dp == rank).
        core::StepRecord waits;
        int64_t seq = 0;
        std::optional<MicroBatch> batch;
        for (int micro = 0; micro <= rank; ++micro)
            batch = nextMicroBatch(waits, seq);
        Prefetched p;
        p.micro = rank;
        p.dataMs = waits.dataMs;
        p.tensors = upload(*batch);
        p.batch = std::move(*batch);
        m_prefetched = std::move(p);
    } catch (...) {
        // This step is complete and gets its record; the next one fails with this error.
        m_prefetched.reset();
        m_prefetchError = std::current_exception();
    }
}

// Adds a trained micro-batch's images and tokens to the step record; returns its model FLOPs.
double Trainer::countMicroBatch(const MicroBatch& b, core::StepRecord& r) const
{
    r.images += b.images;
    r.imageTokens += b.imageTokens;
    r.textTokens += b.textTokens;
    r.padTokens += b.padTokens;
    r.skippedImages += b.skippedImages;
    double flops = core::decoderFlops(m_config.model.decoder, b.sampleLengths);
    for (size_t i = 0; i < b.imageGridH.size(); ++i)
        flops += core::visionFlops(m_config.model.vision, m_config.model.decoder.hiddenSize,
                                   int64_t{b.imageGridH[i]} * b.imageGridW[i]);
    return flops;
}

VlmBatch Trainer::upload(const MicroBatch& batch) const
{
    VlmBatch t = toTensors(batch, m_device, m_dtype, m_bf16Autocast && flashVarlenAvailable());
    if (m_denseDecoderAttention)  // benchmark comparison only: document-causal B×T×T mask
        t.decoder.documents = {};
    return t;
}

torch::Tensor Trainer::optimizerStep(int64_t step, core::StepRecord& r,
                                     const std::function<void(const torch::Tensor&)>& beforeUpdates)
{
    r.lr = learningRate(m_config.train, step);
    for (auto& group : m_optimizer->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(r.lr);
    // Global grad norm and clipping on the device (clip_grad_norm_'s return type differs across
    // versions, and reading the norm back here would cost a sync): g *= min(1, clip / (norm + 1e-6)).
    torch::NoGradGuard noGrad;
    // The parameters the optimizer updates (FSDP: this rank's shards); the norm is over all ranks.
    std::vector<torch::Tensor> grads;
    for (const auto& p : optimizedParameters())
        if (p.grad().defined())
            grads.push_back(p.grad());
    if (m_overlapUndecided) {  // what decideOptimizerOverlap counts; only until it has decided
        m_gradientBytes = 0.0;
        for (const auto& g : grads)
            m_gradientBytes += static_cast<double>(g.nbytes());
    }
    // One rank, nothing sharded: the multi-tensor norm; otherwise the layout's (reduced over ranks).
    torch::Tensor total = m_earlyNorm                                      ? m_earlyNorm->norm(grads)
                          : m_group->size() == 1 && !m_parallel->sharded() ? globalGradNorm(grads)
                                                                           : m_parallel->gradNorm();
    if (m_pipeline)  // each stage holds its own parameters: squares summed over the stages
        total = m_pipeline->combineGradNorm(total);
    const double clip = m_config.train.clipGrad;
    // CUDA: one fused multi-tensor kernel (≈110 ms → a few ms of launches for the 30B slice's
    // ~4.3 G fp32 values) with the clip folded in as its grad_scale (g / max(1, norm / clip): one
    // pass over the gradients fewer); CPU: LibTorch's per-parameter AdamW after scaling the
    // gradients, or for moments stored in bf16 our ATen step (fp32 math, one rounding on store;
    // AdamW::step would round after each of its in-place ops). Same update, same state, same
    // checkpoints.
    if (m_device.is_cuda() && fusedAdamWAvailable()) {
        torch::Tensor divisor;
        if (clip > 0.0 && !grads.empty())
            divisor = ((total + 1e-6) / clip).clamp_min(1.0);
        if (m_overlap) {  // the same update, group by group behind the next forward
            m_overlap->step(*m_optimizer, m_moments, divisor, [this] { m_parallel->afterOptimizerStep(); });
            return total;
        }
        if (beforeUpdates)
            beforeUpdates(total);
        fusedAdamWStep(*m_optimizer, m_moments, divisor, {nullptr, m_bf16Weights.get()});
        m_optimizer->zero_grad();
        m_parallel->afterOptimizerStep();  // FSDP: updated shards into the parameters
        return total;
    }
    if (beforeUpdates)
        beforeUpdates(total);
    if (clip > 0.0 && !grads.empty()) {
        auto scale = (clip / (total + 1e-6)).clamp_max(1.0);
        for (auto& g : grads)
            g.mul_(scale.to(g.scalar_type()));
    }
    if (m_moments.allFp32())
        m_optimizer->step();
    else
        adamWStepAten(*m_optimizer, m_moments);
    m_optimizer->zero_grad();
    m_parallel->afterOptimizerStep();  // FSDP: updated shards into the parameters
    return total;
}

// Every tensor the optimizer updates, in its order (makeOptimizer: matrices, then the rest).
std::vector<torch::Tensor> Trainer::optimizedParameters() const
{
    std::vector<torch::Tensor> out = m_parallel->optimizedParameters(true);
    for (auto& p : m_parallel->optimizedParameters(false))
        out.push_back(p);
    return out;
}

void Trainer::event(const std::string& level, const std::string& message, int64_t step)
{
    if (m_metrics)  // step -1: an event outside any step (start-up), written without "step"
        m_metrics->event(level, message, step >= 0 ? std::optional<int64_t>(step) : std::nullopt);
    else if (level != "info")  // ranks > 0: their own log
        std::cerr << "moe-train: rank " << m_env.rank << ": " << level << ": " << message << std::endl;
}

bool Trainer::writeStatus(const std::string& status, std::optional<int> exitCode, const std::string& message)
{
    return !writer() || m_status.write(status, exitCode, message, m_step);
}

// The message for exit 3: the failed request and where the memory went (memory_report.h).
std::string Trainer::outOfMemoryReport(const std::string& what)
{
    try {  // the report itself must not throw out of the handler (memory is short)
        std::string first = what.substr(0, what.find('\n'));
        if (first.size() > 300)
            first = first.substr(0, 300) + "...";
        if (!m_model)
            return "out of memory before the model was built (" + first + ")";
        MemoryConsumers consumers = measureConsumers(*m_model, m_optimizer.get(), m_device, m_moments.bytesPerValue());
        consumers.failedRequest = failedRequestBytes(first);
        return outOfMemoryMessage(consumers, m_config, deviceName(m_device), first);
    } catch (...) {
        return "out of memory (measuring the consumers failed too)";
    }
}

int Trainer::finish(int exitCode, const std::string& message)
{
    const std::string status = core::statusForExitCode(exitCode);
    // A host-ahead step that completed before the failure is still reported (a stop, a bad loss
    // in the next step); a device that cannot finish it (a CUDA error) leaves it out.
    try {
        completePendingStep();
    } catch (...) {
        m_pending.reset();
    }
    if (m_metrics) {
        // Best effort: when metrics.jsonl itself is what failed, status.json and stderr still say
        // what happened.
        try {
            if (exitCode != 0)
                m_metrics->event(exitCode == 5 ? "info" : "error", message, m_step);
            core::EndRecord end;
            end.time = unixNow();
            end.status = status;
            end.exitCode = exitCode;
            end.step = m_step;
            m_metrics->write(end);
        } catch (const MetricsWriteError& e) {
            std::cerr << "moe-train: " << e.what() << std::endl;
        }
    }
    if (!writeStatus(status, exitCode, message))
        std::cerr << "moe-train: " << m_status.lastError() << std::endl;
    const std::string who = m_env.worldSize > 1 ? "rank " + std::to_string(m_env.rank) + ": " : "";
    (exitCode == 0 ? std::cout : std::cerr) << "moe-train: " << who << status << " (exit " << exitCode << ") at step "
                                            << m_step << ": " << message << std::endl;
    return exitCode;
}

}  // namespace train_detail

int runTraining(const core::RunConfig& config, const TrainOptions& options)
{
    train_detail::Trainer trainer(config, options);
    return trainer.run();
}

}  // namespace wb::rt
