// Provisioning (see provision.h). Thread: the owning target's worker thread.
//
// Why these choices:
// - The node is inspected by one sh script (one round trip) that prints key=value lines; all
//   judgement ("cmake 3.22 is too old", "no LibTorch") happens here, in parseNodeCheck, so the
//   rules are tested without a node and the messages live in one place.
// - Files go one by one over SFTP into src.partial-XXXXXX, renamed to src only when all arrived:
//   an interrupted upload never looks complete, and a stale partial is swept after an hour.
// - The build is started detached (setsid nohup, like a run) and polled: a dropped connection or a
//   closed workbench does not kill a half-hour CUDA build, and a second launch that finds it still
//   running follows it instead of starting another. bin/moe-train is copied in only on success.
#include "remote/provision.h"

#include "remote/run_dir_protocol.h"

#include "core/log.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace fs = std::filesystem;

namespace {

constexpr auto kCommandTimeout = std::chrono::seconds(60);
constexpr int64_t kMinFreeDiskMiB = 2048;  // a CPU build takes ~0.3 GiB, a CUDA one ~1.5 GiB
constexpr int kCmakeMajor = 3, kCmakeMinor = 25;
constexpr size_t kLogTailLines = 30;

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

std::string lastLines(const std::string& text, size_t count)
{
    auto all = lines(text);
    if (all.size() > count)
        all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(count));
    std::string out;
    for (const auto& line : all)
        out += line + "\n";
    return trimmed(out);
}

std::string mib(int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

// "cmake version 3.25.1" -> true when >= 3.25.
bool cmakeRecentEnough(const std::string& versionLine, std::string& version)
{
    std::smatch m;
    static const std::regex number(R"((\d+)\.(\d+)(\.\d+)?)");
    if (!std::regex_search(versionLine, m, number))
        return false;
    version = m.str(0);
    const int major = std::stoi(m.str(1)), minor = std::stoi(m.str(2));
    return major > kCmakeMajor || (major == kCmakeMajor && minor >= kCmakeMinor);
}

// The build's position from its log: Ninja's "[12/80]" or make's "[ 45%]"; < 0 when none.
double buildFraction(const std::string& log)
{
    static const std::regex ninja(R"(\[(\d+)/(\d+)\])");
    static const std::regex make(R"(\[\s*(\d+)%\])");
    const auto all = lines(log);
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        std::smatch m;
        if (std::regex_search(*it, m, ninja) && std::stod(m.str(2)) > 0)
            return std::stod(m.str(1)) / std::stod(m.str(2));
        if (std::regex_search(*it, m, make))
            return std::stod(m.str(1)) / 100.0;
    }
    return -1.0;
}

}  // namespace

// ---- node check ---------------------------------------------------------------------------

bool isCudaConfig(const std::string& configJson)
{
    const auto json = nlohmann::json::parse(configJson, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("runtime") || !json["runtime"].is_object())
        return false;
    const auto& runtime = json["runtime"];
    return runtime.contains("device") && runtime["device"].is_string() && runtime["device"].get<std::string>() == "cuda";
}

