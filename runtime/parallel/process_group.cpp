// c10d process groups behind wb::rt::ProcessGroup (see process_group.h). Main thread only.
//
// Backends are compiled in only where their headers exist: WB_WITH_GLOO (Debian's LibTorch 1.13 +
// libgloo-dev; the PyTorch wheel ships no Gloo headers) and WB_WITH_C10D_NCCL (CUDA builds with
// NCCL). Without either, only world size 1 runs, and asking for more is a CommError that says so.
#include "runtime/parallel/process_group.h"

#if WB_WITH_GLOO || WB_WITH_C10D_NCCL
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if WB_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if WB_WITH_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

namespace wb::rt {

namespace {

int intFromEnvironment(const char* name, int fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v)
        return fallback;
    char* end = nullptr;
    const long value = std::strtol(v, &end, 10);
    if (*end != '\0')
        throw CommError(std::string(name) + "='" + v + "' is not an integer");
    return static_cast<int>(value);
}

class DoneWork final : public CommWork {
public:
    void wait() override {}
};

// A c10d work plus what to do once it is done (copy a reduced block out); `fn` throws CommError.
class DeferredWork final : public CommWork {
public:
    explicit DeferredWork(std::function<void()> fn) : m_fn(std::move(fn)) {}
    ~DeferredWork() override
    {
        if (m_fn) {  // never waited for (an exception unwound past it): wait, but do not throw
            try {
                m_fn();
            } catch (...) {
            }
        }
    }
    void wait() override
    {
        auto fn = std::move(m_fn);
        m_fn = nullptr;
        if (fn)
            fn();
    }

private:
    std::function<void()> m_fn;
};

class SingleProcessGroup final : public ProcessGroup {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string backend() const override { return "none"; }
    void allreduce(std::vector<torch::Tensor>&, ReduceOp) override {}
    std::unique_ptr<CommWork> allreduceAsync(std::vector<torch::Tensor>, ReduceOp) override
    {
        return std::make_unique<DoneWork>();
    }
    void broadcast(std::vector<torch::Tensor>&, int) override {}
    void barrier() override {}
    std::unique_ptr<CommWork> allgatherAsync(torch::Tensor output, torch::Tensor input) override
    {
        output.view({-1}).copy_(input.reshape({-1}));
        return std::make_unique<DoneWork>();
    }
    std::unique_ptr<CommWork> reduceScatterAsync(torch::Tensor output, torch::Tensor input) override
    {
        output.view({-1}).copy_(input.reshape({-1}));
        return std::make_unique<DoneWork>();
    }
    void allToAll(const torch::Tensor& output, const torch::Tensor& input, const std::vector<int64_t>&,
                  const std::vector<int64_t>&) override
    {
        output.copy_(input);
    }
    // One rank has no peer: a pipeline over one rank never sends (Pipeline needs PP > 1).
    std::unique_ptr<CommWork> sendAsync(torch::Tensor, int peer, int) override
    {
        throw CommError("rank 0 of 1: send to rank " + std::to_string(peer) + " in a single-process group");
    }
    std::unique_ptr<CommWork> recvAsync(torch::Tensor, int peer, int) override
    {
        throw CommError("rank 0 of 1: recv from rank " + std::to_string(peer) + " in a single-process group");
    }
    std::unique_ptr<ProcessGroup> newGroup(const std::vector<int>&, const std::string&) override
    {
        return std::make_unique<SingleProcessGroup>();
    }
};

#if WB_WITH_GLOO || WB_WITH_C10D_NCCL
// Wraps one c10d backend. ProcessGroupGloo and ProcessGroupNCCL share the method names but not a
// base class across LibTorch versions, hence a template rather than a c10d base pointer.
// `flatCollectives`: the backend has _allgather_base / _reduce_scatter_base (NCCL). Gloo on
// LibTorch 1.13 has neither working, so there all-gather goes through the list form into views
// of the flat output, and reduce-scatter is an allreduce of which each rank keeps its block
// (twice the traffic; only the CPU test path pays it).
template <class Backend>
class C10dProcessGroup final : public ProcessGroup {
public:
    using Factory = std::function<c10::intrusive_ptr<Backend>(const c10::intrusive_ptr<c10d::Store>&, int rank, int size)>;

