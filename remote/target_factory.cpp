#include "remote/target_factory.h"

#include "remote/local_target.h"
#include "remote/slurm_target.h"
#include "remote/multi_ssh_target.h"
#include "remote/provision.h"
#include "remote/ssh_hosts.h"
#include "remote/ssh_target.h"

#include <filesystem>
#include <sstream>

namespace wb::remote {

// The install's share/moe-workbench/runtime-src beside the binaries, else (a build tree) the
// source tree this library was built from.
std::string runtimeSourceDir(const TargetContext& context)
{
    if (!context.runtimeSourceDir.empty())
        return context.runtimeSourceDir;
    std::error_code ec;
    if (!context.moeTrainPath.empty()) {
        const std::string installed =
            installedRuntimeSourceDir(std::filesystem::path(context.moeTrainPath).parent_path().string());
        if (std::filesystem::is_regular_file(installed + "/runtime/CMakeLists.txt", ec))
            return installed;
    }
#ifdef WB_RUNTIME_SOURCE_TREE
    if (std::filesystem::is_regular_file(std::string(WB_RUNTIME_SOURCE_TREE) + "/runtime/CMakeLists.txt", ec))
        return WB_RUNTIME_SOURCE_TREE;
#endif
    return {};
}

core::Result<std::unique_ptr<core::RunTarget>> makeTarget(const std::string& spec,
                                                          const TargetContext& context)
{
    if (spec == "local")
        return std::unique_ptr<core::RunTarget>(
            std::make_unique<LocalTarget>(context.moeTrainPath, context.runsRoot));
    const SshTargetHooks hooks{context.askSecret, context.onReconnecting};
    if (spec.rfind("ssh:", 0) == 0) {
        SshHostRegistry registry(context.hostsPath);
        std::vector<SshHostEntry> nodes;
        std::istringstream names(spec.substr(4));
        for (std::string hostName; std::getline(names, hostName, ',');) {
            if (hostName.empty())
                return core::makeError(core::ErrorCode::InvalidArgument,
                                       "an empty host name in the list; use ssh:HOST or ssh:A,B,...", spec);
            for (const auto& seen : nodes)
                if (seen.name == hostName)
                    return core::makeError(core::ErrorCode::InvalidArgument,
                                           "host " + hostName + " is listed twice; each node once (register a "
                                           "second entry with `hosts add` to run two nodes on one machine)",
                                           spec);
            auto entry = registry.find(hostName);
            if (!entry)
                return entry.error();
            nodes.push_back(*entry);
        }
        if (nodes.empty() || spec.back() == ',')
            return core::makeError(core::ErrorCode::InvalidArgument, "no host after ssh:; use ssh:HOST or ssh:A,B,...", spec);
        const std::string sources = runtimeSourceDir(context);
        if (nodes.size() > 1)
            return std::unique_ptr<core::RunTarget>(std::make_unique<MultiSshTarget>(std::move(nodes), sources, hooks));
        auto options = nodes.front().targetOptions();
        options.provisioning.sourceDir = sources;
        options.attach(hooks);
        return std::unique_ptr<core::RunTarget>(std::make_unique<SshTarget>(std::move(options)));
    }
    if (spec.rfind("slurm:", 0) == 0)
        return makeSlurmTarget(spec.substr(6), context.hostsPath, hooks);
    return core::makeError(core::ErrorCode::InvalidArgument,
                           "unknown target; use local, ssh:HOST, ssh:A,B,... or slurm:HOST (hosts from `hosts list`)", spec);
}

}  // namespace wb::remote
