// The LibTorch unit suites of the runtime in one executable: `test_runtime_suites NAME [ARGS...]`
// runs one suite (its own process per ctest entry, as before). One executable compiled in unity
// batches parses LibTorch's headers once per batch instead of once per suite, and links once
// (docs/build.md: each suite alone took 25–40 s to compile on 2 cores). Each suite lives in its
// own namespace wb::test::suite_NAME and returns its exit code from run(argc, argv), where
// argv[0] is the suite's name and argv[1...] its arguments.
#include "runtime/train/host_allocator.h"

#include <cstring>
#include <iostream>

namespace wb::test::suite_model { int run(int argc, char** argv); }
namespace wb::test::suite_router { int run(int argc, char** argv); }
namespace wb::test::suite_recompute { int run(int argc, char** argv); }
namespace wb::test::suite_state { int run(int argc, char** argv); }
namespace wb::test::suite_optimizer { int run(int argc, char** argv); }
namespace wb::test::suite_collectives { int run(int argc, char** argv); }
namespace wb::test::suite_fsdp { int run(int argc, char** argv); }
namespace wb::test::suite_tensor_parallel { int run(int argc, char** argv); }

int main(int argc, char** argv)
{
    wb::rt::tuneHostAllocator();  // as moe-train does: the suites train in this process
    struct Suite {
        const char* name;
        int (*run)(int, char**);
    };
    static const Suite suites[] = {
        {"model", &wb::test::suite_model::run},
        {"router", &wb::test::suite_router::run},
        {"recompute", &wb::test::suite_recompute::run},
        {"state", &wb::test::suite_state::run},
        {"optimizer", &wb::test::suite_optimizer::run},
        {"collectives", &wb::test::suite_collectives::run},
        {"fsdp", &wb::test::suite_fsdp::run},
        {"tensor_parallel", &wb::test::suite_tensor_parallel::run},
    };
    if (argc >= 2)
        for (const Suite& s : suites)
            if (std::strcmp(argv[1], s.name) == 0)
                return s.run(argc - 1, argv + 1);
    if (argc >= 2)
        std::cerr << "unknown suite: " << argv[1] << "\n";
    std::cerr << "usage: test_runtime_suites SUITE [ARGS...]; suites:";
    for (const Suite& s : suites)
        std::cerr << ' ' << s.name;
    std::cerr << '\n';
    return 2;
}
