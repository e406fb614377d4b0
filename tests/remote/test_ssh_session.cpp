// SshSession and shellQuote against a real OpenSSH sshd on 127.0.0.1 (ssh_test_fixture.h):
// host-key verification (unknown refused until accepted, changed always refused), ssh config
// handling, command execution, SFTP, and shell quoting checked by actually running the quoted
// words through sh -c here and through the login shell over SSH.
#include "remote/ssh_session.h"
#include "ssh_test_fixture.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <filesystem>

using namespace wb;
using wb::remote::HostKeyInfo;
using wb::remote::SshSession;

namespace {

constexpr auto kTimeout = std::chrono::seconds(20);

// What a quoted `printf '%s' WORD` prints when run by /bin/sh here.
std::string printLocally(const std::string& command)
{
    QProcess sh;
    sh.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QString::fromStdString(command)});
    sh.waitForFinished(10000);
    return sh.readAllStandardOutput().toStdString();
}

}  // namespace

class TestSshSession : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_server;
    std::unique_ptr<SshSession> m_session;  // connected once the host key is accepted
    QTemporaryDir m_scratch;

    SshSession& session()
    {
        if (!m_session) {
            auto s = SshSession::connect(m_server.spec());
            if (!s)
                qFatal("connect failed: %s", s.error().toString().c_str());
            m_session = std::move(*s);
        }
        return *m_session;
    }

