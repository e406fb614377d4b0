// Checkpoint save/load (see checkpoint.h). torch::serialize archives work the same on LibTorch
// 1.13 and 2.x; parameters are keyed by their module path so a changed model fails loudly.
#include "runtime/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#if WB_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>

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

namespace {

void writeState(torch::serialize::OutputArchive& archive, const CheckpointState& state)
{
    archive.write("step", torch::tensor(state.step, torch::kInt64));
    archive.write("next_sample_seq", torch::tensor(state.nextSampleSeq, torch::kInt64));
    archive.write("data_seed", torch::tensor(state.dataSeed, torch::kInt64));
    if (state.rngCpu.defined())
        archive.write("rng_cpu", state.rngCpu);
    if (state.rngCuda.defined())
        archive.write("rng_cuda", state.rngCuda);
}

// writeState's counterpart. Checkpoints written before the seed and RNG states were saved lack
// them: those fields are left as they are (the generators then keep their state).
void readState(torch::serialize::InputArchive& archive, CheckpointState& state)
{
    torch::Tensor step, seq, seed;
    archive.read("step", step);
    archive.read("next_sample_seq", seq);
    state.step = step.item<int64_t>();
    state.nextSampleSeq = seq.item<int64_t>();
    if (archive.try_read("data_seed", seed))
        state.dataSeed = seed.item<int64_t>();
    archive.try_read("rng_cpu", state.rngCpu);
    archive.try_read("rng_cuda", state.rngCuda);
}

// Builds the archive with `fill`, writes it to `path` through a temporary file and renames it, so
// a crash never leaves a half-written file under the final name.
core::Result<void> saveArchiveAtomically(const std::string& path,
                                         const std::function<void(torch::serialize::OutputArchive&)>& fill)
{
    const std::string tmp = path + ".tmp";
    try {
        torch::serialize::OutputArchive archive;
        fill(archive);
        archive.save_to(tmp);
    } catch (const std::exception& e) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);  // a partial file would only hold the disk
        return core::makeError(core::ErrorCode::IoError, std::string("cannot save the checkpoint: ") + e.what(), path);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec)
        return core::makeError(core::ErrorCode::IoError, "cannot rename the checkpoint: " + ec.message(), path);
    return {};
}

uint64_t tensorBytes(const torch::Tensor& t)
{
    return t.defined() ? static_cast<uint64_t>(t.numel()) * t.element_size() : 0;
}

std::string sizeText(uint64_t bytes)
{
    char text[32];
    if (bytes >= (1ull << 30))
        std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / double(1ull << 30));
    else
        std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / double(1ull << 20));
    return text;
}

}  // namespace

uint64_t checkpointBytes(const std::vector<torch::Tensor>& written, torch::optim::Optimizer& optimizer)
{
    uint64_t bytes = 0;
    for (const auto& t : written)
        bytes += tensorBytes(t);
    // The moments as allocated, in their dtype (bf16 moments: half of fp32); a parameter without
    // state yet (no step taken) writes none.
    for (const auto& [key, state] : optimizer.state())
        if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(state.get()))
            bytes += tensorBytes(adamw->exp_avg()) + tensorBytes(adamw->exp_avg_sq());
    return bytes;
}

core::Result<void> checkCheckpointSpace(const std::string& dir, uint64_t bytesPerFile, int files)
{
    std::error_code ec;
    const auto space = std::filesystem::space(dir, ec);
    if (ec)
        return {};  // cannot tell (e.g. an exotic filesystem): let the write itself report
    const uint64_t need = bytesPerFile * static_cast<uint64_t>(std::max(1, files)) + bytesPerFile / 50 + (16ull << 20);
    if (space.available >= need)
        return {};
    const uint64_t total = bytesPerFile * static_cast<uint64_t>(std::max(1, files));
    const std::string whose = files > 1 ? ", " + std::to_string(files) + " rank files on this disk" : "";
    return core::makeError(core::ErrorCode::IoError,
                           "not enough disk space for the checkpoint: it takes about " + sizeText(total) + whose +
                               ", and " + sizeText(space.available) + " are free; free space there, start the run with --run-dir on "
                               "a larger disk (and --resume from a copy of this run directory), or set "
                               "train.checkpoint_interval 0 (checkpoints only on SIGTERM). The last complete "
                               "checkpoint is kept",
                           dir);
}

