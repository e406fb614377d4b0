// Fuzz target: Megatron-Bridge overrides read as a dotlist file (overrides.dotlist), linted and predicted as
// `lint` and `predict` do (tests/fuzz/fuzz_layout_file.h says what is checked).
// A perf launcher command (setup_experiment.py -tp 2 ...) is a dotlist with flags: the seeds hold both.
#include "tests/fuzz/fuzz_layout_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    return wb::fuzz::predictLayoutText(data, size, "overrides.dotlist");
}
