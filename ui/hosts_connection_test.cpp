#include "ui/hosts_connection_test.h"

#include "ui/background_task.h"
#include "ui/host_key_dialog.h"

#include "remote/provision.h"

#include <QApplication>
#include <QThread>

#include <chrono>

namespace wb::ui {
namespace {

// Who and where we are, plus the moe-train the entry names (when it names one).
std::string probeScript(const remote::SshHostEntry& entry)
{
    std::string script = "echo \"user: $(id -un)\"; echo \"host: $(hostname)\"; echo \"system: $(uname -srm)\"";
    if (!entry.provisioned()) {
        const std::string moe = remote::shellQuotePath(entry.moeTrain);
        script += "; if [ -x " + moe + " ]; then echo \"moe-train: $(" + moe +
                  " --version 2>&1 | head -n 1)\"; else echo 'moe-train: missing at '" +
                  remote::shellQuote(entry.moeTrain) + "; exit 3; fi";
    }
    return script;
}

HostTestResult runTest(const remote::SshHostEntry& entry, bool acceptNew, const QPointer<QWidget>& owner)
{
    HostTestResult result;
    auto spec = entry.spec();
    spec.acceptNewHostKey = acceptNew;
    spec.askSecret = makeGuiSecretPrompt(owner, QString::fromStdString(entry.name));
    auto session = remote::SshSession::connect(spec, &result.hostKey);
    if (!session) {
        result.error = QString::fromStdString(session.error().toString());
        return result;
    }
    result.connected = true;
    result.connectedAs = QString::fromStdString((*session)->describe());
    auto probe = (*session)->run(probeScript(entry), std::chrono::seconds(30));
    if (!probe) {
        result.error = QString::fromStdString(probe.error().toString());
        return result;
    }
    std::string report = probe->out + probe->err;
    result.moeTrainFound = probe->exitStatus == 0;
    // The provisioning node check (the same as `hosts test` and the launch's "check" phase):
    // GPUs, LibTorch, CMake, compiler, disk, each missing piece with its fix.
    auto checked = (*session)->run("sh -c " + remote::shellQuote(remote::nodeCheckScript(entry.cacheDir)),
                                   std::chrono::seconds(60));
    if (!checked) {
        result.error = QString::fromStdString(checked.error().toString());
        return result;
    }
    const remote::NodeReport node = remote::parseNodeCheck(checked->out);
    report += "\n" + node.describe();
    if (entry.provisioned()) {
        result.moeTrainFound = node.ok();
        report += node.ok() ? "\nmoe-train: built by the workbench on the first launch, cached in " + node.cacheDir
                            : "\nmoe-train: cannot be built here until the missing pieces above are installed";
    }
    result.report = QString::fromStdString(report).trimmed();
    return result;
}

}  // namespace

void startHostConnectionTest(const remote::SshHostEntry& entry, bool acceptNewHostKey, QPointer<QWidget> owner,
                             std::function<void(const HostTestResult&)> done)
{
    // Network work: never waited for (the dialog may close meanwhile; then the result is dropped).
    runInBackground(
        owner, QStringLiteral("host-test"),
        [entry, acceptNewHostKey, owner] {
            HostTestResult result;
            try {
                result = runTest(entry, acceptNewHostKey, owner);
            } catch (const std::exception& e) {
                result.error = QString::fromUtf8(e.what());
            }
            return result;
        },
        [done = std::move(done)](const HostTestResult& result) { done(result); });
}

}  // namespace wb::ui
