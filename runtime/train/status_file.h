// DIR/status.json, rewritten atomically (tmp + rename) so a watcher never reads half a file:
// {"status", "exit_code", "message", "step", "pid", "updated"}. Training thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace wb::rt {

class StatusFile {
public:
    explicit StatusFile(std::string runDir);

    /// Writes the file now. `exitCode` null while running. Returns false on I/O failure.
    bool write(const std::string& status, std::optional<int> exitCode, const std::string& message,
               int64_t step);
    /// Writes "running" if at least `minSeconds` passed since the last write.
    void heartbeat(int64_t step, double minSeconds = 2.0);

    /// Writes DIR/pid (this process id).
    bool writePid();

private:
    std::string m_runDir;
    double m_lastWrite = 0.0;
};

}  // namespace wb::rt
