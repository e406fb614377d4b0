// ProxyJump::rewrite (no network): libssh 0.10's ProxyJump command becomes OpenSSH's — hops in
// ProxyJump order, -F for the host's own config file, every word quoted, '%' escaped for libssh,
// stderr to the given file — and a ProxyCommand the user wrote is not touched. The rewritten
// command is also run through sh to a stand-in ssh. test_ssh_jump runs it against real sshd.
#include "remote/proxy_jump.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

using wb::remote::ProxyJump;

class TestProxyJump : public QObject {
    Q_OBJECT

private slots:
    void rewrite_data()
    {
        QTest::addColumn<QString>("libssh");  // what libssh 0.10's config.c built
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("command");  // expected; "" = not recognized, left alone
        QTest::addColumn<QString>("hops");
        QTest::addColumn<QString>("byHand");
        const QString w = QStringLiteral(" -W '[%h]:%p' ");
        const QString err = QStringLiteral(" 2>'/tmp/e'");
        QTest::newRow("one hop") << "ssh" + w + "jump" << QString() << "ssh" + w + "'jump'" + err
                                 << "jump" << "ssh jump";
        QTest::newRow("one hop, own config") << "ssh" + w + "jump" << "/etc/wb cfg/100%"
                                             << "ssh -F '/etc/wb cfg/100%%'" + w + "'jump'" + err << "jump"
                                             << "ssh -F '/etc/wb cfg/100%' jump";
        QTest::newRow("user and port") << "ssh -l ann -p 2222" + w + "bastion" << QString()
                                       << "ssh -l 'ann' -p '2222'" + w + "'bastion'" + err
                                       << "ann@bastion:2222" << "ssh -l ann -p 2222 bastion";
        // libssh's own unit test: ProxyJump u1@first:222,u2@second:33.
        QTest::newRow("two hops reordered") << "ssh -l u1 -p 222 -J u2@second:33" + w + "first" << QString()
                                            << "ssh -l 'u2' -p '33' -J 'u1@first:222'" + w + "'second'" + err
                                            << "u1@first:222,u2@second:33"
                                            << "ssh -l u2 -p 33 -J u1@first:222 second";
        QTest::newRow("three hops") << "ssh -J b,c@cc" + w + "a" << "f"
                                    << "ssh -F 'f' -l 'c' -J 'a,b'" + w + "'cc'" + err << "a,b,c@cc"
                                    << "ssh -F f -l c -J a,b cc";
        QTest::newRow("ipv6") << "ssh -p 2222 -J [::1]:22" + w + "2620:52::fed" << QString()
                              << "ssh -p '22' -J '[2620:52::fed]:2222'" + w + "'::1'" + err
                              << "[2620:52::fed]:2222,[::1]:22" << "ssh -p 22 -J '[2620:52::fed]:2222' ::1";
        QTest::newRow("user with @") << "ssh -J user@principal.com@jumpbox:22" + w + "localhost" << QString()
                                     << "ssh -l 'user@principal.com' -p '22' -J 'localhost'" + w + "'jumpbox'" + err
                                     << "localhost,user@principal.com@jumpbox:22"
                                     << "ssh -l user@principal.com -p 22 -J localhost jumpbox";
        QTest::newRow("libssh before 0.10.5") << "ssh -W [%h]:%p jump" << QString() << "ssh" + w + "'jump'" + err
                                              << "jump" << "ssh jump";
        QTest::newRow("shell in a host name") << "ssh" + w + "$(touch${IFS}x)" << QString()
                                              << "ssh" + w + "'$(touch${IFS}x)'" + err << "$(touch${IFS}x)"
                                              << "ssh '$(touch${IFS}x)'";
        QTest::newRow("user's netcat") << "nc %h %p" << "f" << QString() << QString() << QString();
        QTest::newRow("user's ssh -W") << "ssh -W %h:%p bastion" << "f" << QString() << QString() << QString();
        QTest::newRow("user's ssh with -o") << "ssh -o X=y" + w + "bastion" << "f" << QString() << QString()
                                            << QString();
        QTest::newRow("option without value") << "ssh -l" + w + "bastion" << "f" << QString() << QString()
                                              << QString();
        QTest::newRow("empty") << QString() << "f" << QString() << QString() << QString();
    }

    void rewrite()
    {
        QFETCH(QString, libssh);
        QFETCH(QString, config);
        QFETCH(QString, command);
        QFETCH(QString, hops);
        QFETCH(QString, byHand);
        const auto result = ProxyJump::rewrite(libssh.toStdString(), config.toStdString(), "/tmp/e");
        if (command.isEmpty()) {
            QVERIFY2(!result, result ? result->command.c_str() : "");
            return;
        }
        QVERIFY(result);
        QCOMPARE(QString::fromStdString(result->command), command);
        QCOMPARE(QString::fromStdString(result->hops), hops);
        QCOMPARE(QString::fromStdString(result->byHand), byHand);
    }

    // The words reach ssh intact through a real shell: a stand-in `ssh` first on PATH prints its
    // arguments one per line (after libssh's %-expansion, which this test does by hand for %%).
    void commandRunsThroughShell()
    {
        QTemporaryDir dir;
        const QString fake = dir.filePath(QStringLiteral("ssh"));
        std::ofstream(fake.toStdString()) << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n";
        QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        const std::string stderrPath = dir.filePath(QStringLiteral("err file")).toStdString();
        auto result = ProxyJump::rewrite("ssh -l u1 -J b;c,$(id)@d -W '[%h]:%p' a", "/x y/50%", stderrPath);
        QVERIFY(result);
        std::string expanded;  // libssh: %h -> host, %p -> port, %% -> %
        for (size_t i = 0; i < result->command.size(); ++i) {
            const char c = result->command[i];
            if (c == '%' && i + 1 < result->command.size()) {
                const char n = result->command[++i];
                expanded += n == 'h' ? std::string("target") : n == 'p' ? std::string("22") : std::string(1, n);
            } else {
                expanded += c;
            }
        }
        QProcess sh;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PATH"), dir.path() + QStringLiteral(":/usr/bin:/bin"));
        sh.setProcessEnvironment(env);
        sh.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QString::fromStdString("exec " + expanded)});
        QVERIFY(sh.waitForFinished(10000));
        const QStringList args = QString::fromUtf8(sh.readAllStandardOutput()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        const QStringList expected = {QStringLiteral("-F"), QStringLiteral("/x y/50%"), QStringLiteral("-l"),
                                      QStringLiteral("$(id)"), QStringLiteral("-J"), QStringLiteral("u1@a,b;c"),
                                      QStringLiteral("-W"), QStringLiteral("[target]:22"), QStringLiteral("d")};
        QCOMPARE(args, expected);
        QVERIFY(QFile::exists(QString::fromStdString(stderrPath)));  // the 2> went to the file
    }
};

QTEST_GUILESS_MAIN(TestProxyJump)
#include "test_proxy_jump.moc"
