// One small interface over c10d's process groups (Gloo on the CPU, NCCL on CUDA), so the trainer
// never sees which backend or which LibTorch (1.13: ProcessGroupGloo derives from
// c10d::ProcessGroup; 2.x: ProcessGroupNCCL from c10d::Backend; same method names). The model
// knows nothing of this: parallelism is applied from outside (torchtitan style).
// Collectives are called from the training (main) thread only (autograd's backward included: on
// the CPU it runs on the calling thread, on CUDA on the device thread while the caller waits).
// Most are blocking; the *Async ones return a CommWork to wait on (prefetch, pipeline send/recv, the gradient buckets). Sub-groups over a
// subset of the ranks (expert-parallel, expert-data-parallel) are made from the world group
// through a prefixed store, so every group has its own key space and its own communicator.
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

/// A collective in flight. wait() blocks until it is done (NCCL: until the current stream waits
/// for it) and throws CommError on failure; it must be called exactly once, before the tensors
/// given to the collective are read.
class CommWork {
public:
    virtual ~CommWork() = default;
    virtual void wait() = 0;
};

class ProcessGroup {
public:
    virtual ~ProcessGroup() = default;
    /// Rank and size within this group.
    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// Backend name for logs and the meta line: "none" (one rank), "gloo", "nccl".
    virtual std::string backend() const = 0;
    /// "world", or the name given to newGroup ("ep0", "edp1", ...), for messages.
    virtual std::string name() const { return "world"; }

    /// In place over all ranks; tensors must be contiguous, same shapes and order on every rank.
    virtual void allreduce(std::vector<torch::Tensor>& tensors, ReduceOp op) = 0;
    /// The same, in flight until wait(): the tensors must stay untouched (not read, not written)
    /// until then. NCCL: enqueued on NCCL's stream after the work already on the calling thread's
    /// current stream (the tensors' producers), and wait() makes the waiting thread's current
    /// stream wait for it. Gloo: runs on the group's worker threads. Collectives of one group run
    /// in the order they are issued, so every rank must issue them in the same order.
    virtual std::unique_ptr<CommWork> allreduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) = 0;
    /// In place: every rank's tensors become root's.
    virtual void broadcast(std::vector<torch::Tensor>& tensors, int root) = 0;
    virtual void barrier() = 0;

    /// output (size()·n elements, contiguous) = the ranks' `input`s (n elements each) in rank order.
    virtual std::unique_ptr<CommWork> allgatherAsync(torch::Tensor output, torch::Tensor input) = 0;
    void allgather(const torch::Tensor& output, const torch::Tensor& input) { allgatherAsync(output, input)->wait(); }
    /// `input` has size()·n elements; output (n elements) = the sum over ranks of input's
    /// rank()-th block of n.
    virtual std::unique_ptr<CommWork> reduceScatterAsync(torch::Tensor output, torch::Tensor input) = 0;
    void reduceScatter(const torch::Tensor& output, const torch::Tensor& input)
    {
        reduceScatterAsync(output, input)->wait();
    }
    /// Rows (dim 0) of `input` split by inputSplits (one count per rank, summing to input.size(0))
    /// go to the ranks in order; `output` receives outputSplits[i] rows from rank i. The split
    /// sizes must agree pairwise (what rank i sends to j is what j expects from i).
    virtual void allToAll(const torch::Tensor& output, const torch::Tensor& input,
                          const std::vector<int64_t>& outputSplits, const std::vector<int64_t>& inputSplits) = 0;
    /// Every rank sends `counts_S` (int64, size()·m values, m per destination) and receives the
    /// m values each rank sent to it, in source order: the count exchange before a variable
    /// all-to-all. Returns the received counts on the host.
    std::vector<int64_t> exchangeCounts(const std::vector<int64_t>& counts, torch::Device device);

    /// Point-to-point (pipeline stages): `tensor` (contiguous; the receiver's has the sender's
    /// shape and dtype) goes to / comes from group rank `peer`. Messages between two ranks with
    /// the same `tag` arrive in the order they were sent (Gloo matches by tag; NCCL ignores tags
    /// and matches by call order). Two ranks that both send to and receive from each other must
    /// post in opposite orders (one sends first, the other receives first): NCCL's send and recv
    /// kernels on one stream otherwise wait for each other. The tensor must stay untouched until
    /// wait() returns. Timeouts and a gone peer throw CommError naming the rank, the op and peer.
    virtual std::unique_ptr<CommWork> sendAsync(torch::Tensor tensor, int peer, int tag) = 0;
    virtual std::unique_ptr<CommWork> recvAsync(torch::Tensor tensor, int peer, int tag) = 0;
    void send(const torch::Tensor& tensor, int peer, int tag) { sendAsync(tensor, peer, tag)->wait(); }
    void recv(const torch::Tensor& tensor, int peer, int tag) { recvAsync(tensor, peer, tag)->wait(); }

    /// A group over `ranks` (ranks of this group, ascending, containing rank()); `name` must be
    /// unique and the same on every member. Every member must call it (non-members must not),
    /// in the same order as the other groups it creates. One rank gives a single-process group.
    virtual std::unique_ptr<ProcessGroup> newGroup(const std::vector<int>& ranks, const std::string& name) = 0;
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

/// The `count` ranks begin, begin + step, begin + 2 step, ...: one group of a strided layout
/// (TP blocks, their DP stripes, EP and expert-DP groups).
inline std::vector<int> strideRanks(int begin, int step, int count)
{
    std::vector<int> ranks;
    for (int i = 0; i < count; ++i)
        ranks.push_back(begin + i * step);
    return ranks;
}

}  // namespace wb::rt
