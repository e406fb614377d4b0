// HostsDialog: the SSH hosts the user registered (hosts.json through remote::SshHostRegistry):
// a table (name, address, user, port, moe-train path) and a form to add, edit and remove them,
// with inline errors on fields that are wrong, and "Test connection" (on a thread of its own, with
// a busy indicator; an unknown or changed host key opens the HostKeyDialog). No secrets are kept:
// passwords are asked for when needed and forgotten.
// Threading: GUI thread only; the connection test runs elsewhere (hosts_connection_test.h).
#pragma once

#include "remote/ssh_hosts.h"

#include <QDialog>
#include <QString>

#include <vector>

QT_BEGIN_NAMESPACE
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
QT_END_NAMESPACE

namespace wb::ui {

struct HostTestResult;

class HostsDialog : public QDialog {
    Q_OBJECT

public:
    explicit HostsDialog(QString hostsPath, QWidget* parent = nullptr);

    QTableWidget* table() const { return m_table; }
    /// The form field for an SshHostEntry member: "name", "host", "user", "port", "identity",
    /// "moeTrain", "runsRoot", "sshConfig", "knownHosts".
    QLineEdit* field(const QString& key) const;
    /// The inline error under that field ("" when valid).
    QString fieldError(const QString& key) const;
    QPushButton* saveButton() const { return m_save; }
    QPushButton* newButton() const { return m_new; }
    QPushButton* removeButton() const { return m_remove; }
    QPushButton* testButton() const { return m_test; }
    /// The last test's outcome as shown ("" before any).
    QString testResultText() const;
    bool isTesting() const { return m_testing; }

public slots:
    /// Re-reads hosts.json into the table.
    void reload();
    /// Validates the form and writes the entry (replacing the selected one; a rename removes the
    /// old name). Returns false, with the reasons shown beside the fields, when it is invalid.
    bool saveHost();
    void removeSelectedHost();
    void newHost();
    void testConnection();

signals:
    /// hosts.json changed (the launch dialog re-reads its target list).
    void hostsChanged();

private:
    void selectHost(int row);
    void showEntry(const remote::SshHostEntry& entry);
    bool readForm(remote::SshHostEntry& entry);
    void setFieldError(const QString& key, const QString& message);
    void runTest(const remote::SshHostEntry& entry, bool acceptNew);
    void onTestFinished(const remote::SshHostEntry& entry, const HostTestResult& result);
    void setTesting(bool testing);
    void showProblem(const QString& message);

    remote::SshHostRegistry m_registry;
    std::vector<remote::SshHostEntry> m_entries;
    QString m_editing;  // name of the entry in the form; empty = a new one

    QTableWidget* m_table = nullptr;
    QPushButton* m_new = nullptr;
    QPushButton* m_remove = nullptr;
    QPushButton* m_save = nullptr;
    QPushButton* m_test = nullptr;
    QProgressBar* m_busy = nullptr;
    QLabel* m_problem = nullptr;
    QPlainTextEdit* m_result = nullptr;
    bool m_testing = false;
};

}  // namespace wb::ui
