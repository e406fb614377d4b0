// The run's checkpoints (see checkpointer.h); the file formats are checkpoint.cpp's.
#include "runtime/train/checkpointer.h"

#include "runtime/train/optimizer_overlap.h"

#include <algorithm>
#include <filesystem>
#include <utility>

namespace wb::rt {

namespace {

// Exit 2 on --resume when the checkpoint in the run directory was written by another layout.
std::string layoutMismatch(const std::string& runDir, const std::string& saved, const std::string& current, int savedWorld)
{
    return "--resume: the checkpoint in " + runDir + "/ckpt was written by " + saved + ", but this run is " + current +
           "; resume with the same number of ranks (--nproc-per-node " + std::to_string(std::max(1, savedWorld)) +
           ") and the same parallel settings, or start a new run directory without --resume";
}

std::string layoutText(int world, const std::string& layout)
{
    return std::to_string(world) + (world == 1 ? " rank" : " ranks") + " with layout \"" + layout + "\"";
}

}  // namespace

Checkpointer::Checkpointer(Run run, Parts parts) : m_run(std::move(run)), m_parts(std::move(parts)) {}

CheckpointState Checkpointer::stateNow(int64_t step, int64_t nextSampleSeq) const
{
    CheckpointState state;
    state.step = step;
    state.nextSampleSeq = nextSampleSeq;
    state.dataSeed = static_cast<int64_t>(m_run.seed);
    captureRngState(state, m_run.device);
    return state;
}

void Checkpointer::save(int64_t step, int64_t nextSampleSeq, const std::string& why)
{
    if (m_parts.overlap)  // the weights and moments are read once their last update is written
        m_parts.overlap->waitAll();
    if (m_run.sharded) {
        saveSharded(step, nextSampleSeq, why);
        return;
    }
    if (!writer())
        return;  // the weights and optimizer state are the same on every rank; rank 0 saves them
    auto saved = saveCheckpoint(m_run.runDir, *m_parts.tensors.model, *m_parts.optimizer, stateNow(step, nextSampleSeq));
    if (saved)
        m_parts.event("info", "checkpoint saved (" + why + "): " + *saved, step);
    else
        throw RunFailure{1, saved.error().toString()};
}

bool Checkpointer::allRanksOk(bool ok)
{
    ProcessGroup& group = *m_parts.group;
    if (group.size() == 1)
        return ok;
    std::vector<torch::Tensor> failed{torch::tensor({ok ? 0.0 : 1.0}, torch::TensorOptions().dtype(torch::kFloat64))};
    if (m_run.device.is_cuda())  // NCCL reduces device tensors
        failed[0] = failed[0].to(m_run.device);
    group.allreduce(failed, ReduceOp::Max);
    return failed[0].cpu().item<double>() == 0.0;
}

// Every rank writes its file; once all have (agreed by an allreduce), rank 0 commits layout.json,
// which makes the checkpoint complete and removes the previous one.
void Checkpointer::saveSharded(int64_t step, int64_t nextSampleSeq, const std::string& why)
{
    if (m_savedStep == step)
        return;  // saved at this step already (an interval save right before a stop)
    const RankEnvironment& env = m_run.env;
    auto saved = saveRankCheckpoint(m_run.runDir, env.rank, env.worldSize, m_parts.tensors, *m_parts.optimizer,
                                    stateNow(step, nextSampleSeq), env.localWorldSize);
    if (!allRanksOk(saved.ok()))
        throw RunFailure{1, saved ? std::string("another rank could not save its checkpoint file (its log says why)")
                                  : saved.error().toString()};
    core::Result<void> committed;
    if (writer()) {
        CheckpointLayout layout;
        layout.worldSize = env.worldSize;
        layout.layout = m_run.layout;
        layout.step = step;
        for (int k = 0; k < env.worldSize; ++k)
            layout.files.push_back(rankCheckpointFile(step, k));
        committed = commitCheckpointLayout(m_run.runDir, layout);
    }
    if (!allRanksOk(committed.ok()))
        throw RunFailure{1, committed ? std::string("rank 0 could not write the checkpoint layout (its log says why)")
                                      : committed.error().toString()};
    m_savedStep = step;
    if (writer())
        m_parts.event("info", "checkpoint saved (" + why + "): " + m_run.runDir + "/ckpt/" + "step" +
                                  std::to_string(step) + " (" + std::to_string(env.worldSize) +
                                  " rank files) + " + checkpointLayoutPath(m_run.runDir), step);
}

void Checkpointer::load(int64_t& step, int64_t& nextSampleSeq)
{
    if (m_run.sharded)
        loadSharded(step, nextSampleSeq);
    else
        loadDense(step, nextSampleSeq);
}

void Checkpointer::loadDense(int64_t& step, int64_t& nextSampleSeq)
{
    auto state = loadCheckpoint(m_run.runDir, *m_parts.tensors.model, *m_parts.optimizer);
    if (state) {
        restore(*state, checkpointPath(m_run.runDir), step, nextSampleSeq);
        return;
    }
    if (state.error().code != core::ErrorCode::NotFound)
        throw RunFailure{1, state.error().toString()};
    // A sharded layout's checkpoint cannot be read by this unsharded layout.
    if (auto layout = readCheckpointLayout(m_run.runDir))
        throw RunFailure{2, layoutMismatch(m_run.runDir, layoutText(layout->worldSize, layout->layout),
                                           layoutText(m_run.env.worldSize, m_run.layout), layout->worldSize)};
    m_parts.event("warning", "--resume: " + state.error().toString() + "; starting at step 0", -1);
}

// Every rank reads layout.json (the run directory is shared), checks that it names this layout,
// loads its own file into what the layout has already sliced or sharded, and FSDP gathers the
// whole parameters from the restored shards.
void Checkpointer::loadSharded(int64_t& step, int64_t& nextSampleSeq)
{
    const RankEnvironment& env = m_run.env;
    ProcessGroup& group = *m_parts.group;
    const std::string current = layoutText(env.worldSize, m_run.layout);
    auto layout = readCheckpointLayout(m_run.runDir);
    // All ranks must see the same checkpoint (a run directory not shared between nodes would have
    // layout.json on node 0 only): agreed before any rank may leave, so none is left waiting.
    const double seen = layout ? static_cast<double>(layout->step) : layout.error().code == core::ErrorCode::NotFound ? -1.0 : -2.0;
    if (group.size() > 1) {
        std::vector<torch::Tensor> range{torch::tensor({seen, -seen}, torch::TensorOptions().dtype(torch::kFloat64))};
        if (m_run.device.is_cuda())
            range[0] = range[0].to(m_run.device);
        group.allreduce(range, ReduceOp::Max);
        const auto r = range[0].cpu();
        const double highest = r[0].item<double>(), lowest = -r[1].item<double>();
        const auto text = [](double v) { return v >= 0 ? "step " + std::to_string(static_cast<int64_t>(v)) : std::string(v == -1.0 ? "none" : "an unreadable one"); };
        if (highest != lowest)
            throw RunFailure{2, "--resume: the ranks see different checkpoints in " + m_run.runDir + "/ckpt (" + text(lowest) +
                                    " on some, " + text(highest) + " on others); the run directory must be shared by all "
                                    "nodes, or copy its ckpt folder to every node before --resume"};
    }
    if (!layout) {
        if (layout.error().code != core::ErrorCode::NotFound)
            throw RunFailure{1, layout.error().toString()};
        if (std::filesystem::exists(checkpointPath(m_run.runDir)))
            throw RunFailure{2, layoutMismatch(m_run.runDir, "an unsharded layout (ckpt/latest.pt: one rank or plain data parallel)",
                                               current, 1)};
        m_parts.event("warning", "--resume: " + layout.error().toString() + "; starting at step 0", -1);
        return;
    }
    if (layout->worldSize != env.worldSize || layout->layout != m_run.layout)
        throw RunFailure{2, layoutMismatch(m_run.runDir, layoutText(layout->worldSize, layout->layout), current,
                                           layout->worldSize)};
    auto state = loadRankCheckpoint(m_run.runDir, *layout, env.rank, m_parts.tensors, *m_parts.optimizer);
    if (!allRanksOk(state.ok()))
        throw RunFailure{1, state ? std::string("another rank could not load its checkpoint file (its log says why)")
                                  : state.error().toString()};
    if (m_parts.afterShardedLoad)
        m_parts.afterShardedLoad();  // FSDP: the whole parameters from the restored shards
    restore(*state, m_run.runDir + "/ckpt/step" + std::to_string(layout->step), step, nextSampleSeq);
    m_savedStep = step;
}

// Resume: everything a continued run needs to produce the same losses as an uninterrupted one —
// weights and optimizer state (loaded by loadCheckpoint), step (the LR schedule is a function of
// it), the loader's stream position (its order is a function of the seed and the position) and
// the RNG states. The model draws no random numbers after initialization today (no dropout; mock
// images are seeded per sample), so the generators matter for future random ops, not for now.
// `step` and `nextSampleSeq` are set before any event, so a run that fails to record one reports
// the step it resumed at.
void Checkpointer::restore(const CheckpointState& state, const std::string& from, int64_t& step, int64_t& nextSampleSeq)
{
    step = state.step;
    nextSampleSeq = state.nextSampleSeq;
    restoreRngState(state, m_run.device);
    m_parts.event("info", "resumed from " + from + " at step " + std::to_string(step), step);
    // A checkpoint written with the other moment dtype is converted, not refused: the moments are
    // a running average that one rounding barely moves, and refusing would strand the run.
    if (const std::string converted = convertMoments(*m_parts.optimizer, m_parts.moments); !converted.empty())
        m_parts.event("warning", converted, step);
    if (state.dataSeed >= 0 && state.dataSeed != static_cast<int64_t>(m_run.seed))
        m_parts.event("warning", "train.seed changed from " + std::to_string(state.dataSeed) + " to " +
                                     std::to_string(m_run.seed) + " since the checkpoint: the data order differs from an uninterrupted run",
                      step);
    if (!state.rngCpu.defined())
        m_parts.event("warning", "the checkpoint has no RNG state (written by an older moe-train)", step);
}

}  // namespace wb::rt
