// Fuzz target: Megatron-Bridge overrides read as a yaml file (overrides.yaml), linted and predicted as
// `lint` and `predict` do (tests/fuzz/fuzz_layout_file.h says what is checked).
#include "tests/fuzz/fuzz_layout_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    return wb::fuzz::predictLayoutText(data, size, "overrides.yaml");
}
