// Checkpoint save/load (see checkpoint.h). torch::serialize archives work the same on LibTorch
// 1.13 and 2.x; parameters are keyed by their module path so a changed model fails loudly.
#include "runtime/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#if WB_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <filesystem>

namespace wb::rt {

void captureRngState(CheckpointState& state, torch::Device device)
{
    state.rngCpu = at::detail::getDefaultCPUGenerator().get_state();
#if WB_WITH_CUDA
    if (device.is_cuda())
        state.rngCuda = at::cuda::detail::getDefaultCUDAGenerator(device.index()).get_state();
#else
    (void)device;
#endif
}

void restoreRngState(const CheckpointState& state, torch::Device device)
{
    if (state.rngCpu.defined()) {
        at::Generator cpu = at::detail::getDefaultCPUGenerator();  // shares the default generator
        cpu.set_state(state.rngCpu);
    }
#if WB_WITH_CUDA
    if (device.is_cuda() && state.rngCuda.defined()) {
        at::Generator gpu = at::cuda::detail::getDefaultCUDAGenerator(device.index());
        gpu.set_state(state.rngCuda);
    }
#else
    (void)device;
#endif
}

std::string checkpointPath(const std::string& runDir)
{
    return runDir + "/ckpt/latest.pt";
}

core::Result<std::string> saveCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                         torch::optim::Optimizer& optimizer, const CheckpointState& state)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(runDir + "/ckpt", ec);
    const std::string path = checkpointPath(runDir);
    const std::string tmp = path + ".tmp";
    try {
        torch::serialize::OutputArchive archive;
        torch::serialize::OutputArchive params;
        for (const auto& item : model.named_parameters())
            params.write(item.key(), item.value().detach());
        for (const auto& item : model.named_buffers())
            params.write(item.key(), item.value(), /*is_buffer=*/true);
        archive.write("model", params);
        torch::serialize::OutputArchive optim;
        optimizer.save(optim);
        archive.write("optimizer", optim);
        archive.write("step", torch::tensor(state.step, torch::kInt64));
        archive.write("next_sample_seq", torch::tensor(state.nextSampleSeq, torch::kInt64));
        archive.write("data_seed", torch::tensor(state.dataSeed, torch::kInt64));
        if (state.rngCpu.defined())
            archive.write("rng_cpu", state.rngCpu);
        if (state.rngCuda.defined())
            archive.write("rng_cuda", state.rngCuda);
        archive.save_to(tmp);
    } catch (const std::exception& e) {
        return core::makeError(core::ErrorCode::IoError, std::string("cannot save the checkpoint: ") + e.what(), path);
    }
    fs::rename(tmp, path, ec);
    if (ec)
        return core::makeError(core::ErrorCode::IoError, "cannot rename the checkpoint: " + ec.message(), path);
    return path;
}

core::Result<CheckpointState> loadCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer)
{
    const std::string path = checkpointPath(runDir);
    if (!std::filesystem::exists(path))
        return core::makeError(core::ErrorCode::NotFound, "no checkpoint to resume from", path);
    CheckpointState state;
    try {
        torch::serialize::InputArchive archive;
        archive.load_from(path);
        torch::serialize::InputArchive params;
        archive.read("model", params);
        torch::NoGradGuard noGrad;
        for (auto& item : model.named_parameters()) {
            torch::Tensor saved;
            params.read(item.key(), saved);
            item.value().copy_(saved);
        }
        torch::serialize::InputArchive optim;
        archive.read("optimizer", optim);
        optimizer.load(optim);
        torch::Tensor step, seq;
        archive.read("step", step);
        archive.read("next_sample_seq", seq);
        state.step = step.item<int64_t>();
        state.nextSampleSeq = seq.item<int64_t>();
        // Absent in checkpoints written before RNG state was saved: the generators are left as is.
        torch::Tensor seed;
        if (archive.try_read("data_seed", seed))
            state.dataSeed = seed.item<int64_t>();
        archive.try_read("rng_cpu", state.rngCpu);
        archive.try_read("rng_cuda", state.rngCuda);
    } catch (const std::exception& e) {
        return core::makeError(core::ErrorCode::Corrupt,
                               std::string("cannot load the checkpoint (was the model config changed?): ") + e.what(), path);
    }
    return state;
}

}  // namespace wb::rt
