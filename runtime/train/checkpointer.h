// The run's checkpoints behind one interface (torchtitan's components/checkpoint.py Checkpointer):
// the trainer calls save(step, …, why) and, on --resume, load(); which files a layout writes, who
// writes them and how the ranks agree is this class's business. The files themselves (archives,
// layout.json, the free-space check) are checkpoint.h's:
//  - one rank, or plain data parallel (every rank holds the same weights): rank 0 writes
//    DIR/ckpt/latest.pt;
//  - sharded layouts (FSDP, EP, TP, PP): every rank writes its own file, and rank 0 commits
//    DIR/ckpt/layout.json once all of them have (agreed by an allreduce).
// A resume refuses, with exit 2, a checkpoint written by another layout or another number of ranks.
// Failures are thrown as RunFailure (exit 1 or 2). Training thread only.
#pragma once

#include "runtime/parallel/process_group.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/run_reporting.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

namespace wb::rt {

class OptimizerOverlap;

class Checkpointer {
public:
    /// Who this rank is and which layout the run has; fixed for the run.
    struct Run {
        std::string runDir;
        RankEnvironment env;
        std::string layout;   ///< the meta line's layout string; a sharded checkpoint must name the same
        bool sharded = false; ///< FSDP, EP, TP or PP: per-rank files + layout.json, else ckpt/latest.pt
        uint64_t seed = 0;    ///< train.seed, saved and checked on resume (the data order depends on it)
        torch::Device device = torch::kCPU;
    };
    /// What a checkpoint holds and how this rank reaches the others. Owned by the trainer; every
    /// pointer outlives the Checkpointer.
    struct Parts {
        RankTensors tensors;                         ///< the model and the tensors the optimizer updates
        torch::optim::AdamW* optimizer = nullptr;
        MomentDtypes moments;                        ///< configured; a checkpoint's other dtype is converted
        ProcessGroup* group = nullptr;               ///< every rank of the run
        OptimizerOverlap* overlap = nullptr;         ///< null = the serial optimizer step
        std::function<void()> afterShardedLoad;      ///< FSDP: the whole parameters from the restored shards
        EventSink event;
    };

    Checkpointer(Run run, Parts parts);
    /// The overlapped optimizer attached after the first step (train.overlap_optimizer "auto").
    void setOverlap(OptimizerOverlap* overlap) { m_parts.overlap = overlap; }

    /// Saves the state after optimizer step `step`, the loader to continue at `nextSampleSeq`
    /// ("checkpoint saved (why)" event). Every rank calls it; a sharded checkpoint already saved
    /// at this step is not saved again.
    void save(int64_t step, int64_t nextSampleSeq, const std::string& why);
    /// --resume: loads this layout's checkpoint into the parts and sets `step` and `nextSampleSeq`
    /// (left as they are, with a warning, when there is none). Every rank calls it.
    void load(int64_t& step, int64_t& nextSampleSeq);

private:
    CheckpointState stateNow(int64_t step, int64_t nextSampleSeq) const;
    void saveSharded(int64_t step, int64_t nextSampleSeq, const std::string& why);
    void loadDense(int64_t& step, int64_t& nextSampleSeq);
    void loadSharded(int64_t& step, int64_t& nextSampleSeq);
    void restore(const CheckpointState& state, const std::string& from, int64_t& step, int64_t& nextSampleSeq);
    /// True when `ok` holds on every rank (one small allreduce; just `ok` on one rank).
    bool allRanksOk(bool ok);
    bool writer() const { return m_run.env.rank == 0; }

    Run m_run;
    Parts m_parts;
    int64_t m_savedStep = -1;  // step of the last sharded checkpoint this run saved or resumed from
};

}  // namespace wb::rt
