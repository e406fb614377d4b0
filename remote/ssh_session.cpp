// SshSession over libssh 0.10's C API. One thread per session (see the header).
//
// Host keys: we never accept silently. ssh_session_is_known_server() decides; UNKNOWN/NOT_FOUND
// becomes an error carrying the SHA256 fingerprint unless the caller set acceptNewHostKey (after
// the user compared it); CHANGED and OTHER (a different key type recorded for the host: what an
// attacker presenting another algorithm looks like) are refused always, like OpenSSH does.
//
// Nothing secret is logged: no passwords, no key material, no command output (it may hold
// tokens); commands are logged at debug level only.
#include "remote/ssh_session.h"

#include "core/log.h"
#include "remote/proxy_jump.h"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
// ssh_send_keepalive() is declared with the server API but works on any session: it sends
// OpenSSH's keepalive@openssh.com global request (what ServerAliveInterval sends).
#include <libssh/server.h>
#include <libssh/sftp.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <mutex>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

constexpr size_t kMaxOutput = 16u << 20;
constexpr size_t kIoChunk = 32 * 1024;  // SFTP servers cap a read/write request near 32-256 KiB

// libssh's log goes to spdlog's "libssh" logger (STYLE.md), at debug level: libssh calls things
// "warnings" that are routine (no global known_hosts file, "none" auth denied), and every real
// failure reaches the caller as a Result anyway. The callback is process-wide.
void forwardLibsshLog(int /*priority*/, const char* function, const char* buffer, void* /*userdata*/)
{
    wb::log::get("libssh")->debug("{}: {}", function ? function : "", buffer ? buffer : "");
}

void installLogForwarding()
{
    static std::once_flag once;
    std::call_once(once, [] {
        ssh_set_log_callback(forwardLibsshLog);
        ssh_set_log_level(SSH_LOG_WARN);
        // A ProxyCommand (ProxyJump) that ends early — no ssh client, a jump that refuses — leaves
        // libssh writing into a socket whose other end is closed, without MSG_NOSIGNAL: SIGPIPE
        // would end the whole workbench (test_ssh_jump's missing-client case died of it). Ignored,
        // the write fails with EPIPE and the connect reports the jump's own error. Children get the
        // default back where we start them (local_target.cpp, subprocess.cpp).
        ::signal(SIGPIPE, SIG_IGN);
    });
}

struct CharFree {
    void operator()(char* p) const { ssh_string_free_char(p); }
};
using SshString = std::unique_ptr<char, CharFree>;

struct KeyFree {
    void operator()(ssh_key key) const { ssh_key_free(key); }
};

struct ChannelFree {
    void operator()(ssh_channel channel) const
    {
        if (ssh_channel_is_open(channel))
            ssh_channel_close(channel);
        ssh_channel_free(channel);
    }
};
using Channel = std::unique_ptr<ssh_channel_struct, ChannelFree>;

struct SftpFileClose {
    void operator()(sftp_file file) const { sftp_close(file); }
};
using SftpFile = std::unique_ptr<sftp_file_struct, SftpFileClose>;

struct SftpAttrFree {
    void operator()(sftp_attributes attrs) const { sftp_attributes_free(attrs); }
};

std::string optionString(ssh_session session, ssh_options_e option)
{
    char* value = nullptr;
    if (ssh_options_get(session, option, &value) != SSH_OK || value == nullptr)
        return {};
    SshString owned(value);
    return owned.get();
}