    struct Identity {
        std::string backend;         // "gloo" / "nccl"
        std::string name = "world";  // group name
        int globalRank = 0;
        int worldSize = 1;
        std::vector<int> globalRanks;  // of this group's members, in group-rank order
        bool flatCollectives = false;
    };

    C10dProcessGroup(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Backend> group, int rank, int size,
                     Identity identity, Factory factory)
        : m_store(std::move(store)), m_group(std::move(group)), m_rank(rank), m_size(size), m_id(std::move(identity)),
          m_factory(std::move(factory))
    {
    }
    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string backend() const override { return m_id.backend; }
    std::string name() const override { return m_id.name; }

    void allreduce(std::vector<torch::Tensor>& tensors, ReduceOp op) override
    {
        c10d::AllreduceOptions options;
        options.reduceOp = op == ReduceOp::Sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
        guarded("allreduce", [&] { m_group->allreduce(tensors, options)->wait(); });
    }
    // The work holds its tensors; the lambda holds them too, so a caller's temporary lives until
    // wait(). The wait is guarded like the blocking form: a timeout or a gone peer is a CommError.
    std::unique_ptr<CommWork> allreduceAsync(std::vector<torch::Tensor> tensors, ReduceOp op) override
    {
        c10d::AllreduceOptions options;
        options.reduceOp = op == ReduceOp::Sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
        c10::intrusive_ptr<c10d::Work> work;
        guarded("allreduce", [&] { work = m_group->allreduce(tensors, options); });
        return std::make_unique<DeferredWork>([this, work, tensors] { guarded("allreduce", [&] { work->wait(); }); });
    }
    void broadcast(std::vector<torch::Tensor>& tensors, int root) override
    {
        c10d::BroadcastOptions options;
        options.rootRank = root;
        guarded("broadcast", [&] { m_group->broadcast(tensors, options)->wait(); });
    }
    void barrier() override
    {
        guarded("barrier", [&] { m_group->barrier()->wait(); });
    }

    std::unique_ptr<CommWork> allgatherAsync(torch::Tensor output, torch::Tensor input) override
    {
        TORCH_CHECK(output.is_contiguous() && output.numel() == input.numel() * m_size,
                    "allgather: the output needs size() x the input's elements, contiguous");
        auto in = input.reshape({-1}).contiguous();
        auto out = output.view({-1});
        c10::intrusive_ptr<c10d::Work> work;
        if (m_id.flatCollectives) {
            guarded("allgather", [&] { work = m_group->_allgather_base(out, in); });
        } else {
            const int64_t n = in.numel();
            std::vector<std::vector<at::Tensor>> outs(1);
            for (int r = 0; r < m_size; ++r)
                outs[0].push_back(out.narrow(0, r * n, n));
            std::vector<at::Tensor> ins{in};
            guarded("allgather", [&] { work = m_group->allgather(outs, ins); });
        }
        // The work keeps its tensors alive; `in` may be a temporary copy, so it is held too.
        return std::make_unique<DeferredWork>([this, work, in, out] { guarded("allgather", [&] { work->wait(); }); });
    }

