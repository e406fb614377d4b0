#!/bin/sh
# A private OpenSSH sshd for the SSH tests: 127.0.0.1 only, generated keys, everything in DIR.
#
#   ssh_test_server.sh start DIR PORT [HOSTKEY]   start (HOSTKEY: file name in DIR, default
#                                                 host_key; generated when missing)
#   ssh_test_server.sh stop DIR                   stop the listener (live sessions die with it
#                                                 only if killed separately)
#   ssh_test_server.sh drop DIR                   an outage: stop the listener AND kill its live
#                                                 sessions (every open connection drops)
#
# start writes DIR/user_key (the client key, authorized for the current user), DIR/ssh_config
# (Host alias "wbtest" -> 127.0.0.1:PORT with that key and DIR/known_hosts), DIR/sshd.pid and
# DIR/sshd.log. It exits 0 once sshd listens, 1 with the log on stderr if it does not.
# StrictModes is off because the temp dir's modes are whatever the test runner gives it.
# WB_SSHD=/abs/path/sshd uses that sshd instead of /usr/sbin/sshd (benchmarks/gpu_ssh_node.sh
# carries Debian's to the GPU machine, which has none).
# WB_SSHD_EXTRA_CONFIG, when set, is appended to sshd_config (e.g. "SetEnv PATH=/some/dir" for a
# node that lacks a tool).
#
# WB_SSHD_HIDE_DIRS="DIR ..." (root only, and where mount namespaces are allowed; exit 77
# otherwise) runs sshd, and so every session it serves, in a private mount namespace where each
# existing DIR is covered by an empty read-only tmpfs: a "node" without, say, Debian's header
# packages (/usr/include/nlohmann /usr/include/stb), while the test itself still sees them.
#
# WB_SSHD_PASSWORD=SECRET (root only; exit 77 otherwise) makes a server that accepts NO key, only
# SECRET, through PAM: keyboard-interactive, or the "password" method when WB_SSHD_AUTH=password.
# sshd takes its PAM service name from its program name, so it runs as DIR/<service> (a symlink
# to sshd) with /etc/pam.d/<service> (a unique name, removed by stop) whose only auth module is
# pam_exec comparing the typed answer with SECRET (kept in DIR/pam_secret, mode 600). No user,
# password or other system file is changed.
set -eu

cmd=$1
dir=$2
sshd=${WB_SSHD:-/usr/sbin/sshd}  # WB_SSHD: another sshd binary (absolute path), e.g. one carried to a node

case "$cmd" in
start)
    port=$3
    hostkey=${4:-host_key}
    [ -x "$sshd" ] || { echo "sshd is not installed ($sshd missing): apt-get install openssh-server" >&2; exit 77; }
    mkdir -p "$dir"
    [ -f "$dir/$hostkey" ] || ssh-keygen -q -t ed25519 -N '' -C wbtest-host -f "$dir/$hostkey"
    [ -f "$dir/user_key" ] || ssh-keygen -q -t ed25519 -N '' -C wbtest-user -f "$dir/user_key"
    cp "$dir/user_key.pub" "$dir/authorized_keys"
    pubkey=yes; password=no; kbdint=no; pam=no; rootlogin=prohibit-password
    if [ -n "${WB_SSHD_PASSWORD:-}" ]; then
        [ "$(id -u)" -eq 0 ] || { echo "a password sshd needs root (it writes /etc/pam.d/SERVICE)" >&2; exit 77; }
        found=
        for m in /lib/*/security/pam_exec.so /lib/security/pam_exec.so /usr/lib/*/security/pam_exec.so; do
            [ -e "$m" ] && found=$m
        done
        [ -n "$found" ] || { echo "PAM's pam_exec.so is missing (apt-get install libpam-modules)" >&2; exit 77; }
        # A test killed before its stop (a ctest timeout) leaves its PAM file: remove those whose
        # test directory is gone.
        for old in /etc/pam.d/wbtest-sshd-*; do
            [ -f "$old" ] || continue
            check=$(sed -n 's/^auth requisite pam_exec.so expose_authtok quiet //p' "$old")
            [ -n "$check" ] && [ ! -e "$check" ] && rm -f "$old"
        done
        # Short: sshd found no PAM file for a 44-character program name here (PAM then used "other").
        service="wbtest-sshd-$$"
        printf '%s' "$WB_SSHD_PASSWORD" > "$dir/pam_secret"
        chmod 600 "$dir/pam_secret"
        # pam_exec expose_authtok writes the typed answer to stdin (NUL-terminated, no newline).
        printf '#!/bin/sh\n[ "$(tr -d "\\000")" = "$(cat %s)" ]\n' "'$dir/pam_secret'" > "$dir/pam_check.sh"
        chmod 755 "$dir/pam_check.sh"
        printf '%s\n' "auth requisite pam_exec.so expose_authtok quiet $dir/pam_check.sh" \
            "auth required pam_permit.so" "account required pam_permit.so" \
            "session required pam_permit.so" "password required pam_deny.so" > "/etc/pam.d/$service"
        echo "$service" > "$dir/pam_service"
        ln -sf "$sshd" "$dir/$service"
        sshd="$dir/$service"
        pubkey=no; pam=yes; rootlogin=yes
        if [ "${WB_SSHD_AUTH:-kbdint}" = password ]; then password=yes; else kbdint=yes; fi
    fi
    # sshd running as root wants its privilege-separation directory.
    if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then mkdir -p /run/sshd && chmod 0755 /run/sshd; fi
    cat > "$dir/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/$hostkey
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
StrictModes no
PubkeyAuthentication $pubkey
PasswordAuthentication $password
KbdInteractiveAuthentication $kbdint
UsePAM $pam
PermitRootLogin $rootlogin
UseDNS no
Subsystem sftp internal-sftp
EOF
    # SHLVL=1: bash sources ~/.bashrc for a command sshd starts only when SHLVL is unset (its
    # "run by sshd" rule), so the sessions do not depend on the test runner's dotfiles (on this
    # image root's pyenv init costs 0.5 s per remote command). sshd takes the first SetEnv line
    # only, so an extra SetEnv is merged into it.
    extra=${WB_SSHD_EXTRA_CONFIG:-}
    case "$extra" in
    "SetEnv "*) printf 'SetEnv SHLVL=1 %s\n' "${extra#SetEnv }" >> "$dir/sshd_config" ;;
    "") echo "SetEnv SHLVL=1" >> "$dir/sshd_config" ;;
    *) echo "SetEnv SHLVL=1" >> "$dir/sshd_config"; printf '%s\n' "$extra" >> "$dir/sshd_config" ;;
    esac
    cat > "$dir/ssh_config" <<EOF
