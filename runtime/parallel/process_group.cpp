// c10d process groups behind wb::rt::ProcessGroup (see process_group.h). Main thread only.
//
// Backends are compiled in only where their headers exist: WB_WITH_GLOO (Debian's LibTorch 1.13 +
// libgloo-dev; the PyTorch wheel ships no Gloo headers) and WB_WITH_C10D_NCCL (CUDA builds with
// NCCL). Without either, only world size 1 runs, and asking for more is a CommError that says so.
#include "runtime/parallel/process_group.h"

#if WB_WITH_GLOO || WB_WITH_C10D_NCCL
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if WB_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if WB_WITH_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
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

class SingleProcessGroup final : public ProcessGroup {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string backend() const override { return "none"; }
    void allreduce(std::vector<torch::Tensor>&, ReduceOp) override {}
    void broadcast(std::vector<torch::Tensor>&, int) override {}
    void barrier() override {}
};

#if WB_WITH_GLOO || WB_WITH_C10D_NCCL
// Wraps one c10d backend. ProcessGroupGloo and ProcessGroupNCCL share the method names but not a
// base class across LibTorch versions, hence a template rather than a c10d base pointer.
template <class Backend>
class C10dProcessGroup final : public ProcessGroup {
public:
    C10dProcessGroup(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Backend> group, int rank, int size,
                     std::string name)
        : m_store(std::move(store)), m_group(std::move(group)), m_rank(rank), m_size(size), m_name(std::move(name))
    {
    }
    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string backend() const override { return m_name; }

    void allreduce(std::vector<torch::Tensor>& tensors, ReduceOp op) override
    {
        c10d::AllreduceOptions options;
        options.reduceOp = op == ReduceOp::Sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
        guarded("allreduce", [&] { m_group->allreduce(tensors, options)->wait(); });
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

private:
    template <class F>
    void guarded(const char* operation, F&& f)
    {
        try {
            f();
        } catch (const c10::Error& e) {
            throw CommError("rank " + std::to_string(m_rank) + " of " + std::to_string(m_size) + ": " + m_name + " " +
                            operation + " failed: " + e.what_without_backtrace());
        } catch (const std::exception& e) {
            throw CommError("rank " + std::to_string(m_rank) + " of " + std::to_string(m_size) + ": " + m_name + " " +
                            operation + " failed: " + e.what());
        }
    }

    c10::intrusive_ptr<c10d::Store> m_store;  // kept alive: rank 0 hosts the TCPStore server
    c10::intrusive_ptr<Backend> m_group;
    int m_rank;
    int m_size;
    std::string m_name;
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
            auto options = c10d::ProcessGroupNCCL::Options::create();
            options->timeout = timeout;
            auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.worldSize, options);
            return std::make_unique<C10dProcessGroup<c10d::ProcessGroupNCCL>>(store, group, env.rank, env.worldSize, "nccl");
        }
#endif
#if WB_WITH_GLOO
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        options->devices.push_back(glooDevice(env));
        auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.worldSize, options);
        return std::make_unique<C10dProcessGroup<c10d::ProcessGroupGloo>>(store, group, env.rank, env.worldSize, "gloo");
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