std::string nodeCheckScript(const std::string& cacheDir)
{
    const std::string cache = shellQuotePath(cacheDir.empty() ? "~/.cache/moe-workbench/build" : cacheDir);
    // Each probe prints one key=value line; a missing tool prints nothing or "no".
    return "c=" + cache + "\n"
           "echo \"cache_dir=$c\"\n"
           "echo \"cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)\"\n"
           "if command -v nvidia-smi >/dev/null 2>&1; then\n"
           "  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | "
           "while IFS= read -r l; do echo \"gpu=$l\"; done\n"
           "fi\n"
           "if command -v python3 >/dev/null 2>&1; then\n"
           "  t=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path, torch.__version__, torch.version.cuda)' "
           "2>/dev/null) && echo \"py_torch=$t\"\n"
           "  n=$(python3 -c 'import torch,os; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)/nvidia/nccl\n"
           "  [ -f \"$n/include/nccl.h\" ] && echo \"nccl_dir=$n\"\n"
           "fi\n"
           "for d in /usr/share/cmake/Torch /usr/lib/*/cmake/Torch /usr/local/share/cmake/Torch "
           "/usr/local/lib/cmake/Torch /usr/local/libtorch/share/cmake/Torch /opt/libtorch/share/cmake/Torch; do\n"
           "  if [ -f \"$d/TorchConfig.cmake\" ]; then\n"
           "    v=$(sed -n 's/.*PACKAGE_VERSION \"\\([^\"]*\\)\".*/\\1/p' \"$d/TorchConfigVersion.cmake\" 2>/dev/null | head -n 1)\n"
           "    echo \"sys_torch=$v $d\"; break\n"
           "  fi\n"
           "done\n"
           "command -v cmake >/dev/null 2>&1 && echo \"cmake=$(cmake --version 2>/dev/null | head -n 1)\"\n"
           "cxx=${CXX:-c++}\n"
           "if command -v \"$cxx\" >/dev/null 2>&1; then\n"
           "  echo \"cxx=$($cxx --version 2>/dev/null | head -n 1)\"\n"
           "  printf '#include <concepts>\\n#include <span>\\nstatic_assert(__cplusplus >= 202002L);\\nint main() {}\\n' | "
           "\"$cxx\" -std=c++20 -x c++ -fsyntax-only - >/dev/null 2>&1 && echo cxx20=yes\n"
           "fi\n"
           "command -v ninja >/dev/null 2>&1 && echo generator=ninja\n"
           "command -v make >/dev/null 2>&1 && echo generator=make\n"
           "command -v ccache >/dev/null 2>&1 && echo ccache=yes\n"
           "for d in /usr/include /usr/local/include \"$HOME/.local/include\"; do\n"
           "  [ -f \"$d/nlohmann/json.hpp\" ] && echo \"nlohmann=$d\"\n"
           "  { [ -f \"$d/stb/stb_image.h\" ] || [ -f \"$d/stb_image.h\" ]; } && echo \"stb=$d\"\n"
           "done\n"
           "p=$c; while [ ! -d \"$p\" ]; do p=$(dirname \"$p\"); done\n"
           "df -Pk \"$p\" 2>/dev/null | awk 'NR==2 {print \"disk_kib=\" $4}'\n"
           "exit 0\n";
}

