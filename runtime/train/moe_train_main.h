// moe-train's command line (runtime/main.cpp calls it): parses the arguments, then validates,
// checks, dumps batches, spawns ranks or trains. Returns the process exit code (DESIGN.md §3.1).
#pragma once

namespace wb::rt {

int moeTrainMain(int argc, char** argv);

}  // namespace wb::rt
