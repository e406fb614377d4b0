// Appends metrics records (core/metrics_schema.h) to DIR/metrics.jsonl, one line each, flushed
// per line so a watcher tailing the file sees every step. Training thread only.
#pragma once

#include "core/metrics_schema.h"
#include "core/result.h"

#include <cstdio>
#include <memory>
#include <string>

namespace wb::rt {

class MetricsWriter {
public:
    static core::Result<std::unique_ptr<MetricsWriter>> open(const std::string& path);
    ~MetricsWriter();

    void write(const core::MetricsRecord& record);
    /// Shorthand for an event line stamped now.
    void event(const std::string& level, const std::string& msg, std::optional<int64_t> step = {});
    bool wasEmpty() const { return m_wasEmpty; }  ///< the file had no bytes when opened (not a resume)

private:
    explicit MetricsWriter(std::FILE* file, bool wasEmpty) : m_file(file), m_wasEmpty(wasEmpty) {}
    std::FILE* m_file;
    bool m_wasEmpty;
};

/// Unix time in seconds (system clock), for record stamps.
double unixNow();

}  // namespace wb::rt