NodeReport parseNodeCheck(const std::string& output)
{
    NodeReport r;
    std::multimap<std::string, std::string> kv;
    for (const auto& line : lines(output)) {
        const auto eq = line.find('=');
        if (eq != std::string::npos)
            kv.emplace(line.substr(0, eq), trimmed(line.substr(eq + 1)));
    }
    auto first = [&](const std::string& key) {
        auto it = kv.find(key);
        return it == kv.end() ? std::string() : it->second;
    };
    r.cacheDir = first("cache_dir");
    r.cpus = std::max(1, std::atoi(first("cpus").c_str()));
    for (auto [it, end] = kv.equal_range("gpu"); it != end; ++it) {
        // "NVIDIA H200, 143771 MiB"
        const auto comma = it->second.rfind(',');
        NodeReport::Gpu gpu;
        gpu.name = trimmed(it->second.substr(0, comma));
        if (comma != std::string::npos)
            gpu.memoryMiB = std::atoll(trimmed(it->second.substr(comma + 1)).c_str());
        if (!gpu.name.empty())
            r.gpus.push_back(gpu);
    }
    // python3's torch first (it matches the node's CUDA driver), then a system LibTorch.
    if (const auto py = first("py_torch"); !py.empty()) {
        // "<prefix> <version> <cuda|None>"; the prefix may hold spaces, so split from the right.
        const auto last = py.rfind(' ');
        const auto middle = last == std::string::npos ? std::string::npos : py.rfind(' ', last - 1);
        if (middle != std::string::npos) {
            r.torchSource = "python3 torch";
            r.torchPrefix = py.substr(0, middle);
            r.torchVersion = py.substr(middle + 1, last - middle - 1);
            r.torchCuda = py.substr(last + 1) == "None" ? "" : py.substr(last + 1);
        }
    }
    if (r.torchSource.empty()) {
        if (const auto sys = first("sys_torch"); !sys.empty()) {
            const auto space = sys.find(' ');
            r.torchSource = "system LibTorch (" + sys.substr(space + 1) + ")";
            r.torchVersion = sys.substr(0, space);
        }
    }
    if (r.torchSource.empty())
        r.problems.push_back("no LibTorch: install PyTorch for python3 (pip install torch; the build uses its "
                             "LibTorch) or a system LibTorch (Debian/Ubuntu: apt-get install libtorch-dev)");

    if (const auto cmake = first("cmake"); cmake.empty())
        r.problems.push_back("cmake is not on PATH: install CMake 3.25 or newer (apt-get install cmake, or "
                             "pip install --user cmake and put ~/.local/bin on PATH)");
    else if (!cmakeRecentEnough(cmake, r.cmakeVersion))
        r.problems.push_back("cmake " + (r.cmakeVersion.empty() ? cmake : r.cmakeVersion) +
                             " is too old: the runtime needs CMake 3.25 or newer (pip install --user cmake, "
                             "then put ~/.local/bin first on PATH)");
    r.compiler = first("cxx");
    r.cxx20 = first("cxx20") == "yes";
    if (r.compiler.empty())
        r.problems.push_back("no C++ compiler (c++, or $CXX) on PATH: install g++ 11 or newer "
                             "(apt-get install g++) or load your site's compiler module");
    else if (!r.cxx20)
        r.problems.push_back("the compiler (" + r.compiler + ") does not compile C++20: install g++ 11+ or "
                             "clang 14+ and set CXX to it");
    if (kv.count("generator") == 0)
        r.problems.push_back("neither make nor ninja is on PATH: install one (apt-get install make)");
    // Not problems: the bundle brings both (runtime_bundle.h); only said, for a user comparing.
    r.nodeJsonDir = first("nlohmann");
    r.nodeStbDir = first("stb");
    r.ccache = first("ccache") == "yes";
    r.ncclDir = first("nccl_dir");
    if (const auto disk = first("disk_kib"); !disk.empty()) {
        r.freeDiskMiB = std::atoll(disk.c_str()) / 1024;
        if (r.freeDiskMiB < kMinFreeDiskMiB)
            r.problems.push_back("only " + std::to_string(r.freeDiskMiB) + " MiB free under " + r.cacheDir +
                                 "; building moe-train needs about 2 GiB: free some space, or point the "
                                 "host's cache_dir in hosts.json at a larger disk");
    }

    if (r.gpus.empty())
        r.notes.push_back("no GPU found (nvidia-smi missing or it lists none): a CPU-only node; moe-train "
                          "trains on the CPU with one rank");
    else if (r.torchCuda.empty() && !r.torchSource.empty())
        r.notes.push_back("the node has GPUs but its LibTorch (" + r.torchSource +
                          ") is CPU-only: moe-train will train on the CPU; install a CUDA build of PyTorch "
                          "for python3 to use the GPUs");
    return r;
}

std::string NodeReport::describe() const
{
    std::string out;
    if (gpus.empty()) {
        out += "GPUs: none (CPU-only node)\n";
    } else {
        out += "GPUs: " + std::to_string(gpus.size()) + " x " + gpus.front().name + " (" +
               std::to_string(gpus.front().memoryMiB) + " MiB)\n";
    }
    out += "LibTorch: " + (torchSource.empty() ? std::string("missing")
                                                : torchVersion + " from " + torchSource +
                                                      (torchCuda.empty() ? ", CPU" : ", CUDA " + torchCuda)) + "\n";
    out += "cmake: " + (cmakeVersion.empty() ? std::string("missing or unreadable") : cmakeVersion) + "\n";
    out += "compiler: " + (compiler.empty() ? std::string("missing") : compiler + (cxx20 ? " (C++20 ok)" : " (no C++20)")) + "\n";
    out += "CPUs: " + std::to_string(cpus) + "\n";
    if (freeDiskMiB >= 0)
        out += "free disk in " + cacheDir + ": " + std::to_string(freeDiskMiB / 1024) + " GiB\n";
    out += "headers: nlohmann/json and stb come with the bundle (on the node: nlohmann/json " +
           (nodeJsonDir.empty() ? std::string("none") : "in " + nodeJsonDir) + ", stb " +
           (nodeStbDir.empty() ? std::string("none") : "in " + nodeStbDir) + "; not used)\n";
    for (const auto& note : notes)
        out += "note: " + note + "\n";
    for (const auto& problem : problems)
        out += "missing: " + problem + "\n";
    return trimmed(out);
}

// ---- provisioner ------------------------------------------------------------------------

