#include "remote/target_factory.h"

#include "remote/local_target.h"
#include "remote/slurm_target.h"
#include "remote/ssh_hosts.h"
#include "remote/ssh_target.h"

namespace wb::remote {

core::Result<std::unique_ptr<core::RunTarget>> makeTarget(const std::string& spec,
                                                          const TargetContext& context)
{
    if (spec == "local")
        return std::unique_ptr<core::RunTarget>(
            std::make_unique<LocalTarget>(context.moeTrainPath, context.runsRoot));
    if (spec.rfind("ssh:", 0) == 0) {
        auto entry = SshHostRegistry(context.hostsPath).find(spec.substr(4));
        if (!entry)
            return entry.error();
        return std::unique_ptr<core::RunTarget>(std::make_unique<SshTarget>(entry->targetOptions()));
    }
    if (spec.rfind("slurm:", 0) == 0)
        return makeSlurmTarget(spec.substr(6), context.hostsPath);
    return core::makeError(core::ErrorCode::InvalidArgument,
                           "unknown target; use local, ssh:HOST or slurm:HOST (a host from `hosts list`)", spec);
}

}  // namespace wb::remote
