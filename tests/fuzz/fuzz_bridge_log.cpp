// Fuzz target: the Megatron log reader (core/bridge/bridge_log.h) that `import --bridge` and the
// follower run over a job's output — bytes from a cluster, of any shape.
// Properties: never throws or crashes; without atEnd it consumes exactly the bytes up to the last
// newline; fed in pieces with its state carried through JSON (as the follower stores it between
// polls) it finds the same iterations and memory reports and the same counts as in one read; a
// stored step is finite in its time and never counts negative tokens.
#include "core/bridge/bridge_log.h"
#include "tests/fuzz/fuzz_check.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace wb::core::bridge;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    LogState whole;
    const LogChunk all = parseLogChunk(bytes, whole, /*atEnd=*/false);
    const size_t lastNewline = bytes.rfind('\n');
    const int64_t complete = lastNewline == std::string_view::npos ? 0 : static_cast<int64_t>(lastNewline + 1);
    wb::fuzz::check(all.consumedBytes == complete, "the reader did not consume exactly the complete lines");

    // In pieces, the state through JSON between them.
    std::string stateJson = toJson(LogState{});
    int64_t at = 0, line = 1;
    size_t iterations = 0, memory = 0;
    const size_t step = size % 97 + 16;  // pieces of 16..112 bytes: a poll reads far more, but lines straddle them
    int64_t longer = 0;
    while (at < complete) {
        const int64_t take = std::min<int64_t>(complete - at, static_cast<int64_t>(step) + longer);
        LogState state = logStateFromJson(stateJson);
        const LogChunk c = parseLogChunk(bytes.substr(static_cast<size_t>(at), static_cast<size_t>(take)), state, false, line);
        for (char ch : bytes.substr(static_cast<size_t>(at), static_cast<size_t>(c.consumedBytes)))
            line += ch == '\n';
        at += c.consumedBytes;
        longer = c.consumedBytes == 0 ? 2 * longer + static_cast<int64_t>(step) : 0;
        iterations += c.iterations.size();
        memory += c.memory.size();
        stateJson = toJson(state);
    }
    const LogState pieces = logStateFromJson(stateJson);
    wb::fuzz::check(iterations == all.iterations.size() && memory == all.memory.size(),
                    "fed in pieces, the reader found other records");
    wb::fuzz::check(pieces.counts.lines == whole.counts.lines &&
                        pieces.counts.iterationLines == whole.counts.iterationLines &&
                        pieces.counts.repeatedIterations == whole.counts.repeatedIterations,
                    "fed in pieces, the reader counted other lines");

    // Finished: everything consumed; the step records are sane for the store.
    LogState finished;
    const LogChunk last = parseLogChunk(bytes, finished, /*atEnd=*/true);
    wb::fuzz::check(last.consumedBytes == static_cast<int64_t>(size), "at the end every byte is consumed");
    for (const IterationRecord& it : last.iterations) {
        const wb::core::StepRecord s = toStepRecord(it, {8, 4096, 0, 989.0});
        wb::fuzz::check(s.effectiveTokens >= 0 || it.globalBatchSize.value_or(0) < 0, "negative token slots");
        (void)s;
    }
    (void)describeCounts(finished.counts);
    return 0;
}
