#pragma once
// Reading a small text input the user names (a config, a plan, a Bridge file, an answers file):
// only a regular file, and only up to a stated size. A FIFO would block the command forever, a
// device such as /dev/zero would fill memory, a directory is not "invalid JSON": each gets an
// error that names the path, the reason and the fix instead.
#include "core/result.h"

#include <cstdint>
#include <string>

namespace wb::core {

/// 16 MiB: a generous bound for any config, plan or Bridge file (the largest ships at ~20 KiB).
inline constexpr std::uint64_t kMaxTextFileBytes = 16ull << 20;

/// The whole file, or NotFound (missing, unreadable) / InvalidArgument (not a regular file, or
/// larger than `maxBytes`). `what` names the file in the message ("config file", "answers file").
Result<std::string> readTextFile(const std::string& path, const std::string& what,
                                 std::uint64_t maxBytes = kMaxTextFileBytes);

}  // namespace wb::core
