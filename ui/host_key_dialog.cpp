#include "ui/host_key_dialog.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageAuthenticationCode>
#include <QPushButton>
#include <QRegularExpression>
#include <QStyle>
#include <QTextStream>
#include <QThread>
#include <QVBoxLayout>

namespace wb::ui {
namespace {

QString expandHome(const QString& path)
{
    return path.startsWith(QStringLiteral("~/")) ? QDir::homePath() + path.mid(1) : path;
}

// One host pattern of a known_hosts line against a name: plain, or hashed |1|salt|hash
// (HMAC-SHA1 of the name keyed by the salt, as OpenSSH's HashKnownHosts writes it).
bool hostFieldMatches(const QString& field, const QString& name)
{
    if (field.startsWith(QStringLiteral("|1|"))) {
        const QStringList parts = field.split(QLatin1Char('|'));
        if (parts.size() != 4)
            return false;
        const QByteArray salt = QByteArray::fromBase64(parts[2].toLatin1());
        const QByteArray hash = QMessageAuthenticationCode::hash(name.toUtf8(), salt, QCryptographicHash::Sha1);
        return hash.toBase64() == parts[3].toLatin1();
    }
    for (const QString& pattern : field.split(QLatin1Char(',')))
        if (pattern == name)
            return true;
    return false;
}

}  // namespace

HostKeyDialog::HostKeyDialog(Kind kind, HostKeyFacts facts, QWidget* parent) : QDialog(parent), m_kind(kind)
{
    setObjectName(kind == Kind::Unknown ? QStringLiteral("hostKeyUnknownDialog") : QStringLiteral("hostKeyChangedDialog"));
    setWindowTitle(kind == Kind::Unknown ? tr("Unknown host key") : tr("WARNING: host key changed"));
    auto* icon = new QLabel(this);
    icon->setPixmap(style()
                        ->standardIcon(kind == Kind::Unknown ? QStyle::SP_MessageBoxQuestion
                                                             : QStyle::SP_MessageBoxCritical)
                        .pixmap(48, 48));
    icon->setAlignment(Qt::AlignTop);

    const QString facts1 = tr("<table><tr><td>Host:</td><td><b>%1</b></td></tr>"
                              "<tr><td>Key type:</td><td>%2</td></tr>"
                              "<tr><td>Fingerprint:</td><td><tt>%3</tt></td></tr></table>")
                               .arg(facts.host.toHtmlEscaped(), facts.keyType.toHtmlEscaped(),
                                    facts.fingerprint.toHtmlEscaped());
    QString text;
    if (kind == Kind::Unknown) {
        text = tr("<p>This computer has never connected to this host before, so it cannot tell "
                  "whether the key really belongs to it.</p>%1"
                  "<p>Compare the fingerprint with the one the host's administrator gives you (on the "
                  "host: <tt>ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub</tt>). Accept only if "
                  "they match: the key is then recorded in <tt>%2</tt> and checked on every "
                  "connection.</p>")
                   .arg(facts1, facts.knownHostsPath.toHtmlEscaped());
    } else {
        QStringList lines;
        for (int line : facts.knownHostsLines)
            lines << QString::number(line);
        const QString where = lines.isEmpty()
                                  ? tr("the entry for this host in <tt>%1</tt>").arg(facts.knownHostsPath.toHtmlEscaped())
                                  : tr("line %1 of <tt>%2</tt>", nullptr, static_cast<int>(lines.size()))
                                        .arg(lines.join(QStringLiteral(", ")), facts.knownHostsPath.toHtmlEscaped());
        text = tr("<p><b>The host now presents a different key from the one recorded for it. The "
                  "connection was refused.</b></p>%1"
                  "<p>Either someone is intercepting the connection (a man-in-the-middle attack that "
                  "could read your commands and data), or the host was reinstalled and got a new "
                  "key. Ask the host's administrator which it is before doing anything.</p>"
                  "<p>Only if they confirm the new key: remove %2, for example with<br><tt>%3</tt><br>"
                  "then test the connection again to review and accept the new fingerprint.</p>"
                  "<p>The workbench never accepts a changed key by itself.</p>")
                   .arg(facts1, where, facts.removeCommand.toHtmlEscaped());
    }
    m_text = new QLabel(text, this);
    m_text->setObjectName(QStringLiteral("hostKeyText"));
    m_text->setWordWrap(true);
    m_text->setTextFormat(Qt::RichText);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->setMinimumWidth(520);
    if (!facts.message.isEmpty())
        m_text->setToolTip(facts.message);

    auto* buttons = new QDialogButtonBox(this);
    if (kind == Kind::Unknown) {
        m_accept = buttons->addButton(tr("&Accept and connect"), QDialogButtonBox::AcceptRole);
        m_accept->setObjectName(QStringLiteral("acceptHostKeyButton"));
        buttons->addButton(QDialogButtonBox::Cancel)->setDefault(true);  // the safe choice is the default
    } else {
        buttons->addButton(QDialogButtonBox::Close)->setDefault(true);
    }
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* row = new QHBoxLayout;
    row->addWidget(icon);
    row->addWidget(m_text, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(buttons);
}

QString HostKeyDialog::text() const
{
    return m_text->text();
}

std::vector<int> knownHostsLineNumbers(const QString& path, const QStringList& names)
{
    std::vector<int> found;
    QFile file(expandHome(path));
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return found;
    QTextStream in(&file);
    int number = 0;
    while (!in.atEnd()) {
        const QString line = in.readLine().trimmed();
        ++number;
        if (line.isEmpty() || line.startsWith(QLatin1Char('#')))
            continue;
        QStringList fields = line.split(QLatin1Char(' '), Qt::SkipEmptyParts);
        if (!fields.isEmpty() && fields[0].startsWith(QLatin1Char('@')))  // @cert-authority / @revoked
            fields.removeFirst();
        if (fields.isEmpty())
            continue;
        for (const QString& name : names)
            if (hostFieldMatches(fields[0], name)) {
                found.push_back(number);
                break;
            }
    }
    return found;
}

QStringList knownHostsNames(const QString& host, int port, const QString& sshConfig)
{
    // The ssh config's first matching HostName / Port win, as in ssh_config(5). Only "Host"
    // patterns are understood (no Match blocks): good enough to point at the right line.
    QString hostName;
    int configPort = 0;
    QFile file(expandHome(sshConfig.isEmpty() ? QStringLiteral("~/.ssh/config") : sshConfig));
    if (file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        QTextStream in(&file);
        bool inBlock = false;
        while (!in.atEnd()) {
            const QStringList words = in.readLine().trimmed().split(QRegularExpression(QStringLiteral("[\\s=]+")),
                                                                     Qt::SkipEmptyParts);
            if (words.size() < 2 || words[0].startsWith(QLatin1Char('#')))
                continue;
            const QString key = words[0].toLower();
            if (key == u"host" || key == u"match") {
                inBlock = false;
                for (qsizetype i = 1; key == u"host" && i < words.size(); ++i)
                    if (QRegularExpression(QRegularExpression::wildcardToRegularExpression(words[i])).match(host).hasMatch())
                        inBlock = true;
            } else if (inBlock && key == u"hostname" && hostName.isEmpty()) {
                hostName = words[1];
            } else if (inBlock && key == u"port" && configPort == 0) {
                configPort = words[1].toInt();
            }
        }
    }
    const int effectivePort = port > 0 ? port : (configPort > 0 ? configPort : 22);
    QStringList names;
    for (const QString& name : {hostName, host}) {
        if (name.isEmpty() || names.contains(name))
            continue;
        names << (effectivePort == 22 ? name : QStringLiteral("[%1]:%2").arg(name).arg(effectivePort));
    }
    return names;
}

namespace {

// On a worker: shows the prompt dialog on the GUI thread over parentOf() and waits for it.
// Blocking: the SSH worker waits here while the GUI thread shows the dialog. The GUI thread never
// waits on this worker, so this cannot deadlock.
std::optional<std::string> askOnGuiThread(const std::function<bool(QWidget*&)>& parentOf, const QString& title,
                                          const std::string& prompt, bool echo)
{
    Q_ASSERT(QThread::currentThread() != qApp->thread());
    std::optional<std::string> answer;
    QMetaObject::invokeMethod(
        qApp,
        [&] {
            QWidget* parent = nullptr;
            if (!parentOf(parent))
                return;
            bool ok = false;
            QString text = QInputDialog::getText(parent, title, QString::fromStdString(prompt),
                                                 echo ? QLineEdit::Normal : QLineEdit::Password, QString(), &ok);
            if (ok)
                answer = text.toStdString();
            text.fill(QLatin1Char(' '));  // not kept: the worker uses it once and wipes its copy
        },
        Qt::BlockingQueuedConnection);
    return answer;
}

}  // namespace

std::function<std::optional<std::string>(const std::string& prompt, bool echo)> makeGuiSecretPrompt(
    QPointer<QWidget> parent, QString hostLabel)
{
    return [parent, hostLabel](const std::string& prompt, bool echo) -> std::optional<std::string> {
        const auto parentOf = [&parent](QWidget*& out) {
            out = parent;
            return out != nullptr;  // the owner is gone: nobody to ask
        };
        return askOnGuiThread(parentOf,
                              QCoreApplication::translate("wb::ui::HostKeyDialog", "Sign in to %1").arg(hostLabel),
                              prompt, echo);
    };
}

std::function<std::optional<std::string>(const std::string& prompt, bool echo)> makeGuiSecretPromptOverActiveWindow()
{
    return [](const std::string& prompt, bool echo) -> std::optional<std::string> {
        const auto parentOf = [](QWidget*& out) {
            out = QApplication::activeWindow();  // may be null: a top-level dialog then
            return true;
        };
        return askOnGuiThread(parentOf, QCoreApplication::translate("wb::ui::HostKeyDialog", "SSH sign-in"), prompt,
                              echo);
    };
}

}  // namespace wb::ui
