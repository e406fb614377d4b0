// SshSession: one authenticated SSH connection (libssh) with host-key verification, remote
// command execution and SFTP file access. Reads the user's OpenSSH config (HostName, User, Port,
// IdentityFile, ProxyJump) like `ssh HOST` would.
//
// Threading: a libssh session is NOT thread-safe. One SshSession is used from ONE thread only
// (the worker thread that owns it); every call blocks on the network, so never the GUI thread.
// Moving the object to another thread between calls is fine; concurrent calls are not.
#pragma once

#include "core/result.h"
#include "core/shell_quote.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

struct ssh_session_struct;
struct sftp_session_struct;

namespace wb::remote {

/// Where and how to connect. Empty fields fall back to the OpenSSH config, then to libssh's
/// defaults (current user, port 22, ~/.ssh/id_*).
struct SshHostSpec {
    std::string host;            ///< an alias from ~/.ssh/config, or a host name / address
    std::string user;            ///< overrides the config's User
    int port = 0;                ///< overrides the config's Port (0 = config or 22)
    std::string identityFile;    ///< added in front of the config's IdentityFile entries
    std::string sshConfigFile;   ///< empty = ~/.ssh/config then /etc/ssh/ssh_config
    std::string knownHostsFile;  ///< empty = ~/.ssh/known_hosts
    /// Trust and record (in knownHostsFile) a host key seen for the first time. Only set this
    /// after the user has compared the fingerprint. A CHANGED key is refused regardless.
    bool acceptNewHostKey = false;
    std::chrono::seconds connectTimeout{15};
    std::chrono::seconds keepaliveInterval{30};  ///< 0 = no keepalives
    /// Asked for a password or keyboard-interactive answer when no key works; the answer is used
    /// once and never stored or logged. Empty = public keys (agent, then key files) only.
    std::function<std::optional<std::string>(const std::string& prompt, bool echo)> askSecret;
};

/// What a host-key check found; filled also when connect() fails because of the key.
struct HostKeyInfo {
    enum class Verdict { Unchecked, Known, AcceptedNew, Unknown, Changed, Error };
    Verdict verdict = Verdict::Unchecked;
    std::string keyType;      ///< "ssh-ed25519", ...
    std::string fingerprint;  ///< "SHA256:..." (OpenSSH's format)
};

struct CommandResult {
    int exitStatus = -1;  ///< the remote command's exit status (-1: none reported, e.g. killed)
    std::string out;      ///< stdout
    std::string err;      ///< stderr
};

/// A slice of a remote file.
struct RemoteChunk {
    bool exists = false;
    int64_t fileSize = 0;
    std::string bytes;
};

class SshSession {
public:
    /// Connects, verifies the host key and authenticates.
    /// Errors: IoError (resolve/connect/network, retryable), Failed (authentication, or a host key
    /// that is unknown — the message carries its SHA256 fingerprint and how to accept it — or
    /// CHANGED, which is never accepted), InvalidArgument (bad spec). `hostKey`, when given,
    /// receives what the host-key check saw, so a caller can show the fingerprint in a dialog.
    static core::Result<std::unique_ptr<SshSession>> connect(const SshHostSpec& spec,
                                                             HostKeyInfo* hostKey = nullptr);
    ~SshSession();
    SshSession(const SshSession&) = delete;
    SshSession& operator=(const SshSession&) = delete;

    /// Runs `command` through the remote user's login shell (as `ssh HOST command` does). The
    /// command must already be quoted (shellQuote). Output is capped at 16 MiB per stream.
    /// Errors: IoError when the connection fails or `timeout` passes (the session is then not
    /// usable: isConnected() is false). A non-zero exit status is NOT an error.
    core::Result<CommandResult> run(const std::string& command, std::chrono::milliseconds timeout);

    /// Writes `content` to `path` atomically (a temp file beside it, then rename), mode `mode`.
    core::Result<void> writeFile(const std::string& path, const std::string& content, int mode = 0644);
    /// Reads at most `maxBytes` of `path` from `offset`. A missing file is `exists == false`.
    core::Result<RemoteChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes);

    /// True while the transport is up and no transport error happened on it (a dead peer shows
    /// on the next I/O, or after the connect timeout for one that went silent).
    bool isConnected() const;
    /// Sends an OpenSSH keepalive if `keepaliveInterval` passed since the last traffic we sent.
    /// Call it from the owning thread while idle; failures mark the session disconnected.
    void keepaliveIfIdle();

    /// "user@host:port" as resolved from the config, for messages.
    const std::string& describe() const { return m_description; }
    /// The host name or address connected to, after the config's HostName (no user, no port).
    const std::string& hostName() const { return m_hostName; }

private:
    struct SessionDeleter {
        void operator()(ssh_session_struct* session) const;
    };
    struct SftpDeleter {
        void operator()(sftp_session_struct* sftp) const;
    };

    explicit SshSession(std::unique_ptr<ssh_session_struct, SessionDeleter> session);
    core::Result<sftp_session_struct*> sftp();
    core::Error transportError(const std::string& what);  // marks the session broken
    void touch() { m_lastSent = std::chrono::steady_clock::now(); }

    std::unique_ptr<ssh_session_struct, SessionDeleter> m_session;
    std::unique_ptr<sftp_session_struct, SftpDeleter> m_sftp;  // opened on first file access
    std::string m_description;
    std::string m_hostName;
    std::chrono::seconds m_keepaliveInterval{30};
    std::chrono::steady_clock::time_point m_lastSent;
    bool m_broken = false;  // a transport error happened: reconnect rather than reuse
};

// Commands sent to a remote shell quote with core/shell_quote.h (one rule for every script and
// command the workbench writes).
using core::shellQuote;
using core::shellQuotePath;

}  // namespace wb::remote