Host wbtest
    HostName 127.0.0.1
    Port $port
    User $(id -un)
    IdentityFile $dir/user_key
    IdentitiesOnly yes
    UserKnownHostsFile $dir/known_hosts
EOF
    rm -f "$dir/sshd.pid"
    : > "$dir/sshd.log"
    if [ -n "${WB_SSHD_HIDE_DIRS:-}" ]; then
        [ "$(id -u)" -eq 0 ] || { echo "hiding folders from sshd needs root (a mount namespace)" >&2; exit 77; }
        unshare -m true 2>/dev/null || { echo "no mount namespaces here (unshare -m failed)" >&2; exit 77; }
        # sshd daemonizes inside the namespace, which lives as long as sshd and its sessions do.
        # shellcheck disable=SC2016
        unshare -m --propagation private sh -c '
            for d in $WB_SSHD_HIDE_DIRS; do
                [ -d "$d" ] || continue
                mount -t tmpfs -o ro,mode=0755,size=4k wbtest-hidden "$d" || exit 77
            done
            exec "$@"' hide "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log" || exit $?
    else
        "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log"
    fi
    i=0
    while ! grep -q "Server listening" "$dir/sshd.log" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ]; then cat "$dir/sshd.log" >&2; exit 1; fi
        sleep 0.05
    done
    # The pid file appears right after the listen message.
    i=0
    while [ ! -s "$dir/sshd.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    ;;
drop)
    # The sessions (the listener's children and theirs) are listed before the listener goes.
    sessions=
    if [ -s "$dir/sshd.pid" ]; then
        sessions=$(pgrep -P "$(cat "$dir/sshd.pid")" || true)
        for p in $sessions; do sessions="$sessions $(pgrep -P "$p" || true)"; done
    fi
    "$0" stop "$dir"
    # shellcheck disable=SC2086
    [ -n "$sessions" ] && kill $sessions 2>/dev/null
    exit 0
    ;;
stop)
    if [ -s "$dir/sshd.pid" ]; then
        pid=$(cat "$dir/sshd.pid")
        kill "$pid" 2>/dev/null || true
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        rm -f "$dir/sshd.pid"
    fi
    if [ -s "$dir/pam_service" ]; then
        rm -f "/etc/pam.d/$(cat "$dir/pam_service")" "$dir/$(cat "$dir/pam_service")" "$dir/pam_service"
    fi
    ;;
*)
    echo "usage: $0 start DIR PORT [HOSTKEY] | stop DIR | drop DIR" >&2
    exit 2
    ;;
esac
