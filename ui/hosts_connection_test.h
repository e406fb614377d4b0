// HostConnectionTest: "Test connection" for one registered host, on its own thread. Connects with
// the host's settings (verifying the host key against known_hosts, asking for a password through
// the GUI only when no key works), then asks the host who it is, which GPUs it has (nvidia-smi)
// and whether moe-train is where the entry says. The result comes back on the GUI thread.
// Threading: start() and the callback run on the GUI thread; the work on a thread of its own that
// deletes itself when done. Closing the dialog never waits for it (the callback is then skipped).
#pragma once

#include "remote/ssh_hosts.h"

#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>

namespace wb::ui {

struct HostTestResult {
    bool connected = false;
    bool moeTrainFound = false;
    remote::HostKeyInfo hostKey;
    QString connectedAs;  ///< "user@host:port" as resolved
    QString report;       ///< the node check output, for the user
    QString error;        ///< empty when connected; else the full message
};

/// Runs the test; `done` is called on the GUI thread unless `owner` is gone by then.
/// `acceptNewHostKey`: only after the user accepted the fingerprint in the host-key dialog.
void startHostConnectionTest(const remote::SshHostEntry& entry, bool acceptNewHostKey, QPointer<QWidget> owner,
                             std::function<void(const HostTestResult&)> done);

}  // namespace wb::ui