    std::unique_ptr<CommWork> reduceScatterAsync(torch::Tensor output, torch::Tensor input) override
    {
        const int64_t n = output.numel();
        TORCH_CHECK(output.is_contiguous() && input.numel() == n * m_size,
                    "reduce-scatter: the input needs size() x the output's elements");
        c10d::ReduceScatterOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        auto out = output.view({-1});
        if (m_id.flatCollectives) {
            auto in = input.reshape({-1}).contiguous();
            c10::intrusive_ptr<c10d::Work> work;
            guarded("reduce_scatter", [&] { work = m_group->_reduce_scatter_base(out, in, options); });
            return std::make_unique<DeferredWork>([this, work, in, out] { guarded("reduce_scatter", [&] { work->wait(); }); });
        }
        std::vector<at::Tensor> all{input.reshape({-1}).clone()};
        c10d::AllreduceOptions sum;
        sum.reduceOp = c10d::ReduceOp::SUM;
        c10::intrusive_ptr<c10d::Work> work;
        guarded("reduce_scatter", [&] { work = m_group->allreduce(all, sum); });
        return std::make_unique<DeferredWork>([this, work, all, out, n] {
            guarded("reduce_scatter", [&] { work->wait(); });
            out.copy_(all[0].narrow(0, static_cast<int64_t>(m_rank) * n, n));
        });
    }

    void allToAll(const torch::Tensor& output, const torch::Tensor& input, const std::vector<int64_t>& outputSplits,
                  const std::vector<int64_t>& inputSplits) override
    {
        TORCH_CHECK(static_cast<int>(outputSplits.size()) == m_size && static_cast<int>(inputSplits.size()) == m_size,
                    "all-to-all: one split size per rank");
        auto out = output;
        auto in = input.contiguous();
        auto outSplits = outputSplits;
        auto inSplits = inputSplits;
        guarded("alltoall", [&] { m_group->alltoall_base(out, in, outSplits, inSplits)->wait(); });
    }

    // c10d's send/recv take a one-tensor list and a tag (Gloo's slot); same signature on the Gloo
    // and NCCL backends of 1.13 and 2.x. The work keeps the tensor; the lambda holds it too, so a
    // temporary given here lives until the transfer is done.
    std::unique_ptr<CommWork> sendAsync(torch::Tensor tensor, int peer, int tag) override
    {
        return pointToPoint("send", tensor, peer, tag, true);
    }
    std::unique_ptr<CommWork> recvAsync(torch::Tensor tensor, int peer, int tag) override
    {
        return pointToPoint("recv", tensor, peer, tag, false);
    }

    std::unique_ptr<ProcessGroup> newGroup(const std::vector<int>& ranks, const std::string& name) override
    {
        const auto it = std::find(ranks.begin(), ranks.end(), m_rank);
        if (it == ranks.end())
            throw CommError(who() + ": asked to create group " + name + " without being one of its ranks");
        if (ranks.size() == 1)
            return makeSingleProcessGroup();
        Identity id = m_id;
        // Nested groups repeat names (each pipeline stage has its own "tp0"): messages name the path.
        id.name = m_id.name == "world" ? name : m_id.name + "/" + name;
        id.globalRanks.clear();
        for (int r : ranks)
            id.globalRanks.push_back(m_id.globalRanks.empty() ? r : m_id.globalRanks.at(static_cast<size_t>(r)));
        const int groupRank = static_cast<int>(it - ranks.begin());
        const int groupSize = static_cast<int>(ranks.size());
        c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::PrefixStore>(name, m_store);
        c10::intrusive_ptr<Backend> group;
        guarded("new_group", [&] { group = m_factory(store, groupRank, groupSize); });
        return std::make_unique<C10dProcessGroup<Backend>>(store, group, groupRank, groupSize, std::move(id), m_factory);
    }

private:
    std::string who() const
    {
        std::string text = "rank " + std::to_string(m_id.globalRank) + " of " + std::to_string(m_id.worldSize);
        if (m_id.name != "world")
            text += " (group " + m_id.name + ", rank " + std::to_string(m_rank) + " of " + std::to_string(m_size) + ")";
        return text;
    }

