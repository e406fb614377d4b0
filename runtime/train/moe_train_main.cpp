// moe-train: the bundled trainer's command line (DESIGN.md §3.1). Main thread only. It lives in
// wb_runtime, not in main.cpp, so that it compiles inside one of the library's unity batches
// instead of parsing LibTorch's headers once more on its own (≈ 30 s of a cold build; docs/build.md).
//   moe-train --config run.json --run-dir DIR [--resume] [--nproc-per-node N] [--comm-timeout S]
//             [--nnodes M --node-rank K --master-addr ADDR --master-port PORT]   (with --nproc-per-node)
//   moe-train --validate run.json
//   moe-train --config run.json --dump-batches DIR [--dump-count N]
//   moe-train --config run.json --data-stats [--dump-count N]
//   moe-train --self-check
//   moe-train --version
#include "runtime/train/moe_train_main.h"

#include "core/run_config.h"
#include "core/text_file.h"
#include "runtime/data/batch_dump.h"
#include "runtime/parallel/process_group.h"
#include "runtime/parallel/rank_launcher.h"
#include "runtime/train/host_allocator.h"
#include "runtime/train/peak_probe.h"
#include "runtime/train/runtime_checks.h"
#include "runtime/train/trainer.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <csignal>
#include <cstdio>
#include <execinfo.h>
#include <unistd.h>
#include <ctime>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <iostream>
#include <thread>

namespace wb::rt {
namespace {

constexpr int kExitBadConfig = 2;

void onStopSignal(int)
{
    wb::rt::stopRequestedFlag().store(true);
}

constexpr const char* kUsageText =
    "usage: moe-train --config run.json --run-dir DIR [--resume] [--nproc-per-node N] [--comm-timeout S]\n"
    "                 [--nnodes M --node-rank K --master-addr ADDR --master-port PORT]\n"
    "       moe-train --validate run.json\n"
    "       moe-train --config run.json --dump-batches DIR [--dump-count N]\n"
    "       moe-train --config run.json --data-stats [--dump-count N]\n"
    "       moe-train --self-check\n"
    "       moe-train --version | --help\n";

int usage(const std::string& why)
{
    std::cerr << "moe-train: " << why << "\n" << kUsageText;
    return kExitBadConfig;
}

int validate(const std::string& path, int worldSize)
{
    auto text = wb::core::readTextFile(path, "config file");
    if (!text) {
        std::cerr << path << ": " << text.error().message << "\n";
        return kExitBadConfig;
    }
    wb::core::RunConfigParse parsed = wb::core::parseRunConfig(*text);
    auto problems = parsed.problems;
    // A file that is not a JSON object leaves a config of defaults: checking those would only add
    // problems the user's file does not have.
    const auto runtimeProblems =
        parsed.readable ? wb::rt::allProblems(parsed.config, worldSize) : std::vector<wb::core::ConfigProblem>{};
    for (auto p : runtimeProblems) {
        bool duplicate = false;
        for (const auto& q : problems)
            duplicate = duplicate || (q.path == p.path && q.message == p.message);
        if (!duplicate)
            problems.push_back(std::move(p));
    }
    if (problems.empty()) {
        std::cout << path << ": ok\n";
        return 0;
    }
    std::cerr << path << ": " << problems.size() << " problem(s):\n" << wb::core::formatProblems(problems) << "\n";
    return kExitBadConfig;
}

int selfCheck(const std::string& hostAllocator)
{
    nlohmann::json j;
    j["moe-train"] = WB_RUNTIME_VERSION;
    j["libtorch"] = TORCH_VERSION;
    j["cuda_built"] = static_cast<bool>(WB_WITH_CUDA);
    j["cuda_available"] = wb::rt::cudaUsable();
    j["cuda_devices"] = wb::rt::cudaUsable() ? static_cast<int>(torch::cuda::device_count()) : 0;
    j["nccl"] = nullptr;  // NCCL's version is on the meta line of CUDA runs
    j["c10d_gloo"] = static_cast<bool>(WB_WITH_GLOO);
    j["c10d_nccl"] = static_cast<bool>(WB_WITH_C10D_NCCL);
    j["intra_op_threads"] = torch::get_num_threads();
    j["hardware_threads"] = std::thread::hardware_concurrency();
    j["host_allocator"] = hostAllocator;  // glibc heap settings applied (host_allocator.h); "" where none
    j["devices"] = nlohmann::json::array({"cpu"});
    if (wb::rt::cudaUsable())
        for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i)
            j["devices"].push_back("cuda:" + std::to_string(i));
    // A few seconds on cuda:0: bf16 matmul and HBM copy beside the catalog numbers MFU uses.
    const wb::rt::PeakProbe probe = wb::rt::probePeakRates();
    if (probe.ran) {
        j["peak_probe"] = {{"device", probe.device},
                           {"bf16_matmul_tflops", probe.matmulTflops},
                           {"catalog_bf16_tflops", probe.catalogTflops},
                           {"matmul_of_catalog", probe.catalogTflops > 0 ? probe.matmulTflops / probe.catalogTflops : 0.0},
                           {"matmul_size", probe.matmulSize},
                           {"hbm_copy_gb_s", probe.copyGbPerS},
                           {"catalog_hbm_gb_s", probe.catalogGbPerS},
                           {"copy_of_catalog", probe.catalogGbPerS > 0 ? probe.copyGbPerS / probe.catalogGbPerS : 0.0},
                           {"copy_bytes", probe.copyBytes}};
    } else {
        j["peak_probe"] = {{"skipped", probe.why}};
    }
    std::cout << j.dump(2) << "\n";
    return 0;
}

// A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE) writes the signal and a backtrace to stderr — the
// rank's log under --nproc-per-node — before the default action ends the process, so a rank that
// dies at start-up still says where. Only async-signal-safe calls (write, backtrace_symbols_fd).
void onCrashSignal(int sig)
{
    char header[96];
    const int n = std::snprintf(header, sizeof header, "moe-train: fatal signal %d (%s); backtrace:\n", sig,
                                sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGFPE");
    if (n > 0)
        (void)!::write(STDERR_FILENO, header, static_cast<size_t>(n));
    void* frames[64];
    const int depth = ::backtrace(frames, 64);
    ::backtrace_symbols_fd(frames, depth, STDERR_FILENO);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

int train(const std::string& configPath, const std::string& runDir, bool resume)
{
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE})
        std::signal(sig, onCrashSignal);
    auto loaded = wb::core::loadRunConfig(configPath);
    if (!loaded) {
        // Still leave a status.json so the watcher sees why the run never started.
        std::cerr << "moe-train: " << loaded.error().toString() << "\n";
        std::filesystem::create_directories(runDir);
        std::ofstream status(runDir + "/status.json");
        nlohmann::json j{{"status", "bad_config"}, {"exit_code", kExitBadConfig},
                         {"message", loaded.error().toString()}, {"step", 0},
                         {"pid", static_cast<int64_t>(::getpid())}, {"updated", static_cast<double>(std::time(nullptr))}};
        status << j.dump(2) << "\n";
        return kExitBadConfig;
    }
    std::signal(SIGTERM, onStopSignal);
    std::signal(SIGINT, onStopSignal);
    return wb::rt::runTraining(*loaded, {runDir, resume});
}

}  // namespace