// SO_KEEPALIVE lets the kernel notice a peer that vanished without a FIN (a rebooted node, a
// NAT that dropped us) even while we wait in a blocking read. Fails harmlessly on a ProxyCommand
// pipe.
void enableTcpKeepalive(ssh_session session)
{
    const socket_t fd = ssh_get_fd(session);
    if (fd < 0)
        return;
    int on = 1;
    int idle = 30;
    int interval = 10;
    int count = 3;
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

Result<void> verifyHostKey(ssh_session session, const SshHostSpec& spec, HostKeyInfo& info,
                           const std::string& where)
{
    ssh_key raw = nullptr;
    if (ssh_get_server_publickey(session, &raw) != SSH_OK)
        return makeError(ErrorCode::IoError,
                         std::string("the server sent no host key: ") + ssh_get_error(session), where);
    std::unique_ptr<ssh_key_struct, KeyFree> key(raw);
    info.keyType = ssh_key_type_to_char(ssh_key_type(key.get()));
    unsigned char* hash = nullptr;
    size_t hashLength = 0;
    if (ssh_get_publickey_hash(key.get(), SSH_PUBLICKEY_HASH_SHA256, &hash, &hashLength) != SSH_OK)
        return makeError(ErrorCode::Failed, "cannot hash the host key", where);
    SshString fingerprint(ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hashLength));
    ssh_clean_pubkey_hash(&hash);
    info.fingerprint = fingerprint ? fingerprint.get() : "";

    const std::string knownHosts =
        spec.knownHostsFile.empty() ? std::string("~/.ssh/known_hosts") : spec.knownHostsFile;
    switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
        info.verdict = HostKeyInfo::Verdict::Known;
        return {};
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
        info.verdict = HostKeyInfo::Verdict::Changed;
        wb::log::get("remote")->warn("host key of {} CHANGED (now {} {}); refusing to connect",
                                     where, info.keyType, info.fingerprint);
        return makeError(ErrorCode::Failed,
                         "WARNING: the host key CHANGED. The server now presents " + info.keyType +
                             " " + info.fingerprint + ", which does not match the key recorded in " +
                             knownHosts +
                             ". Someone may be intercepting the connection (man-in-the-middle), or "
                             "the host was reinstalled. The connection is refused. If the admin "
                             "confirms the new key, remove the old entry (ssh-keygen -R HOST -f " +
                             knownHosts + ") and connect again to review the new fingerprint.",
                         where);
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
        if (!spec.acceptNewHostKey) {
            info.verdict = HostKeyInfo::Verdict::Unknown;
            return makeError(ErrorCode::Failed,
                             "the host key is not known: " + info.keyType + " " + info.fingerprint +
                                 ". Compare this fingerprint with the one the host's admin gives "
                                 "you (on the host: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), "
                                 "then accept it (CLI: moe-workbench-cli hosts test HOST --accept-new-host-key); it is recorded in " +
                                 knownHosts,
                             where);
        }
        if (ssh_session_update_known_hosts(session) != SSH_OK)
            return makeError(ErrorCode::IoError,
                             std::string("cannot record the host key in ") + knownHosts + ": " +
                                 ssh_get_error(session),
                             where);
        info.verdict = HostKeyInfo::Verdict::AcceptedNew;
        wb::log::get("remote")->info("accepted new host key of {}: {} {} (recorded in {})", where,
                                     info.keyType, info.fingerprint, knownHosts);
        return {};
    case SSH_KNOWN_HOSTS_ERROR:
    default:
        info.verdict = HostKeyInfo::Verdict::Error;
        return makeError(ErrorCode::IoError,
                         std::string("cannot check the host key against ") + knownHosts + ": " +
                             ssh_get_error(session),
                         where);
    }
}

// Keyboard-interactive: every prompt goes to askSecret; answers are set and forgotten. The
// server's prompt ("Password: ") is prefixed with "(user@host) " as OpenSSH does, so with several
// nodes (ssh:A,B) or a Slurm login node the user knows which host asks.
int keyboardInteractive(ssh_session session, const SshHostSpec& spec, const std::string& where)
{
    int rc = ssh_userauth_kbdint(session, nullptr, nullptr);
    while (rc == SSH_AUTH_INFO) {
        const int prompts = ssh_userauth_kbdint_getnprompts(session);
        for (int i = 0; i < prompts; ++i) {
            char echo = 0;
            const char* prompt = ssh_userauth_kbdint_getprompt(session, static_cast<unsigned>(i), &echo);
            auto answer = spec.askSecret("(" + where + ") " + (prompt ? prompt : ""), echo != 0);
            if (!answer)
                return SSH_AUTH_DENIED;
            rc = ssh_userauth_kbdint_setanswer(session, static_cast<unsigned>(i), answer->c_str());
            std::fill(answer->begin(), answer->end(), '\0');
            if (rc < 0)
                return SSH_AUTH_ERROR;
        }
        rc = ssh_userauth_kbdint(session, nullptr, nullptr);
    }
    return rc;
}

