// One small interface over c10d's process groups (Gloo on the CPU, NCCL on CUDA), so the trainer
// never sees which backend or which LibTorch (1.13: ProcessGroupGloo derives from
// c10d::ProcessGroup; 2.x: ProcessGroupNCCL from c10d::Backend; same method names). The model
// knows nothing of this: parallelism is applied from outside (torchtitan style).
// Collectives are blocking and called from the training (main) thread only.
//
// Every failure of rendezvous or of a collective (timeout, peer gone) throws CommError, whose
// message names the rank and the operation; moe-train turns it into exit code 4 (comm_error).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace wb::rt {

/// A rendezvous or collective failed; ends the rank with exit code 4.
class CommError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The torchrun environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT. All absent = one process (rank 0 of 1).
struct RankEnvironment {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 29500;

    /// Reads the environment; throws CommError (naming the variable) when it is inconsistent,
    /// e.g. WORLD_SIZE > 1 without MASTER_PORT, or RANK outside [0, WORLD_SIZE).
    static RankEnvironment fromEnvironment();
};

/// Collective timeout: WB_COMM_TIMEOUT_S seconds (moe-train --comm-timeout sets it), default 300.
std::chrono::milliseconds commTimeoutFromEnvironment();

enum class ReduceOp { Sum, Max };

class ProcessGroup {
public:
    virtual ~ProcessGroup() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// Backend name for logs and the meta line: "none" (one rank), "gloo", "nccl".
    virtual std::string backend() const = 0;

    /// In place over all ranks; tensors must be contiguous, same shapes and order on every rank.
    virtual void allreduce(std::vector<torch::Tensor>& tensors, ReduceOp op) = 0;
    /// In place: every rank's tensors become root's.
    virtual void broadcast(std::vector<torch::Tensor>& tensors, int root) = 0;
    virtual void barrier() = 0;
};

/// World size 1 (no c10d at all): every collective is the identity.
std::unique_ptr<ProcessGroup> makeSingleProcessGroup();

/// Rendezvous through a c10d::TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 hosts it) and builds
/// the backend for `device` (Gloo for CPU tensors, NCCL for CUDA). World size 1 returns the
/// single-process group without touching the network. Throws CommError on timeout or failure,
/// and when this build has no backend for the device (WB_WITH_C10D off, or no Gloo headers).
std::unique_ptr<ProcessGroup> createProcessGroup(const RankEnvironment& env, torch::Device device,
                                                 std::chrono::milliseconds timeout);

/// True when this build can run more than one rank on `device` (for --self-check and checks).
bool multiRankSupported(torch::Device device);

}  // namespace wb::rt
