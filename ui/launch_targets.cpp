#include "ui/launch_targets.h"

#include "remote/slurm_target.h"
#include "remote/ssh_hosts.h"
#include "remote/target_factory.h"

#include <algorithm>

namespace wb::ui {

core::Result<std::unique_ptr<core::RunTarget>> makeGuiTarget(const std::string& spec, const GuiTargetPaths& paths,
                                                             const ReconnectFn& onReconnecting)
{
    remote::TargetContext context{paths.moeTrainPath, paths.runsRoot, paths.hostsPath};
    context.onReconnecting = onReconnecting;
    context.askSecret = paths.askSecret;
    auto target = remote::makeTarget(spec, context);
    const bool oneSshHost = spec.rfind("ssh:", 0) == 0 && spec.find(',') == std::string::npos;
    if (target || !oneSshHost || target.error().code != core::ErrorCode::NotFound)
        return target;
    // Stores written before targets were named by their hosts.json entry recorded
    // "ssh:" + the entry's host alias: map it back to the entry's name.
    auto all = remote::SshHostRegistry(paths.hostsPath).load();
    if (!all)
        return all.error();
    for (const auto& candidate : all.value())
        if (candidate.spec().host == spec.substr(4))
            return remote::makeTarget("ssh:" + candidate.name, context);
    return target;
}

QStringList launchTargetChoices(const std::string& hostsPath, QString* error)
{
    QStringList choices{QStringLiteral("local")};
    auto hosts = remote::SshHostRegistry(hostsPath).load();
    if (!hosts) {
        if (error)
            *error = QString::fromStdString(hosts.error().toString());
        return choices;
    }
    for (const auto& host : hosts.value())
        choices << QStringLiteral("ssh:") + QString::fromStdString(host.name);
    auto clusters = remote::slurmSettingsHosts(remote::slurmSettingsPath(hostsPath));
    if (!clusters) {
        if (error)
            *error = QString::fromStdString(clusters.error().toString());
        return choices;
    }
    for (const auto& host : hosts.value())
        if (std::find(clusters->begin(), clusters->end(), host.name) != clusters->end())
            choices << QStringLiteral("slurm:") + QString::fromStdString(host.name);
    return choices;
}

}  // namespace wb::ui