Result<void> authenticate(ssh_session session, const SshHostSpec& spec, const std::string& where)
{
    // "none" first: it may succeed, and it makes the server list the methods it accepts.
    int rc = ssh_userauth_none(session, nullptr);
    if (rc == SSH_AUTH_SUCCESS)
        return {};
    if (rc == SSH_AUTH_ERROR)
        return makeError(ErrorCode::IoError, std::string("authentication failed: ") + ssh_get_error(session), where);
    const int methods = ssh_userauth_list(session, nullptr);
    if (methods & SSH_AUTH_METHOD_PUBLICKEY) {
        // The agent (SSH_AUTH_SOCK) first, then the IdentityFile entries and ~/.ssh/id_*.
        rc = ssh_userauth_publickey_auto(session, nullptr, nullptr);
        if (rc == SSH_AUTH_SUCCESS)
            return {};
        if (rc == SSH_AUTH_ERROR)
            return makeError(ErrorCode::IoError, std::string("authentication failed: ") + ssh_get_error(session), where);
    }
    if (spec.askSecret && (methods & SSH_AUTH_METHOD_INTERACTIVE)) {
        if (keyboardInteractive(session, spec, where) == SSH_AUTH_SUCCESS)
            return {};
    }
    if (spec.askSecret && (methods & SSH_AUTH_METHOD_PASSWORD)) {
        if (auto password = spec.askSecret("Password for " + where + ": ", false)) {
            rc = ssh_userauth_password(session, nullptr, password->c_str());
            std::fill(password->begin(), password->end(), '\0');
            if (rc == SSH_AUTH_SUCCESS)
                return {};
        }
    }
    std::string offered;
    if (methods & SSH_AUTH_METHOD_PUBLICKEY)
        offered += " publickey";
    if (methods & SSH_AUTH_METHOD_PASSWORD)
        offered += " password";
    if (methods & SSH_AUTH_METHOD_INTERACTIVE)
        offered += " keyboard-interactive";
    return makeError(ErrorCode::Failed,
                     "authentication refused (the server accepts:" + offered +
                         "). Load your key into ssh-agent, or name it with IdentityFile in "
                         "~/.ssh/config, and check that its public half is in the host's "
                         "~/.ssh/authorized_keys",
                     where);
}

}  // namespace

void SshSession::SessionDeleter::operator()(ssh_session_struct* session) const
{
    if (ssh_is_connected(session))
        ssh_disconnect(session);
    ssh_free(session);
}

void SshSession::SftpDeleter::operator()(sftp_session_struct* sftp) const { sftp_free(sftp); }

SshSession::SshSession(std::unique_ptr<ssh_session_struct, SessionDeleter> session)
    : m_session(std::move(session))
{
    touch();
}

SshSession::~SshSession()
{
    m_sftp.reset();  // before the session it runs on
}

Result<std::unique_ptr<SshSession>> SshSession::connect(const SshHostSpec& spec, HostKeyInfo* hostKey)
{
    installLogForwarding();
    HostKeyInfo localInfo;
    HostKeyInfo& info = hostKey ? *hostKey : localInfo;
    info = {};
    if (spec.host.empty() || spec.host.front() == '-')
        return makeError(ErrorCode::InvalidArgument, "a host name is required (and may not start with '-')", spec.host);

    std::unique_ptr<ssh_session_struct, SessionDeleter> session(ssh_new());
    if (!session)
        return makeError(ErrorCode::IoError, "cannot allocate an SSH session");
    ssh_session s = session.get();
    // The host first: the config's "Host" blocks match against it.
    if (ssh_options_set(s, SSH_OPTIONS_HOST, spec.host.c_str()) != SSH_OK)
        return makeError(ErrorCode::InvalidArgument, std::string("bad host: ") + ssh_get_error(s), spec.host);
    if (ssh_options_parse_config(s, spec.sshConfigFile.empty() ? nullptr : spec.sshConfigFile.c_str()) != SSH_OK)
        return makeError(ErrorCode::InvalidArgument,
                         std::string("cannot read the SSH config: ") + ssh_get_error(s),
                         spec.sshConfigFile.empty() ? "~/.ssh/config" : spec.sshConfigFile);
    // Explicit settings after the config: ssh_options_set overwrites, while the parser's
    // "first value wins" rule differs between libssh versions (Port is overwritten in 0.10).
    if (!spec.user.empty())
        ssh_options_set(s, SSH_OPTIONS_USER, spec.user.c_str());
    if (spec.port > 0) {
        const unsigned int port = static_cast<unsigned int>(spec.port);
        ssh_options_set(s, SSH_OPTIONS_PORT, &port);
    }
    if (!spec.identityFile.empty())
        ssh_options_set(s, SSH_OPTIONS_ADD_IDENTITY, spec.identityFile.c_str());
    if (!spec.knownHostsFile.empty() &&
        ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, spec.knownHostsFile.c_str()) != SSH_OK)
        return makeError(ErrorCode::InvalidArgument, "bad known_hosts path", spec.knownHostsFile);
    long timeout = static_cast<long>(spec.connectTimeout.count());
    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);

    // No User anywhere: libssh would log in as the local user; say so in messages too.
    if (optionString(s, SSH_OPTIONS_USER).empty())
        ssh_options_set(s, SSH_OPTIONS_USER, nullptr);
    unsigned int port = 22;
    ssh_options_get_port(s, &port);
    const std::string where =
        optionString(s, SSH_OPTIONS_USER) + "@" + optionString(s, SSH_OPTIONS_HOST) + ":" + std::to_string(port);

    auto jump = ProxyJump::prepare(s, spec.sshConfigFile);
    if (!jump)
        return jump.error();

    auto log = wb::log::get("remote");
    log->debug("connecting to {} (as {})", spec.host, where);
    if (ssh_connect(s) != SSH_OK) {
        const std::string error = ssh_get_error(s);
        if (!*jump)
            return makeError(ErrorCode::IoError, "cannot connect: " + error, where);
        ssh_disconnect(s);  // ends and reaps the jump's ssh, so that all it said is in the file
        return makeError(ErrorCode::IoError, (*jump)->failure(error), where);
    }
    if (auto verified = verifyHostKey(s, spec, info, where); !verified)
        return verified.error();
    if (auto authed = authenticate(s, spec, where); !authed)
        return authed.error();
    enableTcpKeepalive(s);
    log->info("connected to {}{} ({} {})", where, *jump ? " via ProxyJump " + (*jump)->hops() : std::string(),
              info.keyType, info.fingerprint);

    std::unique_ptr<SshSession> result(new SshSession(std::move(session)));
    result->m_description = where;
    result->m_hostName = optionString(s, SSH_OPTIONS_HOST);
    result->m_keepaliveInterval = spec.keepaliveInterval;
    return result;
}

