#include "ui/hosts_connection_test.h"

#include "ui/host_key_dialog.h"

#include <QApplication>
#include <QThread>

#include <chrono>

namespace wb::ui {
namespace {

// What the node check prints. HOOK(provision): when remote/provision.h (another helper's work)
// is on this branch, replace this probe with its node check (GPUs, LibTorch, CMake, compiler, disk)
// and show that report; until then this is the same probe as `moe-workbench-cli hosts test`, plus
// the GPU list.
std::string probeScript(const std::string& moeTrain)
{
    const std::string moe = remote::shellQuotePath(moeTrain);
    return "echo \"user: $(id -un)\"; echo \"host: $(hostname)\"; echo \"system: $(uname -srm)\"; "
           "if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L 2>&1 | sed 's/^/gpu: /'; "
           "else echo 'gpu: none found (no nvidia-smi on the host)'; fi; "
           "if [ -x " + moe + " ]; then echo \"moe-train: $(" + moe + " --version 2>&1 | head -n 1)\"; "
           "else echo 'moe-train: missing at '" + remote::shellQuote(moeTrain) + "; exit 3; fi";
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
    auto probe = (*session)->run(probeScript(entry.moeTrain), std::chrono::seconds(30));
    if (!probe) {
        result.error = QString::fromStdString(probe.error().toString());
        return result;
    }
    result.report = QString::fromStdString(probe->out + probe->err).trimmed();
    result.moeTrainFound = probe->exitStatus == 0;
    return result;
}

}  // namespace

void startHostConnectionTest(const remote::SshHostEntry& entry, bool acceptNewHostKey, QPointer<QWidget> owner,
                             std::function<void(const HostTestResult&)> done)
{
    QThread* thread = QThread::create([entry, acceptNewHostKey, owner, done = std::move(done)] {
        HostTestResult result;
        try {
            result = runTest(entry, acceptNewHostKey, owner);
        } catch (const std::exception& e) {
            result.error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            qApp,
            [owner, done, result] {
                if (owner)
                    done(result);
            },
            Qt::QueuedConnection);
    });
    thread->setObjectName(QStringLiteral("host-test"));
    QObject::connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
}

}  // namespace wb::ui
