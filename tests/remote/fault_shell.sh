#!/bin/sh
# sshd ForceCommand for the fault-injection tests (test_remote_retries, test_slurm_target): runs
# the client's command as sshd would, and for the first command that matches a rule, loses its
# answer after the command really ran on the server:
#   FAULTS/NAME.rule   line 1: the action, line 2: a fixed string the command must contain
#     delay SECONDS    the command runs, then the channel stays open (no exit status) for SECONDS:
#                      the client's command timeout passes and the answer never arrives
#     drop             the command runs, then its sshd session process is killed: the connection
#                      is lost before the exit status is sent
#     slow SECONDS     the command runs with sbatch delayed by SECONDS (a slow slurmctld), so the
#                      client times out while the command is still running
# Each rule fires once (FAULTS/NAME.rule.fired); FAULTS/fired.log lists what fired, with the
# command's exit code. The SFTP subsystem (SSH_ORIGINAL_COMMAND=internal-sftp) is served normally.
# Usage (sshd_config): ForceCommand /path/fault_shell.sh FAULTS
faults=$1
cmd=${SSH_ORIGINAL_COMMAND-}
case "$cmd" in
internal-sftp | */sftp-server | sftp) exec /usr/lib/openssh/sftp-server ;;
esac
fired=
for rule in "$faults"/*.rule; do
    [ -f "$rule" ] || continue
    pattern=$(sed -n 2p "$rule")
    case "$cmd" in *"$pattern"*) ;; *) continue ;; esac
    mkdir "$rule.fired" 2>/dev/null || continue
    fired=$rule
    break
done
[ -n "$fired" ] || exec /bin/sh -c "$cmd"
action=$(sed -n 1p "$fired")
# The sshd process serving this connection: the nearest ancestor named sshd (the login shell
# that ran this script may or may not have exec'ed it).
session=$PPID
while [ "$session" -gt 1 ] && [ "$(cat /proc/"$session"/comm 2>/dev/null)" != sshd ]; do
    session=$(awk '{print $4}' /proc/"$session"/stat 2>/dev/null || echo 1)
done
case "$action" in
slow\ *)
    mkdir -p "$faults/slow-bin"
    real=$(command -v sbatch)
    printf '#!/bin/sh\nsleep %s\nexec %s "$@"\n' "${action#slow }" "$real" > "$faults/slow-bin/sbatch"
    chmod +x "$faults/slow-bin/sbatch"
    PATH="$faults/slow-bin:$PATH" /bin/sh -c "$cmd"
    rc=$?
    ;;
*)
    /bin/sh -c "$cmd"
    rc=$?
    ;;
esac
echo "$(basename "$fired" .rule) rc=$rc" >> "$faults/fired.log"
case "$action" in
delay\ *) sleep "${action#delay }" ;;
drop) [ "$session" -gt 1 ] && kill -9 "$session" ;;
esac
exit $rc
