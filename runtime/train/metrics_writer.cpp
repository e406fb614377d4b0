// Metrics writer (see metrics_writer.h).
#include "runtime/train/metrics_writer.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace wb::rt {

double unixNow()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

core::Result<std::unique_ptr<MetricsWriter>> MetricsWriter::open(const std::string& path)
{
    std::error_code ec;
    const bool empty = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
    std::FILE* file = std::fopen(path.c_str(), "ab");
    if (!file)
        return core::makeError(core::ErrorCode::IoError, "cannot open the metrics file for appending", path);
    return std::unique_ptr<MetricsWriter>(new MetricsWriter(file, empty, path));
}

MetricsWriter::~MetricsWriter()
{
    std::fclose(m_file);
}

void MetricsWriter::write(const core::MetricsRecord& record)
{
    const std::string line = core::toJsonLine(record) + "\n";
    errno = 0;
    const size_t written = std::fwrite(line.data(), 1, line.size(), m_file);
    if (written != line.size() || std::fflush(m_file) != 0) {
        const int err = errno;
        std::clearerr(m_file);
        throw MetricsWriteError("cannot write " + m_path + ": " + (err ? std::strerror(err) : "short write") +
                                " (errno " + std::to_string(err) + ")");
    }
}

void MetricsWriter::event(const std::string& level, const std::string& msg, std::optional<int64_t> step)
{
    core::EventRecord e;
    e.time = unixNow();
    e.level = level;
    e.msg = msg;
    e.step = step;
    write(e);
}

}  // namespace wb::rt
