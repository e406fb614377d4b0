#!/usr/bin/env python3
"""No connect() to a functor without a context object in ui/ and app/.

QObject::connect(sender, signal, functor) (three arguments) has no receiver: the functor runs for as
long as the sender lives, also after whatever it captured is gone, and on the sender's thread. Every
connect to a lambda or function names a context object instead — connect(sender, signal, context,
functor) — which Qt disconnects when the context is destroyed and whose thread runs the functor.
Qt >= 6.7 enforces this with QT_NO_CONTEXTLESS_CONNECT (ui/CMakeLists.txt defines it); Debian's Qt
6.4 ignores that macro, so this check enforces it here by reading the sources: every connect( call
(not disconnect, not a member named connect of another class) is split into its top-level
arguments, and three arguments is a finding.

usage: contextless_connect_check.py DIR...   exit 1 and one line per finding, 0 when clean
"""
import os
import re
import sys

CALL = re.compile(r"(?<![A-Za-z0-9_])(?:QObject::)?connect\s*\(")


def strip_comments_and_strings(text):
    """Blanks comments and string/char literals (keeping newlines) so commas and parens inside
    them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def arguments(text, start):
    """Top-level arguments of the call whose '(' is at text[start]."""
    depth, args, current = 0, [], []
    pairs = {"(": ")", "[": "]", "{": "}"}
    closing = set(pairs.values())
    for ch in text[start + 1:]:
        if ch in pairs:
            depth += 1
        elif ch in closing:
            if depth == 0:
                args.append("".join(current).strip())
                return args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    return None  # unbalanced: not a call we can read


def findings(path):
    text = strip_comments_and_strings(open(path, encoding="utf-8", errors="replace").read())
    for m in CALL.finditer(text):
        before = text[max(0, m.start() - 12):m.start()]
        if before.rstrip().endswith((".", "->")) or before.endswith("dis"):
            continue  # another object's connect(), or disconnect()
        args = arguments(text, m.end() - 1)
        if args is not None and len(args) == 3:
            line = text.count("\n", 0, m.start()) + 1
            yield f"{path}:{line}: connect() without a context object: pass the receiver (usually this) before the functor"


def main(dirs):
    bad = []
    for top in dirs:
        for root, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith((".cpp", ".h")):
                    bad.extend(findings(os.path.join(root, name)))
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