bool SshSession::isConnected() const
{
    return m_session && !m_broken && ssh_is_connected(m_session.get()) != 0;
}

// A failure of the transport or of a channel on it. libssh does not always mark the session
// dead (a silent peer only times out), so we do: the owner then reconnects instead of reusing a
// session in an unknown state. Marking an SFTP-level failure (a full disk) broken as well costs
// one needless reconnect, which is cheap.
core::Error SshSession::transportError(const std::string& what)
{
    m_broken = true;
    return makeError(ErrorCode::IoError, what + ": " + ssh_get_error(m_session.get()), m_description);
}

void SshSession::keepaliveIfIdle()
{
    if (m_keepaliveInterval.count() <= 0 || !isConnected())
        return;
    if (std::chrono::steady_clock::now() - m_lastSent < m_keepaliveInterval)
        return;
    if (ssh_send_keepalive(m_session.get()) != SSH_OK)
        wb::log::get("remote")->warn("keepalive to {} failed: {}", m_description, ssh_get_error(m_session.get()));
    touch();
}

Result<CommandResult> SshSession::run(const std::string& command, std::chrono::milliseconds timeout)
{
    if (!isConnected())
        return makeError(ErrorCode::IoError, "not connected", m_description);
    touch();
    wb::log::get("remote")->debug("{}: run {}", m_description, command);
    Channel channel(ssh_channel_new(m_session.get()));
    if (!channel)
        return transportError("cannot create a channel");
    if (ssh_channel_open_session(channel.get()) != SSH_OK)
        return transportError("cannot open a channel");
    if (ssh_channel_request_exec(channel.get(), command.c_str()) != SSH_OK)
        return transportError("cannot start the remote command");

    CommandResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buffer[kIoChunk];
    for (;;) {
        // Blocks up to 100 ms for stdout; stderr is drained without waiting on each turn.
        const int n = ssh_channel_read_timeout(channel.get(), buffer, sizeof buffer, 0, 100);
        if (n == SSH_ERROR)
            return transportError("connection lost while running a remote command");
        if (n > 0 && result.out.size() < kMaxOutput)
            result.out.append(buffer, static_cast<size_t>(n));
        const int e = ssh_channel_read_nonblocking(channel.get(), buffer, sizeof buffer, 1);
        if (e == SSH_ERROR)
            return transportError("connection lost while running a remote command");
        if (e > 0 && result.err.size() < kMaxOutput)
            result.err.append(buffer, static_cast<size_t>(e));
        if (n <= 0 && e <= 0 && ssh_channel_is_eof(channel.get()))
            break;
        if (std::chrono::steady_clock::now() > deadline) {
            // The remote command may still run; closing the channel does not stop it. The session
            // is dropped so that nobody reads this command's late output as another's. The channel
            // and SFTP go first: ssh_disconnect() frees the channels it still knows.
            channel.reset();
            m_sftp.reset();
            ssh_disconnect(m_session.get());
            m_broken = true;
            return makeError(ErrorCode::IoError,
                             "a remote command did not finish within " +
                                 std::to_string(timeout.count()) + " ms",
                             m_description);
        }
    }
    ssh_channel_send_eof(channel.get());
    result.exitStatus = ssh_channel_get_exit_status(channel.get());
    touch();
    return result;
}

