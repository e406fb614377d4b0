// How moe-train's host heap returns memory to the kernel (glibc malloc). Any thread; call once,
// first thing in main.
#pragma once

#include <cstddef>
#include <string>

namespace wb::rt {

struct HostAllocatorSettings {
    size_t mmapThreshold = 0;  ///< blocks at least this large get their own mapping
    size_t trimThreshold = 0;  ///< free heap top kept before it is given back
    size_t topPad = 0;         ///< extra heap asked for on each growth
};

/// glibc's defaults give freed autograd buffers back to the kernel after every operator: a
/// CPU rank's backward then spends most of its time in page faults re-zeroing the same pages
/// (measured on the tests' model: 480 ms of a 570 ms step; 96 of a 152 ms step with these settings). Keeps
/// up to 256 MiB of free heap per process instead, and maps only blocks of 32 MiB and more.
/// An environment that sets MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or MALLOC_TOP_PAD_
/// keeps its own choice. Returns what was applied ("" where nothing was: not glibc).
std::string tuneHostAllocator();

/// The values tuneHostAllocator applies.
HostAllocatorSettings hostAllocatorSettings();

}  // namespace wb::rt
