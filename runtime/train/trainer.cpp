// The training loop (see trainer.h). Timing: steady_clock around each phase, with a device sync
// before every reading on CUDA (compiled out on CPU builds, where ops are synchronous anyway).
#include "runtime/train/trainer.h"

#include "core/metrics_schema.h"
#include "core/model_flops.h"
#include "runtime/data/batch_loader.h"
#include "runtime/data/manifest.h"
#include "runtime/model/vlm_model.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/metrics_writer.h"
#include "runtime/train/process_stats.h"
#include "runtime/train/runtime_checks.h"
#include "runtime/train/status_file.h"

#include <torch/torch.h>
#if WB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace wb::rt {

std::atomic<bool>& stopRequestedFlag()
{
    static std::atomic<bool> flag{false};
    return flag;
}

namespace {

// A failure that carries its exit code out of the loop.
struct RunFailure {
    int exitCode;
    std::string message;
};

class Stopwatch {
public:
    explicit Stopwatch(torch::Device device) : m_device(device) { reset(); }
    void reset() { sync(); m_start = std::chrono::steady_clock::now(); }
    /// Milliseconds since the last reset/lap, then restarts.
    double lap()
    {
        sync();
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - m_start).count();
        m_start = now;
        return ms;
    }

private:
    void sync() const
    {
#if WB_WITH_CUDA
        if (m_device.is_cuda())
            torch::cuda::synchronize();
#endif
    }
    torch::Device m_device;
    std::chrono::steady_clock::time_point m_start;
};

std::string layoutString(const core::RunConfig& c, int world)
{
    const auto& p = c.parallel;
    const int dp = core::dataParallelSize(c, world);
    return "tp" + std::to_string(p.tensorModelParallelSize) + " pp" + std::to_string(p.pipelineModelParallelSize) +
           " cp" + std::to_string(p.contextParallelSize) + " ep" + std::to_string(p.expertModelParallelSize) +
           " etp" + std::to_string(p.expertTensorParallelSize) + " dp" + std::to_string(dp);
}

std::string deviceName(torch::Device device)
{
#if WB_WITH_CUDA
    if (device.is_cuda())
        return at::cuda::getCurrentDeviceProperties()->name;
#endif
    return device.is_cuda() ? "cuda" : "cpu";
}

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
    core::StepRecord trainStep(int64_t step);
    void optimizerStep(int64_t step, core::StepRecord& record);
    void saveCheckpointNow(const std::string& why);
    int finish(int exitCode, const std::string& message);

    const core::RunConfig& m_config;
    TrainOptions m_options;
    StatusFile m_status;
    torch::Device m_device;
    torch::ScalarType m_dtype;
    std::unique_ptr<MetricsWriter> m_metrics;
    VlmModel m_model{nullptr};
    std::unique_ptr<torch::optim::AdamW> m_optimizer;
    std::unique_ptr<BatchLoader> m_loader;
    int64_t m_step = 0;             // last completed optimizer step
    int64_t m_stepEndSeq = 0;       // loader position after the last completed step
    int64_t m_warningsEmitted = 0;
};

void Trainer::setUp()
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(m_options.runDir, ec);
    if (ec)
        throw RunFailure{2, "cannot create the run directory " + m_options.runDir + ": " + ec.message()};
    m_status.writePid();
    m_status.write("running", std::nullopt, "starting", 0);
    auto metrics = MetricsWriter::open(m_options.runDir + "/metrics.jsonl");
    if (!metrics)
        throw RunFailure{1, metrics.error().toString()};
    m_metrics = std::move(*metrics);
    if (m_metrics->wasEmpty())  // the meta line comes first, even if the run fails right away
        writeMeta();

    auto problems = allProblems(m_config, worldSizeFromEnvironment());
    if (!problems.empty())
        throw RunFailure{2, "the config has problems:\n" + core::formatProblems(problems)};
    if (m_config.runtime.numThreads > 0)
        torch::set_num_threads(m_config.runtime.numThreads);
    torch::manual_seed(m_config.train.seed);

    std::vector<ManifestEntry> entries;
    if (!m_config.data.manifest.empty()) {
        auto loaded = loadManifest(m_config.data.manifest);
        if (loaded)
            entries = std::move(*loaded);
        else if (m_config.data.source == "real")
            throw RunFailure{2, loaded.error().toString()};
        else
            m_metrics->event("warning", "mock data: " + loaded.error().toString() + "; using synthetic captions");
    }
    if (entries.empty())  // mock without a manifest: synthetic captions of a few shapes
        for (int i = 0; i < 256; ++i)
            entries.push_back({"", "mock sample " + std::to_string(i) + ": noise image"});

    m_model = VlmModel(m_config.model);
    m_model->applyFreezing();
    m_model->to(m_device);

    // Weight decay only on matrices; norms and biases are excluded, as in Megatron.
    std::vector<torch::Tensor> decay, noDecay;
    for (auto& p : m_model->parameters())
        if (p.requires_grad())
            (p.dim() >= 2 ? decay : noDecay).push_back(p);
    const auto& t = m_config.train;
    auto options = [&](double wd) {
        return std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(t.lr).betas({t.adamBeta1, t.adamBeta2}).eps(t.adamEps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(t.weightDecay));
    groups.emplace_back(noDecay, options(0.0));
    m_optimizer = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));

    int64_t startSeq = 0;
    if (m_options.resume) {
        auto state = loadCheckpoint(m_options.runDir, *m_model, *m_optimizer);
        if (state) {
            m_step = state->step;
            startSeq = m_stepEndSeq = state->nextSampleSeq;
            m_metrics->event("info", "resumed from " + checkpointPath(m_options.runDir) + " at step " + std::to_string(m_step), m_step);
        } else if (state.error().code == core::ErrorCode::NotFound) {
            m_metrics->event("warning", "--resume: " + state.error().toString() + "; starting at step 0");
        } else {
            throw RunFailure{1, state.error().toString()};
        }
    }
    LoaderOptions loaderOptions = LoaderOptions::fromConfig(m_config);
    loaderOptions.startSampleSeq = startSeq;
    m_loader = std::make_unique<BatchLoader>(std::move(entries), loaderOptions);
}

