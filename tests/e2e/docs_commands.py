#!/usr/bin/env python3
"""Docs that run (issue 18 item 14): every command block of the given Markdown files that is
marked runnable is run, and its output is compared with what the page shows.

usage: docs_commands.py --bin DIR --source DIR FILE.md...

A block is runnable when the line right before its opening fence is `<!-- runnable -->`. In it,
`$ cmd` lines are commands and the lines after one, up to the next `$`, are the output the page
promises. The block runs as one bash script (variables carry from one command to the next) in a
fresh folder with the programs of --bin first on PATH, HOME and the XDG folders inside that folder
(a fresh store, nothing of the user's), and `resources/` of the source tree beside it (the pages
name `resources/configs/...`). `$ echo $?` prints the previous command's exit status; any other
command must exit 0 unless an `echo $?` after it says otherwise.

The comparison is of shape, not numbers: in both texts every number becomes `#`, every run id
`RUN`, config hash `HASH` and date `DATE`, runs of spaces become one, and each promised line must
appear in the output, in order (a line `...` stands for lines left out, `...` inside a line for
any text there: a path). A page whose example shows columns, words or messages the
program no longer prints fails, naming the page, the line and what was printed instead.
Exit 0 = every block as promised, 1 = a difference, 77 = nothing runnable (ctest SKIP).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MARK = "<!-- runnable -->"
RC_MARK = "@@rc "


def blocks(path):
    """(line number of the first command, [(command, [promised lines], line)]) per runnable block."""
    lines = open(path, encoding="utf-8").read().splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == MARK and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            j = i + 2
            commands = []
            while j < len(lines) and not lines[j].startswith("```"):
                if lines[j].startswith("$ "):
                    commands.append([lines[j][2:], [], j + 1])
                elif commands:
                    commands[-1][1].append(lines[j])
                j += 1
            if commands:
                out.append(commands)
            i = j
        i += 1
    return out


NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")
HASH = re.compile(r"\b[0-9a-f]{16}\b")  # config hashes
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b")


def shape(line):
    line = RUN_ID.sub("RUN", line)
    line = HASH.sub("HASH", line)
    line = DATE.sub("DATE", line)
    line = NUMBER.sub("#", line)
    return " ".join(line.split())


def matches(want, have):
    """`want` is in `have`; a `...` inside `want` stands for any text."""
    pos = 0
    for part in want.split("..."):
        part = part.strip()
        if not part:
            continue
        found = have.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    return True


def script(commands):
    parts = ["set +e"]
    for command, _, _ in commands:
        command = command.replace("echo $?", "echo $__rc")
        # The marker goes to stdout after the command's own output (stderr merged in order).
        parts.append("{ %s ; } 2>&1\n__rc=$?\necho '%s'$__rc" % (command, RC_MARK))
    return "\n".join(parts) + "\n"


def check_block(page, commands, env, cwd):
    failures = []
    run = subprocess.run(["bash", "-c", script(commands)], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=900)
    outputs = []  # (output lines, rc) per command
    current = []
    for line in run.stdout.splitlines():
        if line.startswith(RC_MARK):
            outputs.append((current, int(line[len(RC_MARK):])))
            current = []
        else:
            current.append(line)
    if len(outputs) != len(commands):
        return ["%s:%d: the block stopped after %d of %d commands: %s" % (page, commands[0][2], len(outputs),
                                                                          len(commands), run.stderr[-500:])]
    for k, ((command, promised, line), (got, rc)) in enumerate(zip(commands, outputs)):
        followed_by_rc = k + 1 < len(commands) and commands[k + 1][0].strip() == "echo $?"
        if rc != 0 and not followed_by_rc and command.strip() != "echo $?":
            failures.append("%s:%d: `%s` exited %d:\n    %s" % (page, line, command, rc, "\n    ".join(got[-8:])))
            continue
        wanted = [shape(p) for p in promised if p.strip() and p.strip() != "..."]
        have = [shape(g) for g in got]
        at = 0
        for want in wanted:
            while at < len(have) and not matches(want, have[at]):
                at += 1
            if at == len(have):
                failures.append("%s:%d: `%s` did not print a line shaped like\n    %s\n  it printed:\n    %s"
                                % (page, line, command, want, "\n    ".join(got[:40])))
                break
            at += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("pages", nargs="+")
    args = ap.parse_args()
    failures = []
    ran = 0
    for page in args.pages:
        for commands in blocks(page):
            with tempfile.TemporaryDirectory(prefix="wb-docs-") as tmp:
                env = dict(os.environ)
                env.update({
                    "PATH": os.path.abspath(args.bin) + os.pathsep + env.get("PATH", ""),
                    "HOME": tmp,
                    "XDG_DATA_HOME": os.path.join(tmp, ".local", "share"),
                    "XDG_CACHE_HOME": os.path.join(tmp, ".cache"),
                    "XDG_CONFIG_HOME": os.path.join(tmp, ".config"),
                    "LC_ALL": "C.UTF-8",
                })
                os.symlink(os.path.join(os.path.abspath(args.source), "resources"), os.path.join(tmp, "resources"))
                found = check_block(os.path.relpath(page, args.source), commands, env, tmp)
                ran += 1
                print("%s:%d: %d command(s): %s" % (os.path.relpath(page, args.source), commands[0][2], len(commands),
                                                    "FAIL" if found else "ok"), flush=True)
                failures += found
    for f in failures:
        print("FAIL:", f)
    if ran == 0:
        print("skip: no runnable block")
        return 77
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
