// Forked ranks of the runtime's collective tests: one rank's torchrun-style environment on
// 127.0.0.1, and a Gloo group built from it around a test body. For tests that link wb_runtime
// (check.h stays free of LibTorch for the data tests). One rank per process.
#pragma once

#include "check.h"

#include "runtime/parallel/process_group.h"

#include <chrono>
#include <functional>
#include <iostream>

namespace wb::test {

/// Rank `rank` of `ranks` on one node, master 127.0.0.1:`port`.
inline rt::RankEnvironment loopbackRank(int rank, int ranks, int port)
{
    rt::RankEnvironment env;
    env.rank = rank;
    env.worldSize = ranks;
    env.localRank = rank;
    env.localWorldSize = ranks;
    env.masterPort = port;
    return env;
}

/// Runs body(world) on this rank's Gloo group: the child's exit code, 0 when no check failed and
/// nothing was thrown (an exception is printed with the rank and gives 1).
inline int runOnLoopbackGroup(int rank, int ranks, int port, std::chrono::seconds timeout,
                              const std::function<void(rt::ProcessGroup&)>& body)
{
    try {
        auto world = rt::createProcessGroup(loopbackRank(rank, ranks, port), torch::kCPU, timeout);
        body(*world);
        world->barrier();
    } catch (const std::exception& e) {
        std::cerr << "rank " << rank << ": " << e.what() << std::endl;
        return 1;
    }
    return failureCount() == 0 ? 0 : 1;
}

}  // namespace wb::test