private slots:
    void initTestCase()
    {
        // The user's agent must not make key tests pass or fail by accident.
        qunsetenv("SSH_AUTH_SOCK");
        if (!std::filesystem::exists("/usr/sbin/sshd"))
            QSKIP("OpenSSH sshd is not installed (/usr/sbin/sshd missing): apt-get install openssh-server");
        const std::string why = m_server.start();
        if (!why.empty())
            QFAIL(("cannot start sshd: " + why).c_str());
    }

    void cleanupTestCase()
    {
        m_session.reset();
        m_server.stop();
    }

    // First contact: the key is unknown, so connect refuses and reports the fingerprint; only an
    // explicit accept records it, after which it is simply known.
    void unknownHostKeyRefusedUntilAccepted()
    {
        const std::string expected = m_server.fingerprint();
        QVERIFY(expected.rfind("SHA256:", 0) == 0);

        HostKeyInfo info;
        auto refused = SshSession::connect(m_server.spec(false), &info);
        QVERIFY(!refused);
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Unknown);
        QCOMPARE(info.fingerprint, expected);
        QCOMPARE(info.keyType, std::string("ssh-ed25519"));
        QVERIFY2(refused.error().message.find(expected) != std::string::npos, refused.error().message.c_str());
        QVERIFY(refused.error().message.find("--accept-new-host-key") != std::string::npos);
        QVERIFY(wbtest::readAll(m_server.dir() + "/known_hosts").empty());

        auto accepted = SshSession::connect(m_server.spec(true), &info);
        QVERIFY2(accepted, accepted ? "" : accepted.error().toString().c_str());
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::AcceptedNew);
        QVERIFY(!wbtest::readAll(m_server.dir() + "/known_hosts").empty());

        auto known = SshSession::connect(m_server.spec(false), &info);
        QVERIFY2(known, known ? "" : known.error().toString().c_str());
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Known);
    }

    void runsCommandWithStatusAndStreams()
    {
        auto result = session().run("echo out; echo err >&2; exit 3", kTimeout);
        QVERIFY2(result, result ? "" : result.error().toString().c_str());
        QCOMPARE(result->exitStatus, 3);
        QCOMPARE(result->out, std::string("out\n"));
        QCOMPARE(result->err, std::string("err\n"));
        // Larger than one channel window and one read chunk.
        auto big = session().run("head -c 3000000 /dev/zero", kTimeout);
        QVERIFY(big);
        QCOMPARE(big->out.size(), size_t(3000000));
        QCOMPARE(big->exitStatus, 0);
        QVERIFY(session().describe().find("@127.0.0.1:" + std::to_string(m_server.port())) != std::string::npos);
    }

    // The config's Port is used (we reached the server at all), and an explicit port overrides it.
    void explicitPortOverridesConfig()
    {
        auto spec = m_server.spec();
        spec.port = wbtest::freePort();
        auto failed = SshSession::connect(spec);
        QVERIFY(!failed);
        QCOMPARE(failed.error().code, core::ErrorCode::IoError);
        const std::string portSuffix = std::string(1, ':').append(std::to_string(spec.port));
        QVERIFY(failed.error().context.find(portSuffix) != std::string::npos);
    }

    void refusesWithoutAnAuthorizedKey()
    {
        // A config without IdentityFile and a fresh HOME-independent key that is not authorized.
        const std::string config = m_server.dir() + "/ssh_config_nokey";
        QProcess::execute(QStringLiteral("ssh-keygen"), {QStringLiteral("-q"), QStringLiteral("-t"), QStringLiteral("ed25519"),
                                                      QStringLiteral("-N"), QString(), QStringLiteral("-f"),
                                                      QString::fromStdString(m_server.dir() + "/stranger_key")});
        std::ofstream(config) << "Host wbtest\n  HostName 127.0.0.1\n  Port " << m_server.port()
                              << "\n  IdentityFile " << m_server.dir() << "/stranger_key\n  IdentitiesOnly yes\n";
        auto spec = m_server.spec();
        spec.sshConfigFile = config;
        auto refused = SshSession::connect(spec);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, core::ErrorCode::Failed);
        QVERIFY2(refused.error().message.find("authentication refused") != std::string::npos,
                 refused.error().message.c_str());
    }

    void sftpWriteAndReadFromOffset()
    {
        const std::string path = m_scratch.filePath(QStringLiteral("a file 'with' quotes.txt")).toStdString();
        QVERIFY(session().writeFile(path, "hello\nworld\n", 0600));
        QCOMPARE(wbtest::readAll(path), std::string("hello\nworld\n"));
        struct stat st{};
        QCOMPARE(::stat(path.c_str(), &st), 0);
        QCOMPARE(int(st.st_mode & 0777), 0600);
        QVERIFY(session().writeFile(path, "replaced\n"));  // over an existing file
        QCOMPARE(wbtest::readAll(path), std::string("replaced\n"));
        auto chunk = session().readFile(path, 3, 4);
        QVERIFY(chunk);
        QVERIFY(chunk->exists);
        QCOMPARE(chunk->fileSize, int64_t(9));
        QCOMPARE(chunk->bytes, std::string("lace"));
        auto tail = session().readFile(path, 9, 100);
        QVERIFY(tail && tail->bytes.empty());
        auto missing = session().readFile(path + ".nope", 0, 100);
        QVERIFY(missing);
        QVERIFY(!missing->exists);
    }

    void quoting_data()
    {
        QTest::addColumn<QByteArray>("word");
        QTest::newRow("plain") << QByteArray("plain");
        QTest::newRow("empty") << QByteArray("");
        QTest::newRow("spaces") << QByteArray("name with  two spaces ");
        QTest::newRow("single quote") << QByteArray("it's");
        QTest::newRow("only quotes") << QByteArray("''");
        QTest::newRow("escaped quote text") << QByteArray("'\\''");
        QTest::newRow("double quotes") << QByteArray("say \"hi\"");
        QTest::newRow("command substitution") << QByteArray("$(touch CANARY)");
        QTest::newRow("backticks") << QByteArray("`touch CANARY`");
        QTest::newRow("variables") << QByteArray("$HOME ${PATH} $$ $1");
        QTest::newRow("newline") << QByteArray("line one\nline two");
        QTest::newRow("trailing newline") << QByteArray("ends with newline\n");
        QTest::newRow("tab and cr") << QByteArray("a\tb\rc");
        QTest::newRow("backslashes") << QByteArray("back\\slash\\\\n");
        QTest::newRow("glob") << QByteArray("*.json ?[ab]");
        QTest::newRow("operators") << QByteArray("a;b && c || d | e > f < g & h");
        QTest::newRow("option-like") << QByteArray("-n");
        QTest::newRow("bang and hash") << QByteArray("!x #not a comment ~root");
        QTest::newRow("utf-8") << QByteArray("r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93");
        QTest::newRow("mixed") << QByteArray("run '$(rm -rf ~)' \"`id`\"\n;$x");
    }

    void quoting()
    {
        QFETCH(QByteArray, word);
        const std::string text = word.toStdString();
        // The canary must never be created by any row: substitutions stay text.
        const std::string canaryDir = m_scratch.path().toStdString();
        const std::string cd = "cd " + remote::shellQuote(canaryDir) + " && ";
        const std::string command = cd + "printf '%s' " + remote::shellQuote(text);

        QCOMPARE(printLocally(command), text);
        auto overSsh = session().run(command, kTimeout);
        QVERIFY(overSsh);
        QCOMPARE(overSsh->out, text);
        // Two layers: the login shell runs sh -c with the quoted inner command.
        auto nested = session().run("sh -c " + remote::shellQuote(command), kTimeout);
        QVERIFY(nested);
        QCOMPARE(nested->out, text);
        QVERIFY(!std::filesystem::exists(canaryDir + "/CANARY"));

        // As a file name (not for names the filesystem cannot hold): created over SSH, found here
        // under exactly that name.
        if (!text.empty() && text.find('/') == std::string::npos) {
            const std::string path = canaryDir + "/" + text;
            auto touched = session().run("touch -- " + remote::shellQuote(path), kTimeout);
            QVERIFY(touched && touched->exitStatus == 0);
            QVERIFY(std::filesystem::exists(path));
            std::filesystem::remove(path);
        }
    }

    void quotingHomePaths()
    {
        auto home = session().run("printf '%s' \"$HOME\"", kTimeout);
        QVERIFY(home && !home->out.empty());
        auto path = session().run("printf '%s' " + remote::shellQuotePath("~/dir with 'q'/x"), kTimeout);
        QVERIFY(path);
        QCOMPARE(path->out, home->out + "/dir with 'q'/x");
        QCOMPARE(remote::shellQuotePath("/abs/~/p"), std::string("'/abs/~/p'"));
    }

    // A command past its deadline: IoError, and the session is given up (its late output must
    // not be read as another command's); a new session works.
    void commandTimeoutDropsTheSession()
    {
        QElapsedTimer timer;
        timer.start();
        auto slow = session().run("sleep 5", std::chrono::milliseconds(500));
        QVERIFY(!slow);
        QCOMPARE(slow.error().code, core::ErrorCode::IoError);
        QVERIFY(timer.elapsed() < 4000);
        QVERIFY(!session().isConnected());
        m_session.reset();
        auto again = session().run("echo back", kTimeout);
        QVERIFY(again && again->out == "back\n");
    }

    // Last: restarts sshd with another host key on the same address. Accepting new keys does not
    // extend to a changed one, and known_hosts is left alone.
    void changedHostKeyRefused()
    {
        m_session.reset();
        const std::string before = wbtest::readAll(m_server.dir() + "/known_hosts");
        m_server.stop();
        const std::string why = m_server.start("host_key_other");
        QVERIFY2(why.empty(), why.c_str());
        const std::string other = m_server.fingerprint("host_key_other");

        HostKeyInfo info;
        auto refused = SshSession::connect(m_server.spec(/*acceptNew=*/true), &info);
        QVERIFY(!refused);
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Changed);
        QCOMPARE(info.fingerprint, other);
        QVERIFY2(refused.error().message.find("CHANGED") != std::string::npos, refused.error().message.c_str());
        QVERIFY(refused.error().message.find(other) != std::string::npos);
        QCOMPARE(wbtest::readAll(m_server.dir() + "/known_hosts"), before);

        // The original key is accepted again without any prompt.
        m_server.stop();
        QVERIFY(m_server.start("host_key").empty());
        QVERIFY(SshSession::connect(m_server.spec(false)));
    }
};

QTEST_GUILESS_MAIN(TestSshSession)
#include "test_ssh_session.moc"