namespace {

// What both checkpoint formats end with: the free-space check for `written` plus the optimizer's
// moments (`files` such files at once on that disk), then the archive — `fillTensors`' part, the
// optimizer and the run state — through a temporary file.
core::Result<void> saveWithOptimizerState(const std::string& path, const std::vector<torch::Tensor>& written, int files,
                                          torch::optim::Optimizer& optimizer, const CheckpointState& state,
                                          const std::function<void(torch::serialize::OutputArchive&)>& fillTensors)
{
    const std::string dir = std::filesystem::path(path).parent_path().string();
    if (auto room = checkCheckpointSpace(dir, checkpointBytes(written, optimizer), files); !room)
        return room.error();
    return saveArchiveAtomically(path, [&](torch::serialize::OutputArchive& archive) {
        fillTensors(archive);
        torch::serialize::OutputArchive optim;
        optimizer.save(optim);
        archive.write("optimizer", optim);
        writeState(archive, state);
    });
}

}  // namespace

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
    std::vector<torch::Tensor> written;
    for (const auto& item : model.named_parameters())
        written.push_back(item.value());
    for (const auto& item : model.named_buffers())
        written.push_back(item.value());
    auto saved = saveWithOptimizerState(path, written, 1, optimizer, state, [&](torch::serialize::OutputArchive& archive) {
        torch::serialize::OutputArchive params;
        for (const auto& item : model.named_parameters())
            params.write(item.key(), item.value().detach());
        for (const auto& item : model.named_buffers())
            params.write(item.key(), item.value(), /*is_buffer=*/true);
        archive.write("model", params);
    });
    if (!saved)
        return saved.error();
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
        readState(archive, state);
    } catch (const std::exception& e) {
        return core::makeError(core::ErrorCode::Corrupt,
                               std::string("cannot load the checkpoint (was the model config changed?): ") + e.what(), path);
    }
    return state;
}

// ---- sharded checkpoints: one file per rank + layout.json ----

namespace {

// The model parameters a rank file holds: all, or (FSDP) only the frozen ones.
bool savedParameter(const torch::Tensor& p, bool trainableHeld)
{
    return trainableHeld || !p.requires_grad();
}

std::string shapeText(const torch::Tensor& t)
{
    std::string s = "[";
    for (int64_t d = 0; d < t.dim(); ++d)
        s += (d ? ", " : "") + std::to_string(t.size(d));
    return s + "]";
}

// Copies `saved` into `target` after checking the shape; throws naming `what`.
void restoreTensor(const torch::Tensor& target, const torch::Tensor& saved, const std::string& what)
{
    if (!saved.sizes().equals(target.sizes()))
        throw std::runtime_error(what + " has shape " + shapeText(saved) + " in the checkpoint but " + shapeText(target) +
                                 " in this run");
    target.copy_(saved);
}

}  // namespace

std::string rankCheckpointFile(int64_t step, int rank)
{
    return "step" + std::to_string(step) + "/rank" + std::to_string(rank) + ".pt";
}

std::string checkpointLayoutPath(const std::string& runDir)
{
    return runDir + "/ckpt/layout.json";
}

core::Result<std::string> saveRankCheckpoint(const std::string& runDir, int rank, int worldSize, const RankTensors& tensors,
                                             torch::optim::Optimizer& optimizer, const CheckpointState& state,
                                             int filesOnThisDisk)
{
    namespace fs = std::filesystem;
    const std::string relative = rankCheckpointFile(state.step, rank);
    const std::string path = runDir + "/ckpt/" + relative;
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec)
        return core::makeError(core::ErrorCode::IoError, "cannot create the checkpoint directory: " + ec.message(), path);
    std::vector<torch::Tensor> written = tensors.optimized;
    for (const auto& item : tensors.model->named_parameters())
        if (savedParameter(item.value(), tensors.trainableHeld))
            written.push_back(item.value());
    auto saved = saveWithOptimizerState(path, written, filesOnThisDisk, optimizer, state,
                                        [&](torch::serialize::OutputArchive& archive) {
        archive.write("rank", torch::tensor(int64_t{rank}, torch::kInt64));
        archive.write("world_size", torch::tensor(int64_t{worldSize}, torch::kInt64));
        torch::serialize::OutputArchive params;
        for (const auto& item : tensors.model->named_parameters())
            if (savedParameter(item.value(), tensors.trainableHeld))
                params.write(item.key(), item.value().detach());
        archive.write("model", params);
        torch::serialize::OutputArchive optimized;
        optimized.write("count", torch::tensor(static_cast<int64_t>(tensors.optimized.size()), torch::kInt64));
        for (size_t i = 0; i < tensors.optimized.size(); ++i)
            optimized.write(std::to_string(i), tensors.optimized[i].detach());
        archive.write("optimized", optimized);
    });
    if (!saved)
        return saved.error();
    return relative;
}

