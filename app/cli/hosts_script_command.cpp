// `hosts script check|build|bundle`: the exact texts and files provisioning sends to a node
// (remote/provision.h), for nodes the workbench cannot reach over SSH — run them there by hand and
// see what a provisioned launch would do (nvidia-smi parse, LibTorch discovery, the CUDA build).
//   check   the node check script, as sent (`sh -c SCRIPT`); its output is what the workbench parses
//   build   from a check's output: the report the workbench would give, then the build script it
//           would start in <cache>/<hash>, the directory that holds the bundle as src/
//   bundle  the runtime source bundle written to DIR/src, exactly as uploaded (with the header-only
//           libraries from this machine in src/deps/include), and its hash
#include "app/cli/cli.h"

#include "remote/provision.h"
#include "remote/target_factory.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace wb::app {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSynopsis =
    "hosts script check [--cache-dir DIR]            > check.sh   (run on the node: sh check.sh)\n"
    "       moe-workbench-cli hosts script build --check-output FILE [--jobs N] > build.sh\n"
    "       moe-workbench-cli hosts script bundle --out DIR      (DIR/src = the uploaded sources)";

int printCheck(Args& args)
{
    bool missing = false;
    const auto cacheDir = args.takeOption("--cache-dir", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    std::fputs(remote::nodeCheckScript(cacheDir.value_or("")).c_str(), stdout);
    return kExitOk;
}

int printBuild(Args& args)
{
    bool missing = false;
    const auto checkOutput = args.takeOption("--check-output", missing);
    const auto jobsText = args.takeOption("--jobs", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!checkOutput)
        return reportUsage("hosts script build needs --check-output FILE (what `sh check.sh` printed on the node)",
                           kSynopsis);
    int jobs = 0;
    if (jobsText) {
        jobs = std::atoi(jobsText->c_str());
        if (jobs < 1 || jobs > 4096)
            return reportUsage("--jobs needs a number from 1 to 4096, not '" + *jobsText + "'", kSynopsis);
    }
    std::ifstream in(*checkOutput, std::ios::binary);
    if (!in)
        return reportError(core::makeError(core::ErrorCode::NotFound, "cannot read the check output", *checkOutput));
    std::ostringstream text;
    text << in.rdbuf();
    const remote::NodeReport node = remote::parseNodeCheck(text.str());
    if (node.cacheDir.empty())
        return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                           "not the output of the node check script (no cache_dir= line); run "
                                           "`sh check.sh > FILE` on the node with the script `hosts script check` printed",
                                           *checkOutput));
    // The report on stderr (as `hosts test` prints it), the script alone on stdout.
    std::fprintf(stderr, "%s\n", node.describe().c_str());
    if (!node.ok()) {
        std::fprintf(stderr, "moe-workbench-cli: the node is missing the pieces above; provisioning would stop "
                             "here and build nothing\n");
        return kExitFailure;
    }
    std::fprintf(stderr, "# run with sh in %s/<hash> (the directory holding the bundle as src/, see `hosts script "
                         "bundle`); it writes build.log, build.rc and, on success, bin/moe-train\n",
                 node.cacheDir.c_str());
    std::fputs(remote::buildScript(node, jobs > 0 ? jobs : node.cpus).c_str(), stdout);
    return kExitOk;
}

int writeBundle(const CliContext& context, Args& args)
{
    bool missing = false;
    const auto out = args.takeOption("--out", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!out)
        return reportUsage("hosts script bundle needs --out DIR", kSynopsis);
    remote::TargetContext target{context.moeTrainPath, context.runsRoot, {}};
    const std::string sources = remote::runtimeSourceDir(target);
    if (sources.empty())
        return reportError(core::makeError(core::ErrorCode::NotFound,
                                           "no runtime sources beside this moe-workbench-cli (share/moe-workbench/"
                                           "runtime-src of an install, or the source tree of a build)"));
    auto bundle = remote::collectRuntimeBundle(sources);
    if (!bundle)
        return reportError(bundle.error());
    const fs::path src = fs::path(*out) / "src";
    std::error_code ec;
    if (fs::exists(src, ec))
        return reportError(core::makeError(core::ErrorCode::Busy, "already exists; pick a new --out DIR",
                                           src.string()));
    for (const auto& file : bundle->files) {
        const fs::path path = src / file.path;
        fs::create_directories(path.parent_path(), ec);
        std::ofstream f(path, std::ios::binary);
        f.write(file.content.data(), static_cast<std::streamsize>(file.content.size()));
        f.close();
        if (!f || ec)
            return reportError(core::makeError(core::ErrorCode::IoError, "cannot write", path.string()));
        fs::permissions(path, static_cast<fs::perms>(file.mode), ec);
    }
    std::printf("bundle %s: %zu files, %lld bytes in %s\n", bundle->hash.substr(0, 16).c_str(), bundle->files.size(),
                static_cast<long long>(bundle->totalBytes), src.string().c_str());
    std::printf("headers in src/deps/include: %s\n", bundle->describeDependencies().c_str());
    return kExitOk;
}

}  // namespace

int hostsScriptCommand(const CliContext& context, Args args)
{
    if (args.rest().empty())
        return reportUsage("hosts script needs what to print: check, build or bundle", kSynopsis);
    std::vector<std::string> rest = args.rest();
    const std::string what = rest.front();
    rest.erase(rest.begin());
    Args whatArgs(std::move(rest));
    if (what == "check")
        return printCheck(whatArgs);
    if (what == "build")
        return printBuild(whatArgs);
    if (what == "bundle")
        return writeBundle(context, whatArgs);
    return reportUsage("unknown hosts script '" + what + "'; use check, build or bundle", kSynopsis);
}

}  // namespace wb::app
