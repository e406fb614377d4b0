#include "ui/hosts_dialog.h"

#include "ui/host_key_dialog.h"
#include "ui/hosts_connection_test.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <utility>

namespace wb::ui {
namespace {


QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

HostsDialog::HostsDialog(QString hostsPath, QWidget* parent)
    : QDialog(parent), m_registry(hostsPath.toStdString())
{
    setObjectName(QStringLiteral("hostsDialog"));
    setWindowTitle(tr("SSH hosts"));

    m_table = new QTableWidget(0, 5, this);
    m_table->setObjectName(QStringLiteral("hostsTable"));
    m_table->setHorizontalHeaderLabels({tr("Name"), tr("Address"), tr("User"), tr("Port"), tr("moe-train")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    m_table->horizontalHeader()->setStretchLastSection(true);
    connect(m_table, &QTableWidget::currentCellChanged, this, [this](int row) { selectHost(row); });

    m_new = new QPushButton(tr("&New host"), this);
    m_remove = new QPushButton(tr("&Remove"), this);
    m_remove->setObjectName(QStringLiteral("removeHostButton"));
    connect(m_new, &QPushButton::clicked, this, &HostsDialog::newHost);
    connect(m_remove, &QPushButton::clicked, this, &HostsDialog::removeSelectedHost);
    auto* listButtons = new QHBoxLayout;
    listButtons->addWidget(m_new);
    listButtons->addWidget(m_remove);
    listButtons->addStretch(1);
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_table, 1);
    leftLayout->addLayout(listButtons);

    // The form: each field with an inline error line under it (hidden while valid).
    auto* form = new QFormLayout;
    const auto addField = [&](const QString& key, const QString& label, const QString& placeholder,
                              const QString& tip) {
        auto* edit = new QLineEdit(this);
        edit->setObjectName(key + QStringLiteral("Field"));
        edit->setPlaceholderText(placeholder);
        edit->setToolTip(tip);
        auto* error = new QLabel(this);
        error->setObjectName(key + QStringLiteral("Error"));
        error->setStyleSheet(QStringLiteral("color: #d62728;"));
        error->setWordWrap(true);
        error->setVisible(false);
        connect(edit, &QLineEdit::textEdited, error, [error] { error->setVisible(false); });
        auto* box = new QVBoxLayout;
        box->setSpacing(1);
        box->addWidget(edit);
        box->addWidget(error);
        form->addRow(label, box);
    };
    addField(QStringLiteral("name"), tr("Name:"), tr("gpu1"),
             tr("What you pick as the target (ssh:NAME): letters, digits, '.', '-', '_'"));
    addField(QStringLiteral("host"), tr("Address:"), tr("same as the name"),
             tr("An alias from ~/.ssh/config or a host name / IP address; empty = the name"));
    addField(QStringLiteral("user"), tr("User:"), tr("from ~/.ssh/config, else your user name"), QString());
    addField(QStringLiteral("port"), tr("Port:"), tr("from ~/.ssh/config, else 22"), tr("1 to 65535"));
    addField(QStringLiteral("identity"), tr("Identity file:"), tr("~/.ssh/id_ed25519 (the agent is tried first)"),
             tr("A private key file; its passphrase is the agent's business, never stored here"));
    addField(QStringLiteral("moeTrain"), tr("moe-train on the host:"), tr("auto: built on the host by the workbench"),
             tr("Absolute, or starting with ~/ (the remote home)"));
    addField(QStringLiteral("runsRoot"), tr("Run directories:"), QStringLiteral("~/.cache/moe-workbench/runs"),
             QString());
    addField(QStringLiteral("sshConfig"), tr("SSH config file:"), QStringLiteral("~/.ssh/config"), QString());
    addField(QStringLiteral("knownHosts"), tr("known_hosts file:"), QStringLiteral("~/.ssh/known_hosts"), QString());

    m_save = new QPushButton(tr("&Save host"), this);
    m_save->setObjectName(QStringLiteral("saveHostButton"));
    m_test = new QPushButton(tr("&Test connection"), this);
    m_test->setObjectName(QStringLiteral("testConnectionButton"));
    m_busy = new QProgressBar(this);
    m_busy->setObjectName(QStringLiteral("testBusy"));
    m_busy->setRange(0, 0);  // a connection has no meaningful percentage
    m_busy->setMaximumWidth(120);
    m_busy->setVisible(false);
    connect(m_save, &QPushButton::clicked, this, [this] { saveHost(); });
    connect(m_test, &QPushButton::clicked, this, &HostsDialog::testConnection);
    auto* formButtons = new QHBoxLayout;
    formButtons->addWidget(m_save);
    formButtons->addWidget(m_test);
    formButtons->addWidget(m_busy);
    formButtons->addStretch(1);

    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("hostsProblem"));
    m_problem->setStyleSheet(QStringLiteral("color: #d62728;"));
    m_problem->setWordWrap(true);
    m_problem->setVisible(false);
    m_result = new QPlainTextEdit(this);
    m_result->setObjectName(QStringLiteral("testResult"));
    m_result->setReadOnly(true);
    m_result->setPlaceholderText(tr("Test connection shows here who you are on the host, its GPUs and "
                                    "whether moe-train is there."));
    m_result->setMaximumHeight(m_result->fontMetrics().height() * 8);

    auto* formBox = new QGroupBox(tr("Host"), this);
    auto* formLayout = new QVBoxLayout(formBox);
    formLayout->addLayout(form);
    formLayout->addLayout(formButtons);
    formLayout->addWidget(m_problem);
    formLayout->addWidget(m_result);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(left);
    splitter->addWidget(formBox);
    splitter->setSizes({420, 520});
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Hosts live in <tt>%1</tt>. No passwords or keys are stored there.")
                                     .arg(QString::fromStdString(m_registry.path()).toHtmlEscaped()),
                                 this));
    layout->addWidget(splitter, 1);
    layout->addWidget(close);
    resize(980, 560);
    reload();
}

