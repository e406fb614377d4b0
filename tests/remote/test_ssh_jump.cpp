// SshSession through a ProxyJump, end to end: private OpenSSH sshd on 127.0.0.1
// (ssh_test_fixture.h) — "jump", "target" and "gate" (a first hop for `ProxyJump gate,jump`) —
// and a private ssh_config in which `Host target` has `ProxyJump jump`. libssh runs the OpenSSH
// client (`ssh -W ... jump`) for the first hop; the test proves the target's TCP peer is a process
// of the jump's sshd, that the target's host key (not the jump's) is the one verified, that two
// hops go in ProxyJump's order, and that a jump that is down, refuses forwarding or the key, or
// cannot be run gives an error naming the jump and saying why.
#include "remote/ssh_session.h"
#include "remote/subprocess.h"
#include "ssh_test_fixture.h"

#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <pwd.h>
#include <signal.h>

#include <filesystem>

using namespace wb;
using wb::remote::HostKeyInfo;
using wb::remote::SshSession;

namespace {

constexpr auto kTimeout = std::chrono::seconds(20);

// The inode of the TCP socket 127.0.0.1:localPort -> 127.0.0.1:remotePort, from /proc/net/tcp
// (hex "0100007F:PORT" addresses, the inode in the tenth column); 0 when there is none.
unsigned long tcpSocketInode(int localPort, int remotePort)
{
    std::istringstream table(wbtest::readAll("/proc/net/tcp"));
    std::string line;
    std::getline(table, line);  // header
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
        unsigned long inode = 0;
        if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
            continue;
        const auto port = [](const std::string& address) {
            return static_cast<int>(std::stol(address.substr(address.find(':') + 1), nullptr, 16));
        };
        if (port(local) == localPort && port(remote) == remotePort)
            return inode;
    }
    return 0;
}

// The process holding socket `inode` open (0 when none is visible to us).
pid_t socketOwner(unsigned long inode)
{
    const std::string wanted = "socket:[" + std::to_string(inode) + "]";
    for (const auto& process : std::filesystem::directory_iterator("/proc")) {
        const pid_t pid = static_cast<pid_t>(std::atol(process.path().filename().c_str()));
        if (pid <= 0)
            continue;
        std::error_code ec;
        for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", ec)) {
            std::error_code linkError;
            if (std::filesystem::read_symlink(fd.path(), linkError).string() == wanted)
                return pid;
        }
    }
    return 0;
}

bool descendsFrom(pid_t pid, pid_t ancestor)
{
    for (int depth = 0; depth < 8 && pid > 1; ++depth) {
        if (pid == ancestor)
            return true;
        pid_t parent = 0;
        std::string comm;
        if (!wbtest::parentAndName(pid, parent, comm))
            return false;
        pid = parent;
    }
    return false;
}

std::string userName()
{
    const passwd* pw = ::getpwuid(::getuid());
    return pw ? pw->pw_name : "";
}

}  // namespace

class TestSshJump : public QObject {
    Q_OBJECT

private:
    wbtest::SshServer m_jump;    // allows TCP forwarding (sshd's default), logs at DEBUG1
    wbtest::SshServer m_target;  // reached only through the jump in this test's config
    wbtest::SshServer m_gate;    // a first hop that may forward to the jump only
    QTemporaryDir m_client;      // ssh_config and the known_hosts files

    std::string clientPath(const char* name) const { return m_client.filePath(QLatin1String(name)).toStdString(); }

    remote::SshHostSpec spec(bool acceptNew = false) const
    {
        remote::SshHostSpec spec;
        spec.host = "target";
        spec.sshConfigFile = clientPath("ssh_config");
        spec.knownHostsFile = clientPath("known_hosts");
        spec.acceptNewHostKey = acceptNew;
        spec.connectTimeout = std::chrono::seconds(10);
        return spec;
    }