core::Result<void> commitCheckpointLayout(const std::string& runDir, const CheckpointLayout& layout)
{
    namespace fs = std::filesystem;
    const std::string path = checkpointLayoutPath(runDir);
    const std::string tmp = path + ".tmp";
    nlohmann::json j = {{"format", 1},          {"world_size", layout.worldSize}, {"layout", layout.layout},
                        {"step", layout.step}, {"files", layout.files}};
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << j.dump(2) << "\n";
        out.flush();
        if (!out)
            return core::makeError(core::ErrorCode::IoError, "cannot write the checkpoint layout", tmp);
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec)
        return core::makeError(core::ErrorCode::IoError, "cannot rename the checkpoint layout: " + ec.message(), path);
    // Complete now: the files of other steps (the previous checkpoint, or a save that never
    // completed) are no longer needed.
    const std::string keep = "step" + std::to_string(layout.step);
    for (const auto& entry : fs::directory_iterator(runDir + "/ckpt", ec))
        if (entry.is_directory() && entry.path().filename().string().rfind("step", 0) == 0 &&
            entry.path().filename().string() != keep)
            fs::remove_all(entry.path(), ec);
    return {};
}

core::Result<CheckpointLayout> readCheckpointLayout(const std::string& runDir)
{
    const std::string path = checkpointLayoutPath(runDir);
    std::ifstream in(path);
    if (!in)
        return core::makeError(core::ErrorCode::NotFound, "no complete checkpoint of a sharded layout (no layout.json)", path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    CheckpointLayout layout;
    if (j.is_object() && j.value("format", 0) == 1 && j.contains("files") && j["files"].is_array()) {
        layout.worldSize = j.value("world_size", 0);
        layout.layout = j.value("layout", "");
        layout.step = j.value("step", int64_t{-1});
        for (const auto& f : j["files"])
            if (f.is_string())
                layout.files.push_back(f.get<std::string>());
    }
    if (layout.worldSize <= 0 || layout.step < 0 || static_cast<int>(layout.files.size()) != layout.worldSize)
        return core::makeError(core::ErrorCode::Corrupt,
                               "the checkpoint layout is unreadable (world_size, step and one file per rank expected); "
                               "remove the ckpt directory to start over",
                               path);
    return layout;
}

core::Result<CheckpointState> loadRankCheckpoint(const std::string& runDir, const CheckpointLayout& layout, int rank,
                                                 const RankTensors& tensors, torch::optim::Optimizer& optimizer)
{
    if (rank < 0 || rank >= static_cast<int>(layout.files.size()))
        return core::makeError(core::ErrorCode::InvalidArgument, "no checkpoint file for rank " + std::to_string(rank),
                               checkpointLayoutPath(runDir));
    const std::string path = runDir + "/ckpt/" + layout.files[static_cast<size_t>(rank)];
    if (!std::filesystem::exists(path))
        return core::makeError(core::ErrorCode::Corrupt, "the checkpoint file of rank " + std::to_string(rank) +
                                                             " named by layout.json is missing", path);
    CheckpointState state;
    try {
        torch::serialize::InputArchive archive;
        archive.load_from(path);
        torch::Tensor savedRank;
        archive.read("rank", savedRank);
        readState(archive, state);
        if (savedRank.item<int64_t>() != rank || state.step != layout.step)
            throw std::runtime_error("the file holds rank " + std::to_string(savedRank.item<int64_t>()) + " at step " +
                                     std::to_string(state.step) + ", layout.json expects rank " +
                                     std::to_string(rank) + " at step " + std::to_string(layout.step));
        torch::NoGradGuard noGrad;
        torch::serialize::InputArchive params;
        archive.read("model", params);
        for (auto& item : tensors.model->named_parameters())
            if (savedParameter(item.value(), tensors.trainableHeld)) {
                torch::Tensor saved;
                params.read(item.key(), saved);
                restoreTensor(item.value(), saved, "parameter " + item.key());
            }
        torch::serialize::InputArchive optimized;
        archive.read("optimized", optimized);
        torch::Tensor count;
        optimized.read("count", count);
        if (count.item<int64_t>() != static_cast<int64_t>(tensors.optimized.size()))
            throw std::runtime_error("the checkpoint holds " + std::to_string(count.item<int64_t>()) +
                                     " optimized tensors, this run's optimizer has " + std::to_string(tensors.optimized.size()));
        for (size_t i = 0; i < tensors.optimized.size(); ++i) {
            torch::Tensor saved;
            optimized.read(std::to_string(i), saved);
            restoreTensor(tensors.optimized[i], saved, "optimized tensor " + std::to_string(i));
        }
        torch::serialize::InputArchive optim;
        archive.read("optimizer", optim);
        optimizer.load(optim);
    } catch (const std::exception& e) {
        return core::makeError(core::ErrorCode::Corrupt,
                               std::string("cannot load the checkpoint (was the model config changed?): ") + e.what(), path);
    }
    return state;
}

}  // namespace wb::rt
