// The hosts panel and the host-key dialog, offscreen, with real pieces: hosts.json through the
// real SshHostRegistry, and "Test connection" against a real OpenSSH sshd on 127.0.0.1
// (tests/remote/ssh_test_server.sh; skipped when sshd is not installed).
#include "remote/ssh_hosts.h"
#include "ssh_test_fixture.h"
#include "ui/host_key_dialog.h"
#include "ui/hosts_dialog.h"
#include "ui_test_main.h"

#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

using wb::remote::SshHostRegistry;
using wb::ui::HostKeyDialog;
using wb::ui::HostsDialog;

namespace {

void type(HostsDialog& dialog, const char* key, const QString& text)
{
    QLineEdit* edit = dialog.field(QLatin1String(key));
    QVERIFY(edit);
    edit->clear();
    QTest::keyClicks(edit, text);
}

std::string hostsFileOf(const QTemporaryDir& dir)
{
    return dir.filePath(QStringLiteral("hosts.json")).toStdString();
}

}  // namespace

class TestHostsDialog : public QObject {
    Q_OBJECT

private slots:
    void emptyMoeTrainMeansAuto();
    void addEditRemoveRoundTripsThroughHostsJson()
    {
        QTemporaryDir dir;
        HostsDialog dialog(QString::fromStdString(hostsFileOf(dir)));
        dialog.show();
        QCOMPARE(dialog.table()->rowCount(), 0);

        QTest::mouseClick(dialog.newButton(), Qt::LeftButton);
        type(dialog, "name", QStringLiteral("gpu1"));
        type(dialog, "host", QStringLiteral("10.0.0.5"));
        type(dialog, "user", QStringLiteral("alice"));
        type(dialog, "port", QStringLiteral("2222"));
        type(dialog, "moeTrain", QStringLiteral("/opt/moe/bin/moe-train"));
        QTest::mouseClick(dialog.saveButton(), Qt::LeftButton);

        auto saved = SshHostRegistry(hostsFileOf(dir)).find("gpu1");
        QVERIFY2(saved.ok(), saved.ok() ? "" : saved.error().toString().c_str());
        QCOMPARE(saved->host, std::string("10.0.0.5"));
        QCOMPARE(saved->user, std::string("alice"));
        QCOMPARE(saved->port, 2222);
        QCOMPARE(saved->moeTrain, std::string("/opt/moe/bin/moe-train"));
        QCOMPARE(dialog.table()->rowCount(), 1);
        QCOMPARE(dialog.table()->item(0, 3)->text(), QStringLiteral("2222"));


        // Edit: change the port and rename; the old name is gone, not duplicated.
        dialog.table()->selectRow(0);
        QCOMPARE(dialog.field(QStringLiteral("name"))->text(), QStringLiteral("gpu1"));
        type(dialog, "port", QStringLiteral("22"));
        type(dialog, "name", QStringLiteral("gpu-a"));
        QTest::mouseClick(dialog.saveButton(), Qt::LeftButton);
        auto all = SshHostRegistry(hostsFileOf(dir)).load();
        QVERIFY(all.ok());
        QCOMPARE(all->size(), size_t(1));
        QCOMPARE(all->front().name, std::string("gpu-a"));
        QCOMPARE(all->front().port, 22);
        QCOMPARE(all->front().user, std::string("alice"));

        // Remove.
        dialog.table()->selectRow(0);
        QVERIFY(dialog.removeButton()->isEnabled());
        QTest::mouseClick(dialog.removeButton(), Qt::LeftButton);
        all = SshHostRegistry(hostsFileOf(dir)).load();
        QVERIFY(all.ok());
        QVERIFY(all->empty());
        QCOMPARE(dialog.table()->rowCount(), 0);
    }