Provisioner::Provisioner(RemoteOps ops, ProvisionOptions options, std::string node, core::LaunchProgressFn progress)
    : m_ops(std::move(ops)), m_options(std::move(options)), m_node(std::move(node)), m_progress(std::move(progress))
{
}

void Provisioner::report(const std::string& phase, double fraction, const std::string& detail) const
{
    if (m_progress)
        m_progress({phase, m_node, fraction, detail});
}

Result<NodeReport> Provisioner::check()
{
    report("check", -1.0, "checking GPUs, LibTorch, cmake, compiler, disk");
    auto result = m_ops.runScript(nodeCheckScript(m_options.cacheDir), kCommandTimeout);
    if (!result)
        return result.error();
    NodeReport node = parseNodeCheck(result->out);
    if (node.cacheDir.empty() || node.cacheDir.front() != '/')
        return makeError(ErrorCode::Failed,
                         "the node check did not run (exit " + std::to_string(result->exitStatus) +
                             "): " + trimmed(result->err),
                         m_node);
    if (!node.ok())
        return makeError(ErrorCode::Failed, "the node cannot build moe-train yet:\n" + node.describe(), m_node);
    report("check", 1.0,
           (node.gpus.empty() ? std::string("CPU-only node") : std::to_string(node.gpus.size()) + " x " + node.gpus.front().name) +
               ", LibTorch " + node.torchVersion + (node.torchCuda.empty() ? "" : " (CUDA " + node.torchCuda + ")"));
    return node;
}

Result<std::string> Provisioner::ensureBuilt(const NodeReport& node)
{
    m_uploaded = false;
    auto bundle = collectRuntimeBundle(m_options.sourceDir);
    if (!bundle)
        return bundle.error();
    m_hash = bundle->hash;
    const std::string shortHash = bundle->hash.substr(0, 16);
    wb::log::get("remote")->info("bundle {} for {}: {} files, {} bytes; headers: {}", shortHash, m_node,
                                 bundle->files.size(), bundle->totalBytes, bundle->describeDependencies());
    const std::string hashDir = node.cacheDir + "/" + shortHash;
    const std::string binary = hashDir + "/bin/moe-train";

    auto state = m_ops.runScript("[ -x " + shellQuote(binary) + " ] && echo built\n[ -d " +
                                     shellQuote(hashDir + "/src") + " ] && echo src\nexit 0\n",
                                 kCommandTimeout);
    if (!state)
        return state.error();
    if (state->out.find("built") != std::string::npos) {
        report("upload", 1.0, "not needed: cached build " + shortHash + " found");
        report("build", 1.0, "cached build " + shortHash + " found");
        return binary;
    }
    if (state->out.find("src") == std::string::npos) {
        if (auto uploaded = upload(*bundle, hashDir); !uploaded)
            return uploaded.error();
    } else {
        report("upload", 1.0, "source bundle " + shortHash + " is already on the node");
    }
    if (auto built = build(node, hashDir, shortHash); !built)
        return built.error();
    return binary;
}