    // The ssh_config a user would write. The jump's block is what the OpenSSH client spawned for
    // the first hop reads (the workbench passes this file on with -F): it must authenticate and
    // verify the jump's key without asking, hence BatchMode and the pre-recorded known_hosts.
    // "elsewhere" is a port the jump may not forward to; "jump-down" a jump nobody listens for.
    void writeClientConfig()
    {
        const auto hop = [this](const std::string& alias, int port, const std::string& key, const std::string& via) {
            std::ostringstream block;
            block << "Host " << alias << "\n    HostName 127.0.0.1\n    Port " << port << "\n    User " << userName()
                  << "\n    IdentityFile " << key << "\n    IdentitiesOnly yes\n";
            if (!via.empty())
                block << "    ProxyJump " << via << "\n";
            else
                block << "    UserKnownHostsFile " << clientPath("jump_known_hosts")
                      << "\n    GlobalKnownHostsFile /dev/null\n    StrictHostKeyChecking yes\n    BatchMode yes\n";
            return block.str();
        };
        const std::string targetKey = m_target.dir() + "/user_key";
        const std::string jumpKey = m_jump.dir() + "/user_key";
        std::ofstream(clientPath("ssh_config"))
            << hop("target", m_target.port(), targetKey, "jump")
            << hop("elsewhere", m_jump.port(), targetKey, "jump")
            << hop("target-via-down-jump", m_target.port(), targetKey, "jump-down")
            << hop("target-two-hops", m_target.port(), targetKey, "gate,jump")
            << hop("jump", m_jump.port(), jumpKey, "") << hop("jump-down", wbtest::freePort(), jumpKey, "")
            << hop("gate", m_gate.port(), m_gate.dir() + "/user_key", "")
            // ProxyJump in its user@host:port form, to a jump that accepts no key this block offers.
            // ("localhost": libssh 0.10 matches Host lines against the HostName already set, so a
            // "Host 127.0.0.1" block would apply to the target as well.)
            << "Host target-via-keyless-jump\n    HostName 127.0.0.1\n    Port " << m_target.port()
            << "\n    ProxyJump " << userName() << "@localhost:" << m_jump.port() << "\n"
            << "Host localhost\n    AddressFamily inet\n    IdentityFile " << clientPath("no_such_key")
            << "\n    IdentitiesOnly yes\n    UserKnownHostsFile " << clientPath("jump_known_hosts")
            << "\n    GlobalKnownHostsFile /dev/null\n    StrictHostKeyChecking yes\n    BatchMode yes\n";
        const std::string jumpHostKey = wbtest::readAll(m_jump.dir() + "/host_key.pub");
        std::ofstream(clientPath("jump_known_hosts")) << "[127.0.0.1]:" << m_jump.port() << " " << jumpHostKey
                                                      << "[localhost]:" << m_jump.port() << " " << jumpHostKey
                                                      << "[127.0.0.1]:" << m_gate.port() << " "
                                                      << wbtest::readAll(m_gate.dir() + "/host_key.pub");
    }

    std::string connectError(const remote::SshHostSpec& spec, HostKeyInfo* info = nullptr)
    {
        auto session = SshSession::connect(spec, info);
        if (session)
            return "(connected)";
        qInfo("the user sees: %s", session.error().toString().c_str());  // for the test log
        return session.error().message;
    }

private slots:
    void initTestCase()
    {
        qunsetenv("SSH_AUTH_SOCK");  // the user's agent must not make a key work by accident
        if (!std::filesystem::exists("/usr/sbin/sshd"))
            QSKIP("OpenSSH sshd is not installed (/usr/sbin/sshd missing): apt-get install openssh-server");
        if (QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty())
            QSKIP("the OpenSSH client is not on PATH: apt-get install openssh-client");
        QVERIFY(m_client.isValid());
        std::string why = m_target.start();
        QVERIFY2(why.empty(), why.c_str());
        // The jump forwards to the target's port only (PermitOpen), and logs the requests.
        why = m_jump.start("host_key", "LogLevel DEBUG1\nPermitOpen 127.0.0.1:" + std::to_string(m_target.port()));
        QVERIFY2(why.empty(), why.c_str());
        why = m_gate.start("host_key", "LogLevel DEBUG1\nPermitOpen 127.0.0.1:" + std::to_string(m_jump.port()));
        QVERIFY2(why.empty(), why.c_str());
        writeClientConfig();
    }

    void cleanupTestCase()
    {
        m_gate.stop();
        m_target.stop();
        m_jump.stop();
    }

