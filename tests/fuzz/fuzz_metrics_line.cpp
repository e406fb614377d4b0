// Fuzz target: the metrics-line parser (core/metrics_schema.h) that every follower and the store
// run over moe-train's metrics.jsonl, and the line reader that splits a stream into lines.
// Properties: never throws or crashes; a parsed record's serialisation parses back to a record
// with the same serialisation; the reader consumes exactly the bytes up to the last newline
// whether the stream arrives whole or byte by byte, with the same records and malformed count.
#include "core/metrics_schema.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace wb::core;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    if (auto record = parseMetricsLine(bytes)) {
        const std::string line = toJsonLine(*record);
        auto again = parseMetricsLine(line);
        wb::fuzz::check(static_cast<bool>(again), "the serialised record does not parse", line);
        wb::fuzz::check(toJsonLine(*again) == line, "parse(toJsonLine(record)) serialises differently", line);
    }

    MetricsLineReader whole;
    const MetricsLineReader::Chunk all = whole.feed(bytes);
    const size_t lastNewline = bytes.rfind('\n');
    const int64_t complete = lastNewline == std::string_view::npos ? 0 : static_cast<int64_t>(lastNewline + 1);
    wb::fuzz::check(all.consumedBytes == complete, "the reader did not consume exactly the complete lines");
    wb::fuzz::check(whole.pendingBytes() == static_cast<int64_t>(size) - complete,
                    "the reader holds back other bytes than the torn last line");

    // The same bytes in pieces (a follower's polls): same offset, same records, same count.
    MetricsLineReader pieces;
    size_t records = 0;
    int64_t malformed = 0;
    const size_t step = size % 7 + 1;
    for (size_t at = 0; at < size; at += step) {
        const MetricsLineReader::Chunk c = pieces.feed(bytes.substr(at, step));
        records += c.records.size();
        malformed += c.malformedLines;
    }
    wb::fuzz::check(pieces.consumedBytes() == complete, "fed in pieces, the reader consumed other bytes");
    wb::fuzz::check(records == all.records.size() && malformed == all.malformedLines,
                    "fed in pieces, the reader found other records");
    for (size_t i = 0; i < all.records.size(); ++i)
        (void)toJsonLine(all.records[i]);
    return 0;
}