int moeTrainMain(int argc, char** argv)
{
    // A peer rank that dies closes its sockets; Gloo's next write to one would raise SIGPIPE and
    // end this rank with 141 instead of the collective error that exits 4 naming the operation.
    // (Python ignores SIGPIPE, which is why torchrun ranks never see this.) Ignored dispositions
    // survive exec, so the spawned ranks inherit it; a closed stdout then only loses the lines.
    std::signal(SIGPIPE, SIG_IGN);
    const std::string hostAllocator = wb::rt::tuneHostAllocator();
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string config, runDir, validatePath, nprocText, timeoutText, dumpDir, dumpCountText;
    std::string nnodesText, nodeRankText, masterAddr, masterPortText;  // multi-node, torchrun's names
    bool resume = false, dataStats = false;
    std::vector<std::string> rankArgs;  // what each spawned rank gets: everything but --nproc-per-node
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= args.size())
                return false;
            out = args[++i];
            return true;
        };
        if (a == "--version") {
            std::cout << "moe-train " << WB_RUNTIME_VERSION << " (LibTorch " << TORCH_VERSION
                      << (WB_WITH_CUDA ? ", CUDA" : ", CPU only") << ")\n";
            return 0;
        }
        if (a == "--help" || a == "-h") {
            std::cout << "moe-train: the MoE-VLM Workbench's bundled training runtime (LibTorch + c10d: NCCL on GPUs,\n"
                         "Gloo on CPUs). Trains the run config's model on its data, writing DIR/metrics.jsonl and\n"
                         "DIR/status.json; exit 0 finished, 2 bad config, 3 out of memory, 4 communication failure,\n"
                         "5 stopped by a signal (after a checkpoint), 1 anything else. Distributed runs take the\n"
                         "torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), or\n"
                         "--nproc-per-node N spawns the local ranks.\n\n"
                      << kUsageText;
            return 0;
        }
        if (a == "--self-check")
            return selfCheck(hostAllocator);
        const size_t first = i;
        if (a == "--resume")
            resume = true;
        else if (a == "--data-stats")
            dataStats = true;
        else if ((a == "--config" && !value(config)) || (a == "--run-dir" && !value(runDir)) ||
                 (a == "--validate" && !value(validatePath)) || (a == "--nproc-per-node" && !value(nprocText)) ||
                 (a == "--comm-timeout" && !value(timeoutText)) || (a == "--dump-batches" && !value(dumpDir)) ||
                 (a == "--dump-count" && !value(dumpCountText)) || (a == "--nnodes" && !value(nnodesText)) ||
                 (a == "--node-rank" && !value(nodeRankText)) || (a == "--master-addr" && !value(masterAddr)) ||
                 (a == "--master-port" && !value(masterPortText)))
            return usage(a + " needs a value");
        else if (a != "--config" && a != "--run-dir" && a != "--validate" && a != "--nproc-per-node" &&
                 a != "--comm-timeout" && a != "--dump-batches" && a != "--dump-count" && a != "--nnodes" &&
                 a != "--node-rank" && a != "--master-addr" && a != "--master-port")
            return usage("unknown argument " + a);
        if (a != "--nproc-per-node" && a != "--comm-timeout" && a != "--nnodes" && a != "--node-rank" &&
            a != "--master-addr" && a != "--master-port")
            rankArgs.insert(rankArgs.end(), args.begin() + static_cast<std::ptrdiff_t>(first),
                            args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    int nproc = 0;
    if (!nprocText.empty()) {
        nproc = std::atoi(nprocText.c_str());
        if (nproc < 1 || nproc > 1024)
            return usage("--nproc-per-node needs a rank count from 1 to 1024, not '" + nprocText + "'");
        if (std::getenv("WORLD_SIZE"))
            return usage("--nproc-per-node starts its own ranks: unset WORLD_SIZE/RANK (or use torchrun without it)");
    }
    int nnodes = 1, nodeRank = 0, masterPort = 0;
    if (!nnodesText.empty() || !nodeRankText.empty() || !masterAddr.empty() || !masterPortText.empty()) {
        if (nproc == 0)
            return usage("--nnodes, --node-rank, --master-addr and --master-port go with --nproc-per-node N");
        nnodes = nnodesText.empty() ? 1 : std::atoi(nnodesText.c_str());
        nodeRank = nodeRankText.empty() ? -1 : std::atoi(nodeRankText.c_str());
        masterPort = std::atoi(masterPortText.c_str());
        if (nnodes < 1 || nnodes > 4096)
            return usage("--nnodes needs a node count from 1 to 4096, not '" + nnodesText + "'");
        if (nodeRank < 0 || nodeRank >= nnodes)
            return usage("--node-rank needs a number from 0 to nnodes-1, not '" + nodeRankText + "'");
        if (nnodes > 1 && (masterAddr.empty() || masterPort < 1 || masterPort > 65535))
            return usage("several nodes need --master-addr (node 0's address) and --master-port (1-65535)");
    }
    if (!timeoutText.empty()) {
        if (std::atof(timeoutText.c_str()) <= 0)
            return usage("--comm-timeout needs a positive number of seconds, not '" + timeoutText + "'");
        ::setenv("WB_COMM_TIMEOUT_S", timeoutText.c_str(), 1);
    }
    try {
        if (!validatePath.empty())
            return validate(validatePath, nproc > 0 ? nproc * nnodes : wb::rt::worldSizeFromEnvironment());
        if (dataStats)  // the packed workload of the config's data (batch_dump.h)
            return wb::rt::runDataStatsCommand(config, dumpCountText);
        if (!dumpDir.empty() || !dumpCountText.empty())  // the loader's micro-batches to files (batch_dump.h)
            return wb::rt::runBatchDumpCommand(config, dumpDir, dumpCountText);
        if (config.empty() || runDir.empty())
            return usage("--config and --run-dir are required to train");
        if (nproc > 0) {
            // Each rank is this binary again with the torchrun environment set (rank_launcher).
            wb::rt::LaunchOptions launch;
            launch.numRanks = nproc;
            launch.executable = std::filesystem::read_symlink("/proc/self/exe").string();
            launch.args = rankArgs;
            launch.runDir = runDir;
            launch.commTimeout = wb::rt::commTimeoutFromEnvironment();
            launch.numNodes = nnodes;
            launch.nodeRank = nodeRank;
            launch.masterAddr = masterAddr;
            launch.masterPort = masterPort;
            return wb::rt::launchLocalRanks(launch);
        }
        return train(config, runDir, resume);
    } catch (const c10::Error& e) {
        std::cerr << "moe-train: LibTorch error: " << e.what_without_backtrace() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "moe-train: error: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace wb::rt
