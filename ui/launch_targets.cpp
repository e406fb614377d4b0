#include "ui/launch_targets.h"

#include "remote/ssh_hosts.h"
#include "remote/ssh_target.h"
#include "remote/target_factory.h"

namespace wb::ui {

core::Result<std::unique_ptr<core::RunTarget>> makeGuiTarget(const std::string& spec, const GuiTargetPaths& paths,
                                                             const ReconnectFn& onReconnecting)
{
    const bool oneSshHost = spec.rfind("ssh:", 0) == 0 && spec.find(',') == std::string::npos;
    if (!oneSshHost)
        return remote::makeTarget(spec, {paths.moeTrainPath, paths.runsRoot, paths.hostsPath});

    const std::string name = spec.substr(4);
    remote::SshHostRegistry registry(paths.hostsPath);
    auto entry = registry.find(name);
    if (!entry) {
        // The store records SshTarget::name(), i.e. "ssh:" + the entry's host alias, which differs
        // from the registered name when the user gave --host. Map it back.
        auto all = registry.load();
        if (!all)
            return all.error();
        for (const auto& candidate : all.value())
            if (candidate.spec().host == name)
                entry = candidate;
        if (!entry)
            return entry.error();
    }
    auto options = entry->targetOptions();
    options.onReconnecting = onReconnecting;
    return std::unique_ptr<core::RunTarget>(std::make_unique<remote::SshTarget>(std::move(options)));
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
    return choices;
}

}  // namespace wb::ui
