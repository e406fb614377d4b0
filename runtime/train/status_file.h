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
    /// Writes "running" if at least `minSeconds` passed since the last write. False when that
    /// write failed (lastError() says why).
    bool heartbeat(int64_t step, double minSeconds = 2.0);
    /// "cannot write PATH: <strerror> (errno N)" of the last failed write.
    const std::string& lastError() const { return m_lastError; }

    /// Writes DIR/pid (this process id).
    bool writePid();

private:
    bool writeAtomically(const std::string& path, const std::string& text);
    std::string m_runDir;
    double m_lastWrite = 0.0;
    std::string m_lastError;
};

}  // namespace wb::rt
