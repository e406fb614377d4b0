// HostKeyDialog: what the user sees when an SSH host presents a key known_hosts does not confirm.
//   Unknown key: host, key type and SHA256 fingerprint, with Accept (the caller then reconnects
//     with SshHostSpec::acceptNewHostKey, which records the key in known_hosts) or Cancel.
//   CHANGED key: a warning that explains the risk (someone in the middle, or a reinstalled host)
//     and names the known_hosts line(s) to remove once the admin confirms the new key. It has no
//     accept button, on purpose: a changed key is never accepted from the GUI.
// Also: makeGuiSecretPrompt, the askSecret callback that asks for a password / keyboard-
// interactive answer in a modal dialog on the GUI thread while the SSH worker waits.
// Threading: the dialog is GUI thread only; the prompt function is called on a worker thread.
#pragma once

#include <QDialog>
#include <QPointer>
#include <QString>

#include <functional>
#include <optional>
#include <string>
#include <vector>

QT_BEGIN_NAMESPACE
class QLabel;
class QPushButton;
QT_END_NAMESPACE

namespace wb::ui {

struct HostKeyFacts {
    QString host;             ///< as the user knows it: "gpu1 (user@10.0.0.5:22)"
    QString keyType;          ///< "ssh-ed25519"
    QString fingerprint;      ///< "SHA256:..."
    QString knownHostsPath;   ///< the file the key is (or would be) recorded in
    QString message;          ///< the remote layer's full message
    std::vector<int> knownHostsLines;  ///< 1-based lines of the recorded entry (Changed only)
    QString removeCommand;    ///< "ssh-keygen -R '[host]:port' -f FILE" (Changed only)
};

class HostKeyDialog : public QDialog {
    Q_OBJECT

public:
    enum class Kind { Unknown, Changed };

    HostKeyDialog(Kind kind, HostKeyFacts facts, QWidget* parent = nullptr);

    Kind kind() const { return m_kind; }
    /// Null for a changed key (there is nothing to accept).
    QPushButton* acceptButton() const { return m_accept; }
    QString text() const;

private:
    Kind m_kind;
    QLabel* m_text = nullptr;
    QPushButton* m_accept = nullptr;
};

/// 1-based line numbers in the known_hosts file `path` whose host field matches one of `names`
/// (plain or hashed "|1|salt|hash" entries; "[host]:port" for non-22 ports). Empty when none.
std::vector<int> knownHostsLineNumbers(const QString& path, const QStringList& names);

/// The names known_hosts uses for an SSH host: `host` itself and, when `sshConfig` has a
/// "Host" block for it, its HostName — each as "[name]:port" when the port is not 22.
QStringList knownHostsNames(const QString& host, int port, const QString& sshConfig);

/// An askSecret for SshHostSpec: shows a modal password dialog (text hidden unless `echo`) over
/// `parent` on the GUI thread and blocks the calling worker until the user answers. nullopt when
/// cancelled or when `parent` is gone. The answer is not kept anywhere. Never call it on the GUI
/// thread (it would deadlock); SshSession calls it on its worker.
std::function<std::optional<std::string>(const std::string& prompt, bool echo)> makeGuiSecretPrompt(
    QPointer<QWidget> parent, QString hostLabel);

/// The same over whatever window is active when a prompt comes (for the app's target resolver,
/// whose targets are made on workers before and after any one window). The prompt itself names
/// the host ("(user@host:22) Password: "). Never call it on the GUI thread.
std::function<std::optional<std::string>(const std::string& prompt, bool echo)> makeGuiSecretPromptOverActiveWindow();

}  // namespace wb::ui
