// ProxyJump: makes libssh 0.10's ProxyJump behave like OpenSSH's for one SshSession::connect.
// Used on the thread that connects (SshSession's); rewrite() is pure and thread-safe.
//
// libssh 0.10 does not speak to a jump host itself: its config parser turns
// "ProxyJump HOP1,HOP2,..." (each [user@]host[:port]) into the ProxyCommand
// "ssh [-l user1] [-p port1] [-J HOP2,...] -W '[%h]:%p' host1" and runs that through "$SHELL -c"
// with stderr on /dev/null. As it is, three things go wrong:
//  - the spawned ssh reads the user's ~/.ssh/config (OpenSSH finds it through the passwd entry,
//    not $HOME), so a jump defined in the spec's own config file is unknown to it. OpenSSH's
//    `ssh -F FILE` passes its -F on to the jump's ssh; so do we;
//  - several hops are reversed: `ssh -J HOP2 ... host1` reaches host1 THROUGH HOP2, while
//    ProxyJump means HOP1 first. We build what OpenSSH's ssh.c builds: the last hop is the host
//    ssh connects to, the earlier ones go to -J in their order;
//  - every failure of the jump (down, auth refused, forwarding forbidden, no ssh on PATH) reaches
//    us as "Connection reset by peer", naming neither the jump nor the cause. ssh's stderr goes
//    to a private temp file, quoted by failure().
// Every hop is shell-quoted (libssh pastes them in as written). A ProxyCommand the user wrote is
// left alone: only libssh's exact form is recognized.
#pragma once

#include "core/result.h"

#include <memory>
#include <optional>
#include <string>

struct ssh_session_struct;

namespace wb::remote {

class ProxyJump {
public:
    struct Rewrite {
        std::string command;  ///< the new ProxyCommand, with libssh's %-escaping
        std::string hops;     ///< "HOP1,HOP2" in ProxyJump order, for messages
        std::string byHand;   ///< the same ssh without -W, for the user to try in a terminal
    };

    /// libssh's ProxyJump command as OpenSSH would run it, with `-F configFile` (when not empty)
    /// and stderr to `stderrPath`; nullopt when `libsshCommand` is not of libssh's ProxyJump form.
    static std::optional<Rewrite> rewrite(const std::string& libsshCommand, const std::string& configFile,
                                          const std::string& stderrPath);

    /// Rewrites the session's ProxyCommand (after its config was parsed) when it came from a
    /// ProxyJump; null when there is none. Errors: IoError when no temp file can be made.
    static core::Result<std::unique_ptr<ProxyJump>> prepare(ssh_session_struct* session,
                                                           const std::string& configFile);

    ~ProxyJump();  // removes the stderr file
    ProxyJump(const ProxyJump&) = delete;
    ProxyJump& operator=(const ProxyJump&) = delete;

    const std::string& hops() const { return m_rewrite.hops; }

    /// The message for a connection that failed: names the jump, quotes what ssh said and how
    /// to try it by hand. Call after the proxy process ended (ssh_disconnect reaps it).
    std::string failure(const std::string& libsshError) const;

private:
    ProxyJump(Rewrite rewrite, std::string stderrPath);

    Rewrite m_rewrite;
    std::string m_stderrPath;
};

}  // namespace wb::remote