    void invalidInputIsRefusedWithTheReason_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("errorSays");
        QTest::newRow("user@ in name") << "name" << "alice@gpu1" << "'@'";
        QTest::newRow("port in name") << "name" << "gpu1:22" << "':'";
        QTest::newRow("leading dash") << "name" << "-oProxyCommand=x" << "'-'";
        QTest::newRow("empty name") << "name" << "" << "name is needed";
        QTest::newRow("port zero") << "port" << "0" << "1 to 65535";
        QTest::newRow("port too big") << "port" << "65536" << "1 to 65535";
        QTest::newRow("port not a number") << "port" << "ssh" << "1 to 65535";
        QTest::newRow("relative moe-train") << "moeTrain" << "bin/moe-train" << "absolute path";
    }

    void invalidInputIsRefusedWithTheReason()
    {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, errorSays);
        QTemporaryDir dir;
        HostsDialog dialog(QString::fromStdString(hostsFileOf(dir)));
        dialog.show();
        type(dialog, "name", QStringLiteral("gpu1"));
        type(dialog, "moeTrain", QStringLiteral("~/bin/moe-train"));
        type(dialog, key.toLatin1().constData(), value);
        QTest::mouseClick(dialog.saveButton(), Qt::LeftButton);
        QVERIFY2(dialog.fieldError(key).contains(errorSays), qPrintable(dialog.fieldError(key)));
        QVERIFY(!QFile::exists(QString::fromStdString(hostsFileOf(dir))));  // nothing written
        // Fixing the field clears the message and saves.
        type(dialog, key.toLatin1().constData(),
             key == u"name" ? QStringLiteral("gpu1") : key == u"port" ? QStringLiteral("22")
                                                                     : QStringLiteral("~/bin/moe-train"));
        QVERIFY(dialog.fieldError(key).isEmpty());
        QVERIFY(dialog.saveHost());
        QVERIFY(SshHostRegistry(hostsFileOf(dir)).find("gpu1").ok());
    }

    void knownHostsLinesAreFoundPlainAndHashed()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("known_hosts"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        // Line 3 is "|1|salt|HMAC-SHA1(salt, "[10.0.0.9]:2222")", as HashKnownHosts writes it.
        const QByteArray salt = QByteArray::fromHex("00112233445566778899aabbccddeeff00112233");
        const QByteArray hash = QMessageAuthenticationCode::hash("[10.0.0.9]:2222", salt, QCryptographicHash::Sha1);
        file.write("# comment\nother.example ssh-ed25519 AAAA\n|1|" + salt.toBase64() + "|" + hash.toBase64() +
                   " ssh-ed25519 AAAB\n[127.0.0.1]:2200,gpu7 ssh-ed25519 AAAC\n");
        file.close();
        QCOMPARE(wb::ui::knownHostsLineNumbers(path, {QStringLiteral("[10.0.0.9]:2222")}), std::vector<int>{3});
        QCOMPARE(wb::ui::knownHostsLineNumbers(path, {QStringLiteral("gpu7")}), std::vector<int>{4});
        QVERIFY(wb::ui::knownHostsLineNumbers(path, {QStringLiteral("10.0.0.9")}).empty());

        const QString config = dir.filePath(QStringLiteral("ssh_config"));
        QFile cfg(config);
        QVERIFY(cfg.open(QIODevice::WriteOnly));
        cfg.write("Host other\n  Port 1\nHost gpu*\n  HostName 10.0.0.9\n  Port 2222\n");
        cfg.close();
        QCOMPARE(wb::ui::knownHostsNames(QStringLiteral("gpu3"), 0, config),
                 QStringList({QStringLiteral("[10.0.0.9]:2222"), QStringLiteral("[gpu3]:2222")}));
    }

    // Unknown key: the dialog shows the fingerprint sshd really has; Accept records it in
    // known_hosts (through SshHostSpec::acceptNewHostKey) and the test then connects. A CHANGED key
    // afterwards: a warning with no accept button that names the known_hosts line to remove.
    void hostKeyDialogAgainstRealSshd()
    {
        wbtest::SshServer server;
        if (const std::string why = server.start(); !why.empty()) {
            if (why.find("exit 77") != std::string::npos)
                QSKIP("sshd is not installed (apt-get install openssh-server)");
            QFAIL(why.c_str());
        }
        QTemporaryDir dir;
        wb::remote::SshHostEntry entry;
        entry.name = "wbtest";
        entry.sshConfig = server.dir() + "/ssh_config";
        entry.knownHosts = server.dir() + "/known_hosts";
        entry.moeTrain = "/bin/true";  // a file that exists, standing in for moe-train here
        QVERIFY(SshHostRegistry(hostsFileOf(dir)).put(entry).ok());

        HostsDialog dialog(QString::fromStdString(hostsFileOf(dir)));
        dialog.show();
        QCOMPARE(dialog.field(QStringLiteral("name"))->text(), QStringLiteral("wbtest"));
        QTest::mouseClick(dialog.testButton(), Qt::LeftButton);
        QVERIFY(dialog.isTesting());
        QVERIFY(dialog.findChild<QProgressBar*>(QStringLiteral("testBusy"))->isVisible());

        HostKeyDialog* ask = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((ask = dialog.findChild<HostKeyDialog*>(QStringLiteral("hostKeyUnknownDialog"))), 30000);
        const QString fingerprint = QString::fromStdString(server.fingerprint());
        QVERIFY(fingerprint.startsWith(QStringLiteral("SHA256:")));
        QVERIFY2(ask->text().contains(fingerprint), qPrintable(ask->text()));
        QVERIFY(ask->text().contains(QStringLiteral("ssh-ed25519")));
        QVERIFY(!QFile::exists(QString::fromStdString(entry.knownHosts)) ||
                wbtest::readAll(entry.knownHosts).empty());  // nothing recorded before Accept
        QVERIFY(ask->acceptButton());
        QTest::mouseClick(ask->acceptButton(), Qt::LeftButton);

        QTRY_VERIFY_WITH_TIMEOUT(dialog.testResultText().startsWith(QStringLiteral("Connected as")), 30000);
        QVERIFY2(dialog.testResultText().contains(QStringLiteral("recorded in known_hosts")),
                 qPrintable(dialog.testResultText()));
        QVERIFY2(dialog.testResultText().contains(QStringLiteral("GPUs: ")), qPrintable(dialog.testResultText()));
        const std::string knownHosts = wbtest::readAll(entry.knownHosts);
        QVERIFY2(knownHosts.find(std::to_string(server.port())) != std::string::npos, knownHosts.c_str());
        QVERIFY(!dialog.isTesting());

        // A second test: the key is known now, no dialog.
        QTest::mouseClick(dialog.testButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!dialog.isTesting(), 30000);
        QVERIFY2(dialog.testResultText().startsWith(QStringLiteral("Connected as")), qPrintable(dialog.testResultText()));
        QVERIFY(!dialog.testResultText().contains(QStringLiteral("recorded in known_hosts")));

        // The host "is reinstalled": same address, a new host key.
        server.stop();
        QVERIFY(server.start("host_key_new").empty());
        QTest::mouseClick(dialog.testButton(), Qt::LeftButton);
        HostKeyDialog* warn = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((warn = dialog.findChild<HostKeyDialog*>(QStringLiteral("hostKeyChangedDialog"))), 30000);
        QVERIFY(!warn->acceptButton());
        const auto buttons = warn->findChildren<QPushButton*>();
        for (auto* button : buttons)
            QVERIFY2(!button->text().contains(QStringLiteral("ccept")), qPrintable(button->text()));
        QVERIFY2(warn->text().contains(QString::fromStdString(server.fingerprint("host_key_new"))), qPrintable(warn->text()));
        QVERIFY2(warn->text().contains(QStringLiteral("line 1 of")), qPrintable(warn->text()));
        QVERIFY2(warn->text().contains(QStringLiteral("ssh-keygen -R '[127.0.0.1]:%1'").arg(server.port())),
                 qPrintable(warn->text()));
        QCOMPARE(wbtest::readAll(entry.knownHosts), knownHosts);  // untouched
        warn->close();
        server.stop();
    }
};

void TestHostsDialog::emptyMoeTrainMeansAuto()
{
    QTemporaryDir dir;
    HostsDialog dialog(QString::fromStdString(hostsFileOf(dir)));
    dialog.show();
    // An empty moe-train path means "auto": the workbench builds it on the host.
    QTest::mouseClick(dialog.newButton(), Qt::LeftButton);
    type(dialog, "name", QStringLiteral("built-there"));
    type(dialog, "moeTrain", QString());
    QTest::mouseClick(dialog.saveButton(), Qt::LeftButton);
    auto provisioned = SshHostRegistry(hostsFileOf(dir)).find("built-there");
    QVERIFY2(provisioned.ok(), provisioned.ok() ? "" : provisioned.error().toString().c_str());
    QCOMPARE(provisioned->moeTrain, std::string("auto"));
    QCOMPARE(dialog.table()->item(0, 4)->text(), QStringLiteral("auto"));
}

WB_UI_TEST_MAIN(TestHostsDialog)
#include "test_hosts_dialog.moc"