Result<void> Provisioner::upload(const RuntimeBundle& bundle, const std::string& hashDir)
{
    std::set<std::string> dirs;
    for (const auto& file : bundle.files)
        for (auto dir = fs::path(file.path).parent_path(); !dir.empty(); dir = dir.parent_path())
            dirs.insert(dir.generic_string());
    std::string mkdirs = "mkdir -p";
    for (const auto& dir : dirs)
        mkdirs += " " + shellQuote(dir);
    const std::string hd = shellQuote(hashDir);
    auto made = m_ops.runScript("mkdir -p " + hd + " || exit 1\n"
                                "find " + hd + " -maxdepth 1 -name 'src.partial-*' -mmin +60 -exec rm -rf {} + 2>/dev/null\n"
                                "d=$(mktemp -d " + shellQuote(hashDir + "/src.partial-XXXXXX") + ") || exit 1\n"
                                "cd \"$d\" && " + mkdirs + " && pwd\n",
                                kCommandTimeout);
    if (!made)
        return made.error();
    const std::string partial = trimmed(made->out);
    if (made->exitStatus != 0 || partial.empty() || partial.front() != '/')
        return makeError(ErrorCode::Failed, "cannot create the upload directory: " + trimmed(made->err), m_node + ":" + hashDir);

    const std::string total = mib(bundle.totalBytes);
    report("upload", 0.0, "0.0 of " + total + " MiB (" + std::to_string(bundle.files.size()) + " files, bundle " +
                              bundle.hash.substr(0, 16) + ")");
    int64_t done = 0;
    double lastReported = 0.0;
    for (const auto& file : bundle.files) {
        if (auto written = m_ops.writeFile(partial + "/" + file.path, file.content, file.mode); !written)
            return written.error();
        m_uploaded = true;
        done += static_cast<int64_t>(file.content.size());
        const double fraction = bundle.totalBytes > 0 ? static_cast<double>(done) / static_cast<double>(bundle.totalBytes) : 1.0;
        if (fraction - lastReported >= 0.1 || done == bundle.totalBytes) {
            report("upload", fraction, mib(done) + " of " + total + " MiB");
            lastReported = fraction;
        }
    }
    // Complete: only now does it become src (another launch may have won the race: keep theirs).
    auto moved = m_ops.runScript("cd " + hd + " || exit 1\n"
                                 "if [ -d src ]; then rm -rf " + shellQuote(partial) + "; else mv " +
                                     shellQuote(partial) + " src; fi\n",
                                 kCommandTimeout);
    if (!moved)
        return moved.error();
    if (moved->exitStatus != 0)
        return makeError(ErrorCode::Failed, "cannot move the uploaded bundle into place: " + trimmed(moved->err),
                         m_node + ":" + hashDir);
    return {};
}

std::string buildScript(const NodeReport& node, int jobs)
{
    std::string configure = "cmake -S src/runtime -B build -DCMAKE_BUILD_TYPE=Release -DWB_BUILD_TESTS=OFF";
    if (!node.torchPrefix.empty())
        configure += " -DCMAKE_PREFIX_PATH=" + shellQuote(node.torchPrefix);
    if (!node.torchCuda.empty() && !node.gpus.empty()) {
        configure += " -DWB_WITH_CUDA=ON";
        // The wheel's NCCL headers let ProcessGroupNCCL compile in (docs/runtime.md).
        if (!node.ncclDir.empty())
            configure += " -DNCCL_INCLUDE_DIR=" + shellQuote(node.ncclDir + "/include") +
                         " -DNCCL_LIBRARY=" + shellQuote(node.ncclDir + "/lib/libnccl.so.2");
    }
    if (node.ccache)
        configure += " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache";
    // Ninja when the node has it (its "[n/m]" lines give the progress), else make ("[ p%]").
    // CCACHE_BASEDIR: paths under the hash dir hash as relative ones, so a rebuild of changed
    // sources in a new hash dir still hits ccache for the unchanged files.
    // The bundle's headers (runtime_bundle.h) are given as the very cache entries the runtime's
    // find_path() fills, so cmake never searches: the node's own copies, or one a CMAKE_PREFIX_PATH
    // in its environment would find first, are never used. (WB_DEPS_PREFIX is only a hint that
    // system paths may still beat.) Only when the bundle has them: a tree that includes neither
    // brings neither. In "$@" because the hash dir's path may hold spaces.
    return "G=; command -v ninja >/dev/null 2>&1 && G='-G Ninja'\n"
           "export CCACHE_BASEDIR=\"$(pwd)\" CCACHE_NOHASHDIR=1\n"
           "set --\n"
           "[ -d src/deps/include/nlohmann ] && set -- \"$@\" \"-DWB_NLOHMANN_JSON_INCLUDE_DIR=$(pwd)/src/deps/include\"\n"
           "[ -d src/deps/include/stb ] && set -- \"$@\" \"-DWB_STB_INCLUDE_DIR=$(pwd)/src/deps/include/stb\"\n"
           "{ " + configure + " $G \"$@\" && cmake --build build -j " + std::to_string(std::max(1, jobs)) +
           " --target moe-train && mkdir -p bin && cp build/bin/moe-train bin/moe-train.tmp && "
           "mv -f bin/moe-train.tmp bin/moe-train; } >build.log 2>&1\n"
           "echo $? > build.rc.tmp && mv build.rc.tmp build.rc\n";
}