    std::unique_ptr<CommWork> pointToPoint(const char* op, const torch::Tensor& tensor, int peer, int tag, bool send)
    {
        if (peer < 0 || peer >= m_size || peer == m_rank)
            throw CommError(who() + ": " + op + " with rank " + std::to_string(peer) + " of a group of " +
                            std::to_string(m_size) + " (must be another member)");
        TORCH_CHECK(tensor.is_contiguous(), op, ": the tensor must be contiguous");
        const std::string what = std::string(op) + (send ? " to" : " from") + " rank " + std::to_string(peer);
        std::vector<at::Tensor> tensors{tensor};
        c10::intrusive_ptr<c10d::Work> work;
        guarded(what.c_str(), [&] { work = send ? m_group->send(tensors, peer, tag) : m_group->recv(tensors, peer, tag); });
        return std::make_unique<DeferredWork>([this, work, tensors, what] { guarded(what.c_str(), [&] { work->wait(); }); });
    }

    template <class F>
    void guarded(const char* operation, F&& f)
    {
        try {
            f();
        } catch (const CommError&) {
            throw;
        } catch (const c10::Error& e) {
            throw CommError(who() + ": " + m_id.backend + " " + operation + " failed: " + e.what_without_backtrace());
        } catch (const std::exception& e) {
            throw CommError(who() + ": " + m_id.backend + " " + operation + " failed: " + e.what());
        }
    }

    c10::intrusive_ptr<c10d::Store> m_store;  // kept alive: rank 0 hosts the TCPStore server
    c10::intrusive_ptr<Backend> m_group;
    int m_rank;
    int m_size;
    Identity m_id;
    Factory m_factory;
};

c10::intrusive_ptr<c10d::Store> rendezvous(const RankEnvironment& env, std::chrono::milliseconds timeout)
{
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.masterPort);
    options.isServer = env.rank == 0;
    options.numWorkers = static_cast<std::size_t>(env.worldSize);
    options.waitWorkers = true;  // rank 0 returns once every rank has connected, or throws at timeout
    options.timeout = timeout;
    return c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
}
#endif

#if WB_WITH_GLOO
std::shared_ptr<::gloo::transport::Device> glooDevice(const RankEnvironment& env)
{
    // GLOO_SOCKET_IFNAME as torch.distributed reads it; on loopback (--nproc-per-node) bind
    // 127.0.0.1 so a machine whose hostname does not resolve still works.
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
        return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    if (env.masterAddr == "127.0.0.1" || env.masterAddr == "localhost")
        return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

}  // namespace

RankEnvironment RankEnvironment::fromEnvironment()
{
    RankEnvironment env;
    env.worldSize = intFromEnvironment("WORLD_SIZE", 1);
    env.rank = intFromEnvironment("RANK", 0);
    env.localRank = intFromEnvironment("LOCAL_RANK", env.rank);
    env.localWorldSize = intFromEnvironment("LOCAL_WORLD_SIZE", env.worldSize);
    if (env.worldSize < 1)
        throw CommError("WORLD_SIZE=" + std::to_string(env.worldSize) + " must be at least 1");
    if (env.rank < 0 || env.rank >= env.worldSize)
        throw CommError("RANK=" + std::to_string(env.rank) + " is outside [0, WORLD_SIZE=" + std::to_string(env.worldSize) + ")");
    if (env.worldSize > 1) {
        const char* addr = std::getenv("MASTER_ADDR");
        if (!addr || !*addr || !std::getenv("MASTER_PORT"))
            throw CommError("WORLD_SIZE=" + std::to_string(env.worldSize) +
                            " needs MASTER_ADDR and MASTER_PORT (use torchrun, or moe-train --nproc-per-node N)");
        env.masterAddr = addr;
        env.masterPort = intFromEnvironment("MASTER_PORT", 29500);
        if (env.masterPort <= 0 || env.masterPort > 65535)
            throw CommError("MASTER_PORT=" + std::to_string(env.masterPort) + " is not a TCP port");
    }
    return env;
}

std::chrono::milliseconds commTimeoutFromEnvironment()
{
    const char* v = std::getenv("WB_COMM_TIMEOUT_S");
    const double seconds = v && *v ? std::atof(v) : 300.0;
    return std::chrono::milliseconds(static_cast<int64_t>(1000.0 * (seconds > 0 ? seconds : 300.0)));
}

std::unique_ptr<ProcessGroup> makeSingleProcessGroup()
{
    return std::make_unique<SingleProcessGroup>();
}