QLineEdit* HostsDialog::field(const QString& key) const
{
    return findChild<QLineEdit*>(key + QStringLiteral("Field"));
}

QString HostsDialog::fieldError(const QString& key) const
{
    auto* label = findChild<QLabel*>(key + QStringLiteral("Error"));
    return label && label->isVisibleTo(this) ? label->text() : QString();
}

QString HostsDialog::testResultText() const
{
    return m_result->toPlainText();
}

void HostsDialog::reload()
{
    auto loaded = m_registry.load();
    if (!loaded) {
        showProblem(tr("Cannot read the hosts: %1").arg(qs(loaded.error().toString())));
        m_entries.clear();
    } else {
        m_entries = std::move(loaded).value();
    }
    const QString keep = m_editing;
    m_table->setRowCount(static_cast<int>(m_entries.size()));
    int keepRow = -1;
    for (int row = 0; row < static_cast<int>(m_entries.size()); ++row) {
        const auto& e = m_entries[static_cast<size_t>(row)];
        const QStringList cells{qs(e.name), qs(e.host.empty() ? e.name : e.host),
                                e.user.empty() ? tr("(ssh config)") : qs(e.user),
                                e.port > 0 ? QString::number(e.port) : tr("(ssh config)"),
                                e.moeTrain.empty() || e.provisioned() ? tr("auto") : qs(e.moeTrain)};
        for (int column = 0; column < cells.size(); ++column)
            m_table->setItem(row, column, new QTableWidgetItem(cells[column]));
        if (qs(e.name) == keep)
            keepRow = row;
    }
    m_table->resizeColumnsToContents();
    if (keepRow >= 0)
        m_table->selectRow(keepRow);
    else if (!m_entries.empty() && keep.isEmpty())
        m_table->selectRow(0);
    else
        newHost();
    m_remove->setEnabled(!m_editing.isEmpty());
}

void HostsDialog::selectHost(int row)
{
    if (row < 0 || row >= static_cast<int>(m_entries.size()))
        return;
    showEntry(m_entries[static_cast<size_t>(row)]);
}

void HostsDialog::showEntry(const remote::SshHostEntry& entry)
{
    m_editing = qs(entry.name);
    field(QStringLiteral("name"))->setText(qs(entry.name));
    field(QStringLiteral("host"))->setText(qs(entry.host));
    field(QStringLiteral("user"))->setText(qs(entry.user));
    field(QStringLiteral("port"))->setText(entry.port > 0 ? QString::number(entry.port) : QString());
    field(QStringLiteral("identity"))->setText(qs(entry.identityFile));
    field(QStringLiteral("moeTrain"))->setText(entry.provisioned() ? QString() : qs(entry.moeTrain));
    field(QStringLiteral("runsRoot"))->setText(qs(entry.runsRoot));
    field(QStringLiteral("sshConfig"))->setText(qs(entry.sshConfig));
    field(QStringLiteral("knownHosts"))->setText(qs(entry.knownHosts));
    for (auto* label : findChildren<QLabel*>())
        if (label->objectName().endsWith(QStringLiteral("Error")))
            label->setVisible(false);
    m_problem->setVisible(false);
    m_result->clear();
    m_remove->setEnabled(true);
}

