// moe-train --nproc-per-node N: starts N local ranks (this executable again, with the torchrun
// environment set), waits for them and propagates failure. Main thread of the parent only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace wb::rt {

struct LaunchOptions {
    int numRanks = 1;
    std::string executable;           ///< the binary to start for each rank (normally /proc/self/exe)
    std::vector<std::string> args;    ///< argv[1..] of each rank (without --nproc-per-node)
    std::string runDir;               ///< rank k's stdout and stderr go to runDir/rank<k>.log
    std::chrono::milliseconds commTimeout{300000};  ///< passed to ranks as WB_COMM_TIMEOUT_S
    /// Several nodes (torchrun's --nnodes/--node-rank): this node's ranks are
    /// nodeRank * numRanks + k of numNodes * numRanks, rendezvous at masterAddr:masterPort (node
    /// 0 hosts it). One node: 127.0.0.1 and a free port.
    int numNodes = 1;
    int nodeRank = 0;
    std::string masterAddr;  ///< required when numNodes > 1
    int masterPort = 0;      ///< required when numNodes > 1
};

/// Starts the ranks (one node: MASTER_ADDR 127.0.0.1, a free MASTER_PORT), forwards SIGTERM/SIGINT to them,
/// and returns 0, or the exit code of the cause: the first rank that failed with something other
/// than comm_error (4) and was not ended by this launcher (1 if it died by a signal); 4 if every
/// failure was a comm_error.
/// Once one rank has failed the others get the comm timeout plus a grace period to exit (they
/// should see the broken connection and exit 4); after that they are terminated, then killed.
/// When rank 0 was killed, or exited with another code than the cause's, rewrites
/// runDir/status.json naming the causing rank. On a node without global rank 0 (which writes
/// status.json), writes it at the end: finished, or the cause.
int launchLocalRanks(const LaunchOptions& options);

}  // namespace wb::rt