std::vector<int64_t> ProcessGroup::exchangeCounts(const std::vector<int64_t>& counts, torch::Device device)
{
    const int n = size();
    TORCH_CHECK(n > 0 && counts.size() % static_cast<size_t>(n) == 0, "exchangeCounts: counts.size() must be a multiple of size()");
    if (n == 1)
        return counts;
    const int64_t m = static_cast<int64_t>(counts.size()) / n;
    auto send = torch::tensor(counts, torch::kInt64).to(device);  // 1-D: split sizes count elements
    auto recv = torch::empty_like(send);
    const std::vector<int64_t> equal(static_cast<size_t>(n), m);
    allToAll(recv, send, equal, equal);
    recv = recv.cpu().contiguous();
    return {recv.data_ptr<int64_t>(), recv.data_ptr<int64_t>() + recv.numel()};
}

bool multiRankSupported(torch::Device device)
{
#if WB_WITH_GLOO
    if (device.is_cpu())
        return true;
#endif
#if WB_WITH_C10D_NCCL
    if (device.is_cuda())
        return true;
#endif
    (void)device;
    return false;
}

std::unique_ptr<ProcessGroup> createProcessGroup(const RankEnvironment& env, torch::Device device,
                                                 std::chrono::milliseconds timeout)
{
    if (env.worldSize == 1)
        return makeSingleProcessGroup();
    const std::string who = "rank " + std::to_string(env.rank) + " of " + std::to_string(env.worldSize);
    if (!multiRankSupported(device))
        throw CommError(who + ": this moe-train was built without a c10d backend for " + device.str() +
                        " (needs Gloo headers for CPU, NCCL for CUDA; see docs/parallel.md)");
#if WB_WITH_GLOO || WB_WITH_C10D_NCCL
    try {
        auto store = rendezvous(env, timeout);
#if WB_WITH_C10D_NCCL
        if (device.is_cuda()) {
            using Group = C10dProcessGroup<c10d::ProcessGroupNCCL>;
            // Sub-groups get their own ProcessGroupNCCL over a PrefixStore (communicators are
            // created lazily at their first collective, on the current device).
            typename Group::Factory make = [timeout](const c10::intrusive_ptr<c10d::Store>& s, int rank, int size) {
                auto options = c10d::ProcessGroupNCCL::Options::create();
                options->timeout = timeout;
                return c10::make_intrusive<c10d::ProcessGroupNCCL>(s, rank, size, options);
            };
            auto group = make(store, env.rank, env.worldSize);
            return std::make_unique<Group>(store, group, env.rank, env.worldSize,
                                           typename Group::Identity{"nccl", "world", env.rank, env.worldSize, {}, true}, make);
        }
#endif
#if WB_WITH_GLOO
        using Group = C10dProcessGroup<c10d::ProcessGroupGloo>;
        auto glooDev = glooDevice(env);
        typename Group::Factory make = [timeout, glooDev](const c10::intrusive_ptr<c10d::Store>& s, int rank, int size) {
            auto options = c10d::ProcessGroupGloo::Options::create(timeout);
            options->devices.push_back(glooDev);
            return c10::make_intrusive<c10d::ProcessGroupGloo>(s, rank, size, options);
        };
        auto group = make(store, env.rank, env.worldSize);
        return std::make_unique<Group>(store, group, env.rank, env.worldSize,
                                       typename Group::Identity{"gloo", "world", env.rank, env.worldSize, {}, false}, make);
#endif
    } catch (const CommError&) {
        throw;
    } catch (const c10::Error& e) {
        throw CommError(who + ": rendezvous at " + env.masterAddr + ":" + std::to_string(env.masterPort) +
                        " failed: " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        throw CommError(who + ": rendezvous at " + env.masterAddr + ":" + std::to_string(env.masterPort) +
                        " failed: " + e.what());
    }
#endif
    throw CommError(who + ": no process group backend for " + device.str());
}

}  // namespace wb::rt