void HostsDialog::newHost()
{
    remote::SshHostEntry blank;
    showEntry(blank);
    m_editing.clear();
    m_remove->setEnabled(false);
    m_table->clearSelection();
    field(QStringLiteral("name"))->setFocus();
}

void HostsDialog::setFieldError(const QString& key, const QString& message)
{
    auto* label = findChild<QLabel*>(key + QStringLiteral("Error"));
    label->setText(message);
    label->setVisible(!message.isEmpty());
}

bool HostsDialog::readForm(remote::SshHostEntry& entry)
{
    const auto text = [this](const char* key) { return field(QLatin1String(key))->text().trimmed(); };
    bool valid = true;
    const auto fail = [&](const char* key, const QString& message) {
        setFieldError(QLatin1String(key), message);
        valid = false;
    };
    for (const char* key : {"name", "host", "user", "port", "moeTrain", "runsRoot"})
        setFieldError(QLatin1String(key), QString());

    entry.name = text("name").toStdString();
    if (entry.name.empty())
        fail("name", tr("A name is needed: it is what you pick as the target (ssh:NAME)."));
    else if (!remote::validHostName(entry.name))
        fail("name", tr("Use only letters, digits, '.', '-' and '_', not starting with '-' (no '@', ':' or "
                        "','; put the user and port in their own fields)."));
    entry.host = text("host").toStdString();
    if (!entry.host.empty() && !remote::validHostName(entry.host))
        fail("host", tr("An address is a host name, an IP address or an ssh config alias: letters, digits, "
                        "'.', '-', '_' (user and port go in their own fields)."));
    entry.user = text("user").toStdString();
    if (entry.user.find_first_of(" \t@:'\"") != std::string::npos)
        fail("user", tr("A user name has no spaces, quotes, '@' or ':'."));
    entry.port = 0;
    if (!text("port").isEmpty()) {
        bool ok = false;
        const int port = text("port").toInt(&ok);
        if (!ok || port < 1 || port > 65535)
            fail("port", tr("The port must be a whole number from 1 to 65535 (or empty for the ssh config's)."));
        else
            entry.port = port;
    }
    entry.identityFile = text("identity").toStdString();
    entry.moeTrain = text("moeTrain").toStdString();
    const auto remotePathOk = [](const QString& path) {
        return path.startsWith(QLatin1Char('/')) || path.startsWith(QStringLiteral("~/"));
    };
    // Empty or "auto": the workbench checks the node, uploads the runtime sources and builds
    // moe-train there on the first launch (remote/provision.h).
    if (entry.moeTrain.empty() || entry.moeTrain == "auto")
        entry.moeTrain = "auto";
    else if (!remotePathOk(text("moeTrain")))
        fail("moeTrain", tr("Use an absolute path or one starting with ~/ (the home directory on the host)."));
    entry.runsRoot = text("runsRoot").toStdString();
    if (!entry.runsRoot.empty() && !remotePathOk(text("runsRoot")))
        fail("runsRoot", tr("Use an absolute path or one starting with ~/ (the home directory on the host)."));
    entry.sshConfig = text("sshConfig").toStdString();
    entry.knownHosts = text("knownHosts").toStdString();
    return valid;
}

bool HostsDialog::saveHost()
{
    remote::SshHostEntry entry;
    if (!readForm(entry)) {
        showProblem(tr("The host was not saved: fix the fields marked in red."));
        return false;
    }
    if (auto put = m_registry.put(entry); !put) {
        showProblem(tr("Cannot save the host: %1").arg(qs(put.error().toString())));
        return false;
    }
    const QString newName = qs(entry.name);
    if (!m_editing.isEmpty() && m_editing != newName) {
        if (auto removed = m_registry.remove(m_editing.toStdString()); !removed)
            showProblem(tr("Saved as %1, but the old entry %2 could not be removed: %3")
                            .arg(newName, m_editing, qs(removed.error().toString())));
    }
    m_problem->setVisible(false);
    m_editing = newName;
    reload();
    emit hostsChanged();
    return true;
}

