// Appends metrics records (core/metrics_schema.h) to DIR/metrics.jsonl, one line each, flushed
// per line so a watcher tailing the file sees every step. A line that cannot be written (disk
// full, I/O error) throws MetricsWriteError: a run whose record is lost must stop, not report
// success (the trainer exits 1 naming the file and the error). Training thread only.
#pragma once

#include "core/metrics_schema.h"
#include "core/result.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace wb::rt {

/// A line of metrics.jsonl could not be written: "cannot write PATH: <strerror> (errno N)".
class MetricsWriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class MetricsWriter {
public:
    static core::Result<std::unique_ptr<MetricsWriter>> open(const std::string& path);
    ~MetricsWriter();

    /// Appends one line and flushes it; throws MetricsWriteError when it does not reach the file.
    void write(const core::MetricsRecord& record);
    /// Shorthand for an event line stamped now.
    void event(const std::string& level, const std::string& msg, std::optional<int64_t> step = {});
    bool wasEmpty() const { return m_wasEmpty; }  ///< the file had no bytes when opened (not a resume)

private:
    MetricsWriter(std::FILE* file, bool wasEmpty, std::string path)
        : m_file(file), m_wasEmpty(wasEmpty), m_path(std::move(path)) {}
    std::FILE* m_file;
    bool m_wasEmpty;
    std::string m_path;
};

/// Unix time in seconds (system clock), for record stamps.
double unixNow();

}  // namespace wb::rt