Result<void> Provisioner::build(const NodeReport& node, const std::string& hashDir, const std::string& shortHash)
{
    auto log = wb::log::get("remote");
    const int jobs = m_options.buildJobs > 0 ? m_options.buildJobs : node.cpus;
    const std::string inner = buildScript(node, jobs);
    const std::string hd = shellQuote(hashDir);
    // Safe to repeat (a timed-out start may have run): a build that finished (rc 0 and the binary)
    // is not redone, one that is running (this launch's earlier attempt, or another launch's) is
    // followed, and the start waits for the build's pid so that a repeat sees it running.
    std::string start = "cd " + hd + " || exit 1\n"
                        "[ \"$(cat build.rc 2>/dev/null)\" = 0 ] && [ -x bin/moe-train ] && { echo built; exit 0; }\n"
                        "pid=$(cat build.pid 2>/dev/null)\n"
                        "case \"$pid\" in ''|*[!0-9]*) pid=0 ;; esac\n"
                        "if [ \"$pid\" -gt 1 ] && kill -0 -\"$pid\" 2>/dev/null; then echo following; exit 0; fi\n"
                        "rm -f build.rc build.pid\n";
    start += "command -v setsid >/dev/null 2>&1 || { echo 'setsid is missing on the node (util-linux)' >&2; exit 126; }\n"
             "setsid nohup sh -c 'echo $$ > build.pid.tmp && mv build.pid.tmp build.pid && exec sh -c \"$1\"' build " +
             shellQuote(inner) + " </dev/null >/dev/null 2>&1 &\n"
                                 "i=0; while [ ! -s build.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
                                 "echo started\n";
    auto started = m_ops.runScript(start, kCommandTimeout);
    if (!started)
        return started.error();
    if (started->exitStatus != 0)
        return makeError(ErrorCode::Failed, "cannot start the build: " + trimmed(started->err), m_node + ":" + hashDir);
    log->info("build {} on {}: {}", shortHash, m_node, trimmed(started->out));
    report("build", 0.0, "building moe-train " + shortHash + " with " + std::to_string(jobs) + " jobs" +
                             (node.ccache ? " (ccache)" : ""));

    // Poll: rc file, whether the build group lives, the log's tail.
    const std::string poll = "cd " + hd + " || exit 1\n"
                             "rc=$(cat build.rc 2>/dev/null); pid=$(cat build.pid 2>/dev/null)\n"
                             "case \"$pid\" in ''|*[!0-9]*) pid=0 ;; esac\n"
                             "a=0; [ \"$pid\" -gt 1 ] && kill -0 -\"$pid\" 2>/dev/null && a=1\n"
                             "echo \"rc=$rc alive=$a\"\n"
                             "tail -n " + std::to_string(kLogTailLines) + " build.log 2>/dev/null\n";
    std::string lastDetail;
    int missedRc = 0;
    for (;;) {
        std::this_thread::sleep_for(m_options.pollInterval);
        auto polled = m_ops.runScript(poll, kCommandTimeout);
        if (!polled)
            return polled.error();
        const auto newline = polled->out.find('\n');
        const std::string head = polled->out.substr(0, newline);
        const std::string tail = newline == std::string::npos ? std::string() : polled->out.substr(newline + 1);
        const bool alive = head.find("alive=1") != std::string::npos;
        const auto rcAt = head.find("rc=");
        const std::string rcText = rcAt == std::string::npos ? "" : head.substr(rcAt + 3, head.find(' ', rcAt) - rcAt - 3);
        if (!rcText.empty()) {
            if (rcText == "0") {
                report("build", 1.0, "built moe-train " + shortHash);
                return {};
            }
            return makeError(ErrorCode::Failed,
                             "building moe-train on the node failed (exit " + rcText + "); the last lines of " +
                                 hashDir + "/build.log:\n" + lastLines(tail, kLogTailLines),
                             m_node);
        }
        if (!alive && ++missedRc > 2)  // ended without writing build.rc: killed (OOM, reboot, user)
            return makeError(ErrorCode::Failed,
                             "the build on the node stopped without finishing (killed?); the last lines of " +
                                 hashDir + "/build.log:\n" + lastLines(tail, kLogTailLines),
                             m_node);
        std::string detail = lastLines(tail, 1);
        if (detail.size() > 160)
            detail = detail.substr(0, 157) + "...";
        if (detail != lastDetail && !detail.empty()) {
            report("build", buildFraction(tail), detail);
            lastDetail = detail;
        }
    }
}

}  // namespace wb::remote
