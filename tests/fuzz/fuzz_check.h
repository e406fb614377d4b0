// What a fuzz target asserts beyond "no crash": a property of the code under test that must hold
// for every input (a round trip, an offset that only moves past whole lines). A failed check
// prints what broke and aborts, so libFuzzer saves the input as a crash and the replay test fails.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace wb::fuzz {

[[noreturn]] inline void fail(const char* what, std::string_view detail = {})
{
    std::fprintf(stderr, "fuzz check failed: %s\n", what);
    if (!detail.empty())
        std::fprintf(stderr, "  %.*s\n", static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()),
                     detail.data());
    std::abort();
}

inline void check(bool ok, const char* what, std::string_view detail = {})
{
    if (!ok)
        fail(what, detail);
}

}  // namespace wb::fuzz
