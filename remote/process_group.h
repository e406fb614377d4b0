// Linux process-group helpers for the local target: who is still in a group, signal it, wait for
// it to empty. Reads /proc. Any thread (no shared state).
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace wb::remote {

struct GroupMember {
    pid_t pid = 0;
    char state = '?';   ///< /proc/PID/stat state letter; 'Z' = zombie (dead, not yet reaped)
    std::string comm;   ///< executable name, for messages
};

/// Every process whose process group is `pgid`, zombies included.
std::vector<GroupMember> groupMembers(pid_t pgid);

/// Members that still run (not zombies). A zombie has exited; it only waits for its parent.
std::vector<GroupMember> liveGroupMembers(pid_t pgid);

/// True while any non-zombie process is in the group. Reaps `pgid` first if it is our own child,
/// so a child we started and that exited does not count as alive.
bool groupAlive(pid_t pgid);

/// True while process `pid` runs (exists and is not a zombie).
bool processAlive(pid_t pid);

/// Polls until the group has no live member or `timeout` passes. Returns true when it emptied.
bool waitGroupGone(pid_t pgid, std::chrono::milliseconds timeout);

/// "1234 (moe-train), 1240 (sleep)"
std::string describeMembers(const std::vector<GroupMember>& members);

}  // namespace wb::remote