void HostsDialog::removeSelectedHost()
{
    if (m_editing.isEmpty())
        return;
    if (auto removed = m_registry.remove(m_editing.toStdString()); !removed) {
        showProblem(tr("Cannot remove %1: %2").arg(m_editing, qs(removed.error().toString())));
        return;
    }
    m_editing.clear();
    reload();
    emit hostsChanged();
}

void HostsDialog::testConnection()
{
    remote::SshHostEntry entry;
    if (m_testing || !readForm(entry)) {
        if (!m_testing)
            showProblem(tr("Fix the fields marked in red before testing."));
        return;
    }
    runTest(entry, false);
}

void HostsDialog::runTest(const remote::SshHostEntry& entry, bool acceptNew)
{
    setTesting(true);
    m_problem->setVisible(false);
    m_result->setPlainText(tr("Connecting to %1…").arg(qs(entry.name)));
    startHostConnectionTest(entry, acceptNew, this,
                            [this, entry](const HostTestResult& result) { onTestFinished(entry, result); });
}

void HostsDialog::onTestFinished(const remote::SshHostEntry& entry, const HostTestResult& result)
{
    setTesting(false);
    using Verdict = remote::HostKeyInfo::Verdict;
    const Verdict verdict = result.hostKey.verdict;
    if (!result.connected && (verdict == Verdict::Unknown || verdict == Verdict::Changed)) {
        const QString knownHosts = entry.knownHosts.empty() ? QStringLiteral("~/.ssh/known_hosts") : qs(entry.knownHosts);
        HostKeyFacts facts;
        facts.host = qs(entry.name) + (entry.host.empty() || entry.host == entry.name ? QString()
                                                                                   : QStringLiteral(" (%1)").arg(qs(entry.host)));
        facts.keyType = qs(result.hostKey.keyType);
        facts.fingerprint = qs(result.hostKey.fingerprint);
        facts.knownHostsPath = knownHosts;
        facts.message = result.error;
        m_result->setPlainText(result.error);
        if (verdict == Verdict::Unknown) {
            auto* dialog = new HostKeyDialog(HostKeyDialog::Kind::Unknown, facts, this);
            dialog->setAttribute(Qt::WA_DeleteOnClose);
            connect(dialog, &QDialog::accepted, this, [this, entry] { runTest(entry, true); });
            dialog->open();
            return;
        }
        const QStringList names = knownHostsNames(qs(entry.host.empty() ? entry.name : entry.host), entry.port,
                                                  qs(entry.sshConfig));
        facts.knownHostsLines = knownHostsLineNumbers(knownHosts, names);
        facts.removeCommand = QStringLiteral("ssh-keygen -R '%1' -f %2")
                                  .arg(names.isEmpty() ? qs(entry.name) : names.first(), knownHosts);
        auto* dialog = new HostKeyDialog(HostKeyDialog::Kind::Changed, facts, this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->open();
        return;
    }
    if (!result.connected) {
        m_result->setPlainText(tr("Connection failed:\n%1").arg(result.error));
        return;
    }
    QString text = tr("Connected as %1.").arg(result.connectedAs);
    if (verdict == Verdict::AcceptedNew)
        text += tr(" The host key %1 %2 was recorded in known_hosts.")
                    .arg(qs(result.hostKey.keyType), qs(result.hostKey.fingerprint));
    if (!result.report.isEmpty())
        text += QLatin1Char('\n') + result.report;
    if (!result.error.isEmpty())
        text += QLatin1Char('\n') + tr("The node check failed: %1").arg(result.error);
    else if (!result.moeTrainFound)
        text += QLatin1Char('\n') +
                tr("moe-train is not at that path on the host: build the runtime there (cmake -S runtime -B "
                   "build && cmake --build build) and enter the path of the built moe-train.");
    m_result->setPlainText(text);
}

void HostsDialog::setTesting(bool testing)
{
    m_testing = testing;
    m_busy->setVisible(testing);
    m_test->setEnabled(!testing);
}

void HostsDialog::showProblem(const QString& message)
{
    m_problem->setText(message);
    m_problem->setVisible(!message.isEmpty());
}

}  // namespace wb::ui
