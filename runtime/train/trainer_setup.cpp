// The Trainer's set-up steps that setUp (trainer.cpp) calls in order: the meta line, the GPU
// monitor, the runners installed into the model from outside (recompute, the overlapped optimizer
// step, the kept bf16 weight copies) and the checkpointer. Part of the Trainer
// (trainer_internal.h); training thread only.
#include "runtime/train/trainer_internal.h"

#include "core/model_flops.h"
#include "runtime/parallel/pipeline.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/gpu_info.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <utility>

namespace wb::rt::train_detail {

namespace {

std::string layoutString(const core::RunConfig& c, int world)
{
    const auto& p = c.parallel;
    const int dp = core::dataParallelSize(c, world);
    return "tp" + std::to_string(p.tensorModelParallelSize) + " pp" + std::to_string(p.pipelineModelParallelSize) +
           " cp" + std::to_string(p.contextParallelSize) + " ep" + std::to_string(p.expertModelParallelSize) +
           (p.tensorModelParallelSize > 1 && p.sequenceParallel ? " sp" : "") + " etp" +
           std::to_string(p.expertTensorParallelSize) + " dp" + std::to_string(dp) +
           (p.useMegatronFsdp ? " fsdp:" + p.dataParallelShardingStrategy : std::string()) +
           (p.pipelineModelParallelSize > 1 ? " " + pipelineLayerSplit(c) : std::string());
}

// The environment switches that change how a step is computed — kernel paths, experimental
// overlaps, collective tuning, profiling — are not in the config, so a run names the ones that were
// set, in its meta line (runtime_switches: the compare view notes runs that differ there) and in an
// info event: two runs in the store that differ only there can be told apart (an A/B row of
// gpu_round.sh, a user's experiment). docs/runtime.md lists them.
std::map<std::string, std::string> environmentSwitches()
{
    static constexpr const char* kSwitches[] = {"WB_NEW_KERNELS",    "WB_PASS_KERNELS",      "WB_ROW_KERNELS",
                                                "WB_HOST_AHEAD",     "WB_EARLY_GRAD_NORM",   "WB_OVERLAP_SMS",
                                                "WB_ADAMW_RESIDENT", "WB_DECODER_ATTENTION", "WB_GRAD_BUCKET_MB",
                                                "WB_COMM_TIMEOUT_S", "WB_PROFILE_STEPS"};
    std::map<std::string, std::string> set;
    for (const char* name : kSwitches)
        if (const char* value = std::getenv(name); value != nullptr)
            set[name] = value;
    return set;
}

}  // namespace

void Trainer::writeMeta()
{
    core::MetaRecord meta;
    meta.runId = std::filesystem::absolute(m_options.runDir).lexically_normal().filename().string();
    if (meta.runId.empty())
        meta.runId = std::filesystem::absolute(m_options.runDir).lexically_normal().parent_path().filename().string();
    meta.configHash = core::runConfigHash(m_config);
    meta.name = m_config.name;
    meta.worldSize = m_env.worldSize;
    meta.layout = layoutString(m_config, m_env.worldSize);
    meta.device = deviceName(m_device);
    meta.dataSource = m_config.data.source;
    meta.peakTflops = m_peakTflops;
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
    for (auto& [name, version] : acceleratorVersions())
        meta.versions[name] = version;
    if (m_env.worldSize > 1)
        meta.versions["c10d"] = m_device.is_cuda() ? "nccl" : "gloo";
    meta.runtimeSwitches = environmentSwitches();
    m_metrics->write(meta);
}

void Trainer::startGpuMonitor()
{
    // A CPU run has no GPU to sample; the stream simply has no "gpu" records (docs/metrics.md).
    if (!m_device.is_cuda())
        return;
    std::string whyNot;
    m_gpuMonitor = GpuMonitor::start(GpuMonitor::localDeviceIndices(std::max(1, m_env.localWorldSize)),
                                     GpuMonitor::intervalFromEnvironment(), whyNot);
    if (!m_gpuMonitor)
        event("warning", "GPU system metrics are not sampled: " + whyNot);
}

// Activation recompute from outside the model (recompute_runner.h): one runner for both stacks.
void Trainer::installRecompute()
{
    // Installed by ParallelTraining::attach, directly or inside the FSDP runner.
    m_recompute = makeRecomputeRunner(m_config.recompute);
}

// The switches of environmentSwitches(), as an info event (the meta line has them too).
void Trainer::reportEnvironmentSwitches()
{
    const std::string set = core::switchesText(environmentSwitches());
    if (!set.empty())
        event("info", "runtime switches from the environment: " + set);
}

// WB_EARLY_GRAD_NORM=1 (early_grad_norm.h; experimental, off until a GPU round has measured it):
// one rank with nothing sharded and no pipeline, whose gradients are final once the last
// micro-batch's backward has left a layer. Goes around the runner attach() installed.
void Trainer::installEarlyGradNorm()
{
    const char* flag = std::getenv("WB_EARLY_GRAD_NORM");
    if (flag == nullptr || std::string(flag) != "1")
        return;
    if (m_group->size() != 1 || m_parallel->sharded() || m_pipeline) {
        event("warning",
              "WB_EARLY_GRAD_NORM=1 is for one rank without a parallel layout; the gradient norm is read at the step");
        return;
    }
    m_earlyNorm = std::make_unique<EarlyGradNorm>(m_device, m_recompute.get());
    m_model->setLayerRunner(m_earlyNorm.get());
    event("info", "gradient norm counted layer by layer during the last micro-batch's backward (WB_EARLY_GRAD_NORM=1)");
}

// The host ahead of the optimizer (m_hostAhead): on by default on CUDA for one rank with the
// serial fused AdamW step (measured: every paired step faster on an H100, docs/runtime.md);
// WB_HOST_AHEAD=0 turns it off, WB_HOST_AHEAD=1 asks for it where it is not the default — the CPU,
// which runs the same flow (its ops are synchronous: only the order the records are written in
// changes), so the CPU tests check it. Not with several ranks (the step reducer takes the maximum
// of every phase over the ranks before the optimizer phase is known), the overlapped optimizer
// (its step ends before the updates already), or the router's CUDA graphs (captured on a side
// stream that must not meet a previous step's updates still running).
void Trainer::installHostAhead()
{
    const char* flag = std::getenv("WB_HOST_AHEAD");
    const bool asked = flag != nullptr && std::string(flag) == "1";
    if (flag != nullptr && std::string(flag) == "0")
        return;
    if (!asked && !m_device.is_cuda())
        return;
    if ((m_device.is_cuda() && !fusedAdamWAvailable()) || m_group->size() != 1 || m_pipeline || m_overlap ||
        m_routerGraphs) {
        if (asked)
            event("warning",
                  "WB_HOST_AHEAD=1 is for one rank with the serial AdamW step (no train.overlap_optimizer, "
                  "no CUDA graphs); the step waits for its optimizer as before");
        return;
    }
    m_hostAhead = true;
    m_stepScalars = torch::empty({3}, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(m_device.is_cuda()));
    event("info", "the host queues the next step while the device runs the optimizer (WB_HOST_AHEAD=0 turns it off)");
}

// train.overlap_optimizer (optimizer_overlap.h): CUDA with the fused AdamW step, and not under
// FSDP, whose step ends with the all-gather of the updated shards. Replaces the layer runner
// attach() installed (the recompute runner, or none) with itself around it. "auto" (the default):
// on one rank without pipeline stages or CUDA graphs the training stream is the overlap's from
// the start, the first step runs serial, and decideOptimizerOverlap() turns the overlap on after
// it where the memory allows (core::overlapOptimizerFits).
void Trainer::installOptimizerOverlap()
{
    const core::Toggle mode = m_config.train.overlapOptimizer;
    if (mode == core::Toggle::Off || !m_device.is_cuda() || !fusedAdamWAvailable() || m_parallel->fullySharded())
        return;
    // "auto" only where it was measured: one rank, no pipeline stages, no router CUDA graphs (their
    // capture stream must not meet updates still running, as for the host-ahead step).
    if (mode == core::Toggle::Auto && (m_group->size() != 1 || m_pipeline || m_routerGraphs))
        return;
    preferTrainingStream(m_device);
    if (mode == core::Toggle::Auto) {
        m_overlapUndecided = true;
        return;
    }
    attachOptimizerOverlap();
}

// WB_OVERLAP_SMS=N (experimental, off until a GPU round has measured it): the updates on N SMs,
// the forward's matmuls on the rest until the last group (OptimizerOverlap::setSmBudget).
void Trainer::attachOptimizerOverlap()
{
    LayerRunner* inner = m_earlyNorm ? static_cast<LayerRunner*>(m_earlyNorm.get()) : m_recompute.get();
    m_overlap = std::make_unique<OptimizerOverlap>(forwardOrderGroups(*m_model, optimizedParameters()), inner);
    if (const char* sms = std::getenv("WB_OVERLAP_SMS"); sms != nullptr)
        m_overlap->setSmBudget(std::atoi(sms));  // ≤ 0: none
    if (m_overlap->smBudget() > 0) {
        event("info", "the overlapped updates run on " + std::to_string(m_overlap->smBudget()) +
                          " SMs, the forward's matmuls on the others until its last layer (WB_OVERLAP_SMS)");
    }
    m_model->setLayerRunner(m_overlap.get());
    m_model->setParameterFence(m_overlap.get());
    if (m_bf16Weights)
        m_overlap->setBf16Weights(m_bf16Weights.get());
    if (m_checkpointer)
        m_checkpointer->setOverlap(m_overlap.get());
}

// train.overlap_optimizer "auto", after this process's first step (serial, its updates run): the
// overlap holds every gradient until its update has run, so it goes on only where the memory the
// first step reserved plus the gradients fit the device with a tenth to spare. The same updates
// either way (optimizer_overlap.h), so the switch changes when weights are written, not what.
void Trainer::decideOptimizerOverlap()
{
    m_overlapUndecided = false;
    completePendingStep();  // the host-ahead step's record, with its updates run
    const MemoryReading memory = readMemory(m_device);
    constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
    const double gradients = m_gradientBytes / kGib;
    char numbers[160];
    std::snprintf(numbers, sizeof numbers,
                  "%.1f GiB reserved by step %lld + %.1f GiB of gradients, %.1f GiB on the device",
                  memory.reservedPeakGib, static_cast<long long>(m_step), gradients, memory.deviceGib);
    if (!core::overlapOptimizerFits(memory.reservedPeakGib * kGib, m_gradientBytes, memory.deviceGib * kGib)) {
        event("info", std::string("the optimizer step stays serial (train.overlap_optimizer \"auto\": ") + numbers +
                          ", more than 90 % of it)");
        return;
    }
    m_hostAhead = false;  // the overlapped step ends before its updates already
    attachOptimizerOverlap();
    event("info", "the optimizer step overlaps the next forward from step " + std::to_string(m_step + 1) +
                      " (train.overlap_optimizer \"auto\": " + numbers + ", within 90 % of it)");
}

// train.bf16_weight_copies (bf16_weights.h): with the fused AdamW step under bf16 autocast on
// CUDA, not under FSDP (whose layer runner all-gathers the weights every forward anyway).
void Trainer::installBf16WeightCopies()
{
    if (!m_config.train.bf16WeightCopies || !m_bf16Autocast || !fusedAdamWAvailable() || m_parallel->fullySharded())
        return;
    m_bf16Weights = std::make_unique<Bf16Weights>();
    m_model->setBf16Weights(m_bf16Weights.get());
    if (m_overlap)  // "auto" attaches it later (attachOptimizerOverlap)
        m_overlap->setBf16Weights(m_bf16Weights.get());
    event("info", "bf16 weight copies kept between steps, written by the AdamW pass (train.bf16_weight_copies)");
    // train.bf16_gradients: the copies' gradients bypass the parameters' AccumulateGrad nodes,
    // where a data-parallel reducer hooks in; one rank has no reducer.
    if (m_config.train.bf16Gradients && m_env.worldSize == 1) {
        m_bf16Weights->setBf16Gradients(true);
        event("info", "bf16 weight gradients read by the gradient norm and AdamW as they are (train.bf16_gradients)");
    }
}

// What a checkpoint holds is fixed once the layout, the optimizer and the overlap are installed.
void Trainer::makeCheckpointer()
{
    Checkpointer::Run run;
    run.runDir = m_options.runDir;
    run.env = m_env;
    run.layout = layoutString(m_config, m_env.worldSize);
    // Sharded layouts (FSDP, EP, TP, PP): every rank saves/loads its own file (checkpoint.h).
    run.sharded = m_parallel->sharded() || m_pipeline != nullptr;
    run.seed = m_config.train.seed;
    run.device = m_device;
    Checkpointer::Parts parts;
    parts.tensors.model = m_model.get();
    parts.tensors.optimized = optimizedParameters();
    // FSDP: the trainable parameters are gathered from the shards (and ZeRO-3's are freed);
    // EP, TP, PP: the model's (sliced) parameters are what the optimizer updates.
    parts.tensors.trainableHeld = !m_parallel->fullySharded();
    parts.optimizer = m_optimizer.get();
    parts.moments = m_moments;
    parts.group = m_group.get();
    parts.overlap = m_overlap.get();
    parts.afterShardedLoad = [this] { m_parallel->afterOptimizerStep(); };
    parts.event = eventSink();
    m_checkpointer = std::make_unique<Checkpointer>(std::move(run), std::move(parts));
}

}  // namespace wb::rt::train_detail
