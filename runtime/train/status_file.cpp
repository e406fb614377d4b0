// status.json writer (see status_file.h).
#include "runtime/train/status_file.h"

#include "runtime/train/metrics_writer.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace wb::rt {

StatusFile::StatusFile(std::string runDir) : m_runDir(std::move(runDir)) {}

bool StatusFile::writeAtomically(const std::string& path, const std::string& text)
{
    const std::string tmp = path + ".tmp";
    auto failed = [&](const std::string& file, int err) {
        m_lastError = "cannot write " + file + ": " + (err ? std::strerror(err) : "I/O error") + " (errno " +
                      std::to_string(err) + ")";
        return false;
    };
    std::FILE* out = std::fopen(tmp.c_str(), "wb");
    if (!out)
        return failed(tmp, errno);
    errno = 0;
    const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
    const int err = errno;
    if (std::fclose(out) != 0 || !written)
        return failed(tmp, written ? errno : err);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec)
        return failed(path, ec.value());
    return true;
}

bool StatusFile::write(const std::string& status, std::optional<int> exitCode,
                       const std::string& message, int64_t step)
{
    nlohmann::json j;
    j["status"] = status;
    j["exit_code"] = exitCode ? nlohmann::json(*exitCode) : nlohmann::json(nullptr);
    j["message"] = message;
    j["step"] = step;
    j["pid"] = static_cast<int64_t>(::getpid());
    m_lastWrite = unixNow();
    j["updated"] = m_lastWrite;
    return writeAtomically(m_runDir + "/status.json", j.dump(2) + "\n");
}

bool StatusFile::heartbeat(int64_t step, double minSeconds)
{
    return unixNow() - m_lastWrite < minSeconds || write("running", std::nullopt, "training", step);
}

bool StatusFile::writePid()
{
    // The process GROUP: what the workbench signals and watches (DESIGN.md §3.3). For one rank
    // started detached it equals getpid(); under `--nproc-per-node` rank 0 is a child of the
    // launcher, whose group holds every rank.
    return writeAtomically(m_runDir + "/pid", std::to_string(::getpgrp()) + "\n");
}

}  // namespace wb::rt