void Trainer::writeMeta()
{
    core::MetaRecord meta;
    meta.runId = std::filesystem::absolute(m_options.runDir).lexically_normal().filename().string();
    if (meta.runId.empty())
        meta.runId = std::filesystem::absolute(m_options.runDir).lexically_normal().parent_path().filename().string();
    meta.configHash = core::runConfigHash(m_config);
    meta.name = m_config.name;
    meta.worldSize = 1;
    meta.layout = layoutString(m_config, 1);
    meta.device = deviceName(m_device);
    meta.dataSource = m_config.data.source;
    meta.peakTflops = 0.0;  // no peak for CPUs: MFU is reported as 0
    const auto& v = m_config.model.vision;
    const int64_t unit = int64_t{v.patchSize} * v.spatialMergeSize;
    int64_t patches = m_config.data.maxPixels / (unit * unit) * v.spatialMergeSize * v.spatialMergeSize;
    if (m_config.data.source == "mock")
        patches = int64_t{m_config.data.mockImageSize / v.patchSize} * (m_config.data.mockImageSize / v.patchSize);
    meta.modelFlopsPerSample = core::sampleFlops(m_config.model, patches, m_config.data.captionMaxTokens + 1);
    meta.seqLength = m_config.train.seqLength;
    meta.microBatchSize = m_config.train.microBatchSize;
    meta.globalBatchSize = m_config.train.globalBatchSize;
    meta.versions["moe-train"] = WB_RUNTIME_VERSION;
    meta.versions["libtorch"] = TORCH_VERSION;
#if WB_WITH_CUDA
    meta.versions["cuda"] = std::to_string(CUDA_VERSION);
#endif
    m_metrics->write(meta);
}

core::StepRecord Trainer::trainStep(int64_t step)
{
    core::StepRecord r;
    r.step = step;
    const int numMicro = std::max(1, m_config.train.globalBatchSize / m_config.train.microBatchSize);
    Stopwatch stepClock(m_device), phase(m_device);
    double flops = 0.0;
    for (int micro = 0; micro < numMicro; ++micro) {
        if (stopRequestedFlag())
            throw RunFailure{5, "stopped by signal"};
        phase.reset();
        std::optional<MicroBatch> batch = m_loader->next();
        if (!batch)
            throw RunFailure{1, "the data loader stopped"};
        r.dataMs += phase.lap();
        for (const std::string& w : batch->warnings)
            if (m_warningsEmitted++ < 5)
                m_metrics->event("warning", w, step);

        VlmBatch tensors = toTensors(*batch, m_device, m_dtype);
        VisionOutput vision = m_model->encodeImages(tensors);
        r.visionMs += phase.lap();
        m_model->project(vision, tensors);
        r.projectorMs += phase.lap();
        DecoderOutput out = m_model->decode(tensors);
        r.decoderMs += phase.lap();
        const double lm = out.lmLoss.item<double>(), aux = out.auxLoss.item<double>();
        if (!std::isfinite(lm) || !std::isfinite(aux))
            throw RunFailure{1, "the loss is not finite (lm " + std::to_string(lm) + ", aux " + std::to_string(aux) +
                                    ") at step " + std::to_string(step) + "; lower train.lr or check the data"};
        ((out.lmLoss + out.auxLoss) / static_cast<double>(numMicro)).backward();
        r.backwardMs += phase.lap();

        r.loss += lm / numMicro;
        r.auxLoss += aux / numMicro;
        r.images += batch->images;
        r.imageTokens += batch->imageTokens;
        r.textTokens += batch->textTokens;
        r.padTokens += batch->padTokens;
        r.skippedImages += batch->skippedImages;
        flops += core::decoderFlops(m_config.model.decoder, batch->sampleLengths);
        for (size_t i = 0; i < batch->imageGridH.size(); ++i)
            flops += core::visionFlops(m_config.model.vision, m_config.model.decoder.hiddenSize,
                                       int64_t{batch->imageGridH[i]} * batch->imageGridW[i]);
        m_stepEndSeq = batch->nextSampleSeq;
    }
    phase.reset();
    optimizerStep(step, r);
    r.optimizerMs = phase.lap();
    r.stepMs = stepClock.lap();
    r.time = unixNow();
    r.effectiveTokens = r.imageTokens + r.textTokens;
    r.tokensPerSPerGpu = r.stepMs > 0 ? r.effectiveTokens / (r.stepMs / 1000.0) : 0.0;
    r.tflopsPerGpu = r.stepMs > 0 ? flops / (r.stepMs / 1000.0) / 1e12 : 0.0;
    r.mfu = 0.0;  // CPU: no peak rate (a CUDA build divides by the GPU's peak dense bf16)
    r.memAllocGib = r.memReservedGib = residentGib();
    r.memPeakGib = peakResidentGib();
    return r;
}

