// Fuzz target: the runtime-config parser and validator (core/run_config.h) — what `lint`,
// `launch --config`, `generate --from` and `moe-train --validate` read from a user's file.
// Properties: never throws or crashes; a readable config's canonical JSON parses back to the same
// canonical JSON (parse(toJson(c)) == c, the header's contract); the layout checks take any world
// size without dividing by zero.
#include "core/run_config.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace wb::core;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const RunConfigParse parsed = parseRunConfig(text);
    (void)formatProblems(parsed.problems);
    if (!parsed.readable)
        return 0;

    const std::string canonical = runConfigToJson(parsed.config);
    const RunConfigParse again = parseRunConfig(canonical);
    wb::fuzz::check(again.readable, "the canonical JSON of a readable config is not readable", canonical);
    wb::fuzz::check(runConfigToJson(again.config) == canonical,
                    "parse(toJson(config)) differs from config", canonical);
    (void)runConfigHash(parsed.config);

    for (int world : {1, 2, 3, 8, 64, 0, -1, 1 << 30}) {
        (void)validateLayout(parsed.config, world);
        (void)dataParallelSize(parsed.config, world);
    }
    return 0;
}