Result<sftp_session_struct*> SshSession::sftp()
{
    if (!isConnected())
        return makeError(ErrorCode::IoError, "not connected", m_description);
    if (m_sftp)
        return m_sftp.get();
    std::unique_ptr<sftp_session_struct, SftpDeleter> sftp(sftp_new(m_session.get()));
    if (!sftp)
        return transportError("cannot open an SFTP channel");
    if (sftp_init(sftp.get()) != SSH_OK)
        return makeError(ErrorCode::Failed,
                         "the SFTP subsystem failed to start (is `Subsystem sftp` enabled in the "
                         "host's sshd_config?): " + std::string(ssh_get_error(m_session.get())),
                         m_description);
    m_sftp = std::move(sftp);
    return m_sftp.get();
}

Result<void> SshSession::writeFile(const std::string& path, const std::string& content, int mode)
{
    auto sftp = this->sftp();
    if (!sftp)
        return sftp.error();
    touch();
    const std::string tmp = path + ".tmp";
    SftpFile file(sftp_open(*sftp, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, static_cast<mode_t>(mode)));
    if (!file)
        return makeError(ErrorCode::IoError,
                         "cannot create the remote file (SFTP error " +
                             std::to_string(sftp_get_error(*sftp)) + "): " + ssh_get_error(m_session.get()),
                         tmp);
    size_t done = 0;
    while (done < content.size()) {
        const size_t want = std::min(kIoChunk, content.size() - done);
        const ssize_t n = sftp_write(file.get(), content.data() + done, want);
        if (n <= 0)
            return transportError("cannot write " + tmp);
        done += static_cast<size_t>(n);
    }
    if (sftp_close(file.release()) != SSH_OK)
        return transportError("cannot close " + tmp);
    // libssh uses posix-rename@openssh.com when offered: it replaces an existing target
    // atomically. Plain SFTP rename refuses to overwrite, so fall back to unlink + rename.
    if (sftp_rename(*sftp, tmp.c_str(), path.c_str()) != SSH_OK) {
        sftp_unlink(*sftp, path.c_str());
        if (sftp_rename(*sftp, tmp.c_str(), path.c_str()) != SSH_OK)
            return transportError("cannot move " + tmp + " into place");
    }
    return {};
}

Result<RemoteChunk> SshSession::readFile(const std::string& path, int64_t offset, int64_t maxBytes)
{
    auto sftp = this->sftp();
    if (!sftp)
        return sftp.error();
    touch();
    RemoteChunk chunk;
    SftpFile file(sftp_open(*sftp, path.c_str(), O_RDONLY, 0));
    if (!file) {
        if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE)
            return chunk;
        if (!isConnected())
            return transportError("connection lost while opening " + path);
        return makeError(ErrorCode::IoError,
                         "cannot open the remote file (SFTP error " + std::to_string(sftp_get_error(*sftp)) + ")",
                         path);
    }
    chunk.exists = true;
    std::unique_ptr<sftp_attributes_struct, SftpAttrFree> attrs(sftp_fstat(file.get()));
    if (!attrs)
        return transportError("cannot stat " + path);
    chunk.fileSize = static_cast<int64_t>(attrs->size);
    if (offset >= chunk.fileSize || maxBytes <= 0)
        return chunk;
    if (sftp_seek64(file.get(), static_cast<uint64_t>(offset)) != 0)
        return transportError("cannot seek in " + path);
    const int64_t want = std::min(maxBytes, chunk.fileSize - offset);
    chunk.bytes.resize(static_cast<size_t>(want));
    int64_t got = 0;
    while (got < want) {
        const size_t ask = std::min<size_t>(kIoChunk, static_cast<size_t>(want - got));
        const ssize_t n = sftp_read(file.get(), chunk.bytes.data() + got, ask);
        if (n < 0)
            return transportError("cannot read " + path);
        if (n == 0)
            break;  // shrank since the stat; the caller sees fileSize and a short chunk
        got += n;
    }
    chunk.bytes.resize(static_cast<size_t>(got));
    return chunk;
}

}  // namespace wb::remote