void Trainer::optimizerStep(int64_t step, core::StepRecord& r)
{
    r.lr = learningRate(m_config.train, step);
    for (auto& group : m_optimizer->param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(r.lr);
    // Global grad norm computed by hand: clip_grad_norm_'s return type differs across versions.
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads;
    for (auto& p : m_model->parameters())
        if (p.grad().defined())
            grads.push_back(p.grad());
    double total = 0.0;
    for (auto& g : grads)
        total += g.to(torch::kFloat32).pow(2).sum().item<double>();
    r.gradNorm = std::sqrt(total);
    if (!std::isfinite(r.gradNorm))
        throw RunFailure{1, "the gradient norm is not finite at step " + std::to_string(step) + "; lower train.lr"};
    const double clip = m_config.train.clipGrad;
    if (clip > 0.0 && r.gradNorm > clip)
        for (auto& g : grads)
            g.mul_(clip / (r.gradNorm + 1e-6));
    m_optimizer->step();
    m_optimizer->zero_grad();
}

void Trainer::saveCheckpointNow(const std::string& why)
{
    auto saved = saveCheckpoint(m_options.runDir, *m_model, *m_optimizer, {m_step, m_stepEndSeq});
    if (saved)
        m_metrics->event("info", "checkpoint saved (" + why + "): " + *saved, m_step);
    else
        throw RunFailure{1, saved.error().toString()};
}

int Trainer::finish(int exitCode, const std::string& message)
{
    const std::string status = core::statusForExitCode(exitCode);
    if (m_metrics) {
        if (exitCode != 0)
            m_metrics->event(exitCode == 5 ? "info" : "error", message, m_step);
        core::EndRecord end;
        end.time = unixNow();
        end.status = status;
        end.exitCode = exitCode;
        end.step = m_step;
        m_metrics->write(end);
    }
    m_status.write(status, exitCode, message, m_step);
    (exitCode == 0 ? std::cout : std::cerr) << "moe-train: " << status << " (exit " << exitCode << ") at step "
                                            << m_step << ": " << message << std::endl;
    return exitCode;
}

bool isOutOfMemory(const std::string& what)
{
    return what.find("out of memory") != std::string::npos || what.find("OutOfMemory") != std::string::npos;
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
        while (m_step < iters) {
            core::StepRecord r = trainStep(m_step + 1);
            m_step = r.step;
            if (m_step % m_config.train.logInterval == 0 || m_step == iters) {
                m_metrics->write(r);
                std::printf("step %lld/%lld loss %.4f aux %.4f lr %.2e grad %.3f step_ms %.1f data_ms %.1f tok/s %.0f\n",
                            static_cast<long long>(m_step), static_cast<long long>(iters), r.loss, r.auxLoss, r.lr,
                            r.gradNorm, r.stepMs, r.dataMs, r.tokensPerSPerGpu);
                std::fflush(stdout);
            }
            m_status.heartbeat(m_step);
            if (m_config.train.checkpointInterval > 0 && m_step % m_config.train.checkpointInterval == 0)
                saveCheckpointNow("interval");
            if (stopRequestedFlag() && m_step < iters)
                throw RunFailure{5, "stopped by signal"};
        }
        m_loader.reset();
        return finish(0, "finished " + std::to_string(m_step) + " steps");
    } catch (const RunFailure& failure) {
        if (m_loader)
            m_loader->stop();
        if (failure.exitCode == 5 && m_optimizer) {
            try {
                m_optimizer->zero_grad();  // a half-accumulated step is dropped, not saved
                saveCheckpointNow("signal");
            } catch (const RunFailure& saveFailure) {
                return finish(1, "stopped by signal, but " + saveFailure.message);
            }
        }
        return finish(failure.exitCode, failure.message);
    } catch (const c10::Error& e) {
        const std::string what = e.what_without_backtrace();
        return finish(isOutOfMemory(what) ? 3 : 1, "LibTorch error: " + what);
    } catch (const std::bad_alloc&) {
        return finish(3, "out of host memory");
    } catch (const std::exception& e) {
        return finish(isOutOfMemory(e.what()) ? 3 : 1, std::string("error: ") + e.what());
    }
}

}  // namespace

int runTraining(const core::RunConfig& config, const TrainOptions& options)
{
    Trainer trainer(config, options);
    return trainer.run();
}

}  // namespace wb::rt
