// moe-train: the bundled training runtime. Its command line is train/moe_train_main.cpp, in
// wb_runtime.
#include "runtime/train/moe_train_main.h"

int main(int argc, char** argv)
{
    return wb::rt::moeTrainMain(argc, argv);
}
