// Fuzz target: a TensorBoard event file as Megatron-Bridge leaves it under logger.tensorboard_dir
// (core/bridge/tensorboard_events.h): TFRecord framing, CRC-32C, the Event protos.
// Properties: never crashes; what it returns is sorted with one point per step, and never more
// records than 16-byte frames fit; a file read with no warning, read twice in a row (a restart
// that replayed everything), gives the same points with every one of them counted as repeated.
#include "core/bridge/tensorboard_events.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace wb::core::bridge;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto once = readTensorBoardEventBytes(bytes, "events.out.tfevents.fuzz");
    if (!once)
        return 0;
    wb::fuzz::check(once->records * 16 <= static_cast<std::int64_t>(size), "more records than the bytes can frame");
    wb::fuzz::check(once->warnings.size() <= 1, "more than one warning for one file");
    std::int64_t points = 0;
    for (const auto& [tag, series] : once->byTag) {
        points += static_cast<std::int64_t>(series.size());
        for (size_t i = 1; i < series.size(); ++i)
            wb::fuzz::check(series[i - 1].step < series[i].step, "points not sorted by step, or a step twice", tag);
    }
    if (!once->warnings.empty())
        return 0;

    const std::string doubled = std::string(bytes) + std::string(bytes);
    auto twice = readTensorBoardEventBytes(doubled, "events.out.tfevents.fuzz");
    wb::fuzz::check(static_cast<bool>(twice), "a clean file read twice in a row fails",
                    twice ? std::string_view() : std::string_view(twice.error().message));
    wb::fuzz::check(twice->records == 2 * once->records && twice->nonScalarValues == 2 * once->nonScalarValues &&
                        twice->repeatedPoints == 2 * once->repeatedPoints + points && twice->warnings.empty(),
                    "a file read twice counts other records, values or repeats");
    wb::fuzz::check(twice->byTag.size() == once->byTag.size(), "a file read twice has other tags");
    for (const auto& [tag, series] : once->byTag) {
        const auto& again = twice->byTag.at(tag);
        wb::fuzz::check(again.size() == series.size(), "a file read twice has other points", tag);
        for (size_t i = 0; i < series.size(); ++i) {
            const bool same = again[i].step == series[i].step &&
                              (again[i].value == series[i].value || (again[i].value != again[i].value && series[i].value != series[i].value));
            wb::fuzz::check(same, "a file read twice has other values", tag);
        }
    }
    return 0;
}
