#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, like a person at a terminal would, and answers every
password prompt it shows with $WB_PTY_ANSWER (a line). For the CLI's prompt tests: the CLI asks
only when stdin is a terminal, on /dev/tty, with echo off.

    WB_PTY_ANSWER=SECRET pty_answer.py PROMPT_LOG -- COMMAND [ARG...]

Prints what the command wrote to the terminal (stdout and stderr together, CR LF as LF) and
exits with its exit status (124 after 240 s without output). PROMPT_LOG gets one line per prompt
answered: the terminal line that held "assword:".
"""
import os
import pty
import re
import select
import signal
import sys


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    log_path, command = sys.argv[1], sys.argv[3:]
    answer = os.environ.get("WB_PTY_ANSWER", "").encode() + b"\n"
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    output = b""
    pending = b""  # terminal output since the last answer
    prompts = []
    while True:
        ready, _, _ = select.select([fd], [], [], 240)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stdout.write(output.decode(errors="replace").replace("\r\n", "\n"))
            print("pty_answer: no output for 240 s; killed", file=sys.stderr)
            return 124
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the command closed the terminal (it exited)
            break
        if not data:
            break
        output += data
        pending += data
        # A prompt is the last thing on the terminal, not followed by a newline yet.
        match = re.search(rb"([^\n]*assword[^\n]*:\s*)$", pending)
        if match:
            prompts.append(match.group(1).decode(errors="replace").strip())
            os.write(fd, answer)
            pending = b""
    _, status = os.waitpid(pid, 0)
    with open(log_path, "a", encoding="utf-8") as log:
        for prompt in prompts:
            log.write(prompt + "\n")
    sys.stdout.write(output.decode(errors="replace").replace("\r\n", "\n"))
    return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8


if __name__ == "__main__":
    sys.exit(main())