    // Through the jump, the TARGET's host key is what is checked: unknown until accepted, as
    // without a jump; the fingerprint shown is the target's, not the jump's.
    void targetHostKeyVerifiedThroughJump()
    {
        HostKeyInfo info;
        const std::string refused = connectError(spec(false), &info);
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Unknown);
        QCOMPARE(info.fingerprint, m_target.fingerprint());
        QVERIFY(info.fingerprint != m_jump.fingerprint());
        QVERIFY2(refused.find("--accept-new-host-key") != std::string::npos, refused.c_str());

        auto accepted = SshSession::connect(spec(true), &info);
        QVERIFY2(accepted, accepted ? "" : accepted.error().toString().c_str());
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::AcceptedNew);
        // Recorded under the target's address as the jump's ssh -W reaches it.
        const std::string known = wbtest::readAll(clientPath("known_hosts"));
        QVERIFY2(known.find("[127.0.0.1]:" + std::to_string(m_target.port())) != std::string::npos, known.c_str());
    }

    // A command runs on the target, and the target's TCP peer is a process of the jump's sshd
    // (found through /proc: the socket with the client port the target saw): the connection went
    // through the jump, not straight from this process.
    void commandRunsOnTargetThroughJump()
    {
        HostKeyInfo info;
        auto session = SshSession::connect(spec(), &info);
        QVERIFY2(session, session ? "" : session.error().toString().c_str());
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Known);
        auto result = (*session)->run("echo through-the-jump; echo $SSH_CONNECTION", kTimeout);
        QVERIFY2(result, result ? "" : result.error().toString().c_str());
        QCOMPARE(result->exitStatus, 0);
        std::istringstream out(result->out);
        std::string marker, clientAddress;
        int clientPort = 0, serverPort = 0;
        std::string serverAddress;
        out >> marker >> clientAddress >> clientPort >> serverAddress >> serverPort;
        QCOMPARE(marker, std::string("through-the-jump"));
        QCOMPARE(serverPort, m_target.port());

        const unsigned long inode = tcpSocketInode(clientPort, m_target.port());
        QVERIFY2(inode != 0, result->out.c_str());
        const pid_t owner = socketOwner(inode);
        QVERIFY2(owner > 0, "no process holds the target connection's client socket");
        QVERIFY2(owner != ::getpid(), "this process talks to the target directly: the jump was bypassed");
        QVERIFY2(descendsFrom(owner, m_jump.pid()),
                 ("the target's peer (pid " + std::to_string(owner) + ") is not a process of the jump's sshd").c_str());
        // The jump's own log shows the forwarding request for the target's port.
        const std::string log = wbtest::readAll(m_jump.dir() + "/sshd.log");
        QVERIFY2(log.find("direct-tcpip") != std::string::npos, log.c_str());
        QVERIFY2(log.find("port " + std::to_string(m_target.port())) != std::string::npos, log.c_str());
    }

    // `ProxyJump gate,jump`: gate first, as OpenSSH does (libssh 0.10 alone would connect to gate
    // through jump). The order is forced: gate may forward only to jump, jump only to the target.
    void twoHopsInProxyJumpOrder()
    {
        auto twoHops = spec();
        twoHops.host = "target-two-hops";
        auto session = SshSession::connect(twoHops);
        QVERIFY2(session, session ? "" : session.error().toString().c_str());
        auto result = (*session)->run("echo $SSH_CONNECTION", kTimeout);
        QVERIFY2(result, result ? "" : result.error().toString().c_str());
        std::istringstream out(result->out);
        std::string clientAddress;
        int clientPort = 0;
        out >> clientAddress >> clientPort;
        const pid_t owner = socketOwner(tcpSocketInode(clientPort, m_target.port()));
        QVERIFY2(descendsFrom(owner, m_jump.pid()), "the last hop to the target is not the jump's sshd");
        const std::string gateLog = wbtest::readAll(m_gate.dir() + "/sshd.log");
        QVERIFY2(gateLog.find("port " + std::to_string(m_jump.port())) != std::string::npos, gateLog.c_str());
    }

    // A changed target key is refused through the jump as it is directly: a known_hosts that
    // records another key (the jump's) for the target's address.
    void changedTargetKeyRefusedThroughJump()
    {
        const std::string stale = clientPath("stale_known_hosts");
        std::ofstream(stale) << "[127.0.0.1]:" << m_target.port() << " " << wbtest::readAll(m_jump.dir() + "/host_key.pub");
        auto rekeyed = spec(true);  // accept-new does not cover CHANGED
        rekeyed.knownHostsFile = stale;
        HostKeyInfo info;
        const std::string refused = connectError(rekeyed, &info);
        QCOMPARE(info.verdict, HostKeyInfo::Verdict::Changed);
        QCOMPARE(info.fingerprint, m_target.fingerprint());
        QVERIFY2(refused.find("CHANGED") != std::string::npos, refused.c_str());
    }

    // The jump refuses to forward to that address: the error names the jump and quotes ssh's
    // reason.
    void jumpRefusingForwardingIsNamed()
    {
        auto elsewhere = spec(true);
        elsewhere.host = "elsewhere";
        const std::string error = connectError(elsewhere);
        QVERIFY2(error.find("jump host jump ") != std::string::npos, error.c_str());
        QVERIFY2(error.find("administratively prohibited") != std::string::npos, error.c_str());
    }

    // The jump is down while the target is up: the connection fails (nothing reaches the target
    // another way) and the error names the jump and says its connection was refused.
    void jumpDownIsNamed()
    {
        auto viaDown = spec();
        viaDown.host = "target-via-down-jump";
        auto failed = SshSession::connect(viaDown);
        QVERIFY(!failed);
        qInfo("the user sees: %s", failed.error().toString().c_str());
        QCOMPARE(failed.error().code, core::ErrorCode::IoError);
        const std::string& message = failed.error().message;
        QVERIFY2(message.find("jump host jump-down") != std::string::npos, message.c_str());
        QVERIFY2(message.find("Connection refused") != std::string::npos, message.c_str());
        QVERIFY2(message.find("ssh -F") != std::string::npos, message.c_str());  // how to check by hand
        QVERIFY2(failed.error().context.find(":" + std::to_string(m_target.port())) != std::string::npos,
                 failed.error().context.c_str());
    }

    // The jump refuses our key: the error quotes ssh, and the command to try by hand keeps the
    // user and port written in ProxyJump.
    void jumpRefusingAuthIsNamed()
    {
        auto keyless = spec();
        keyless.host = "target-via-keyless-jump";
        auto failed = SshSession::connect(keyless);
        QVERIFY(!failed);
        // No User in that block: messages name the local user libssh logs in as.
        QCOMPARE(failed.error().context, userName() + "@127.0.0.1:" + std::to_string(m_target.port()));
        const std::string& error = failed.error().message;
        const std::string written = userName() + "@localhost:" + std::to_string(m_jump.port());
        QVERIFY2(error.find("jump host " + written + " ") != std::string::npos, error.c_str());
        QVERIFY2(error.find("Permission denied (publickey)") != std::string::npos, error.c_str());
        const std::string byHand = "-l " + userName() + " -p " + std::to_string(m_jump.port()) + " localhost`";
        QVERIFY2(error.find(byHand) != std::string::npos, error.c_str());
    }

    // No `ssh` on PATH: libssh's shell cannot run the first hop; the error says to install it.
    void missingSshClientIsNamed()
    {
        const QByteArray path = qgetenv("PATH");
        QTemporaryDir empty;
        qputenv("PATH", empty.path().toUtf8());
        const std::string error = connectError(spec());
        qputenv("PATH", path);
        QVERIFY2(error.find("jump host jump ") != std::string::npos, error.c_str());
        QVERIFY2(error.find("openssh-client") != std::string::npos, error.c_str());
        // libssh writes into the dead ProxyCommand's socket: SIGPIPE must not end the process (it
        // did, now and then, before the SSH layer ignored it); tools it starts get the default.
        struct sigaction current {};
        QVERIFY(::sigaction(SIGPIPE, nullptr, &current) == 0);
        QVERIFY(current.sa_handler == SIG_IGN);
        auto status = wb::remote::runAndCapture({"/bin/sh", "-c", "grep SigIgn /proc/self/status"},
                                                std::chrono::seconds(10));
        QVERIFY(status.ok());
        const std::string line = status->output;
        const auto hex = line.find_first_of("0123456789abcdef", line.find(':'));
        QVERIFY2(hex != std::string::npos, line.c_str());
        const unsigned long long ignored = std::stoull(line.substr(hex), nullptr, 16);
        QVERIFY2((ignored & (1ull << (SIGPIPE - 1))) == 0, line.c_str());
    }
};

QTEST_GUILESS_MAIN(TestSshJump)
#include "test_ssh_jump.moc"
