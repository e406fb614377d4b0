#!/usr/bin/env python3
"""Largest source files and functions of the C++ tree (app core remote runtime ui), and the median
function length: the numbers issue 19 asks for before and after a restructuring.

usage: code_stats.py [ROOT] [--top N]

A function is a brace block whose opening line ends a signature (a ')' before the '{', optionally
followed by const/override/noexcept/-> type), found outside string literals and comments, at any
depth that is not itself inside a function (member functions in class bodies count; lambdas inside
a function do not). Lines are counted from the signature's first line to the closing brace.
Heuristic, but stable between two trees, which is what a before/after needs.
"""
import os
import re
import statistics
import sys

FOLDERS = ("app", "core", "remote", "runtime", "ui")
EXTS = (".cpp", ".h", ".cu")
SIGNATURE_END = re.compile(r"\)\s*(const|override|final|noexcept|mutable|\s|->\s*[\w:<>,\s\*&]+)*$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|else if)\b")


def strip(text):
    """Source without comments and string/char literals (kept line structure)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = ")" + (m.group(1) if m else "") + '"'
            j = text.find(end, i)
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    found, stack = [], []  # stack of (kind, start line, name)
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[max(0, i - 400):i]
            head = head[head.rfind(";") + 1:] if ";" in head else head
            head = head[max(head.rfind("}"), head.rfind("{")) + 1:]
            inside = any(kind == "f" for kind, _, _ in stack)
            sig = head.strip()
            if not inside and SIGNATURE_END.search(sig) and not CONTROL.match(sig) and "(" in sig:
                name = re.findall(r"([~\w:]+)\s*\(", sig)
                start = line - sig.count("\n")
                stack.append(("f", start, name[0] if name else "?"))
            else:
                stack.append(("b", line, ""))
        elif c == "}" and stack:
            kind, start, name = stack.pop()
            if kind == "f":
                found.append((line - start + 1, name, start))
    return found


def main():
    args = sys.argv[1:]
    top = 10
    if "--top" in args:
        k = args.index("--top")
        top = int(args[k + 1])
        del args[k:k + 2]
    root = args[0] if args else "."
    files, funcs = [], []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith(EXTS):
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, root)
                    files.append((sum(1 for _ in open(path, encoding="utf-8", errors="replace")), rel))
                    funcs += [(n, f"{rel}:{start} {fn}") for n, fn, start in functions(path)]
    files.sort(reverse=True)
    funcs.sort(reverse=True)
    print(f"{len(files)} files, {sum(n for n, _ in files)} lines; {len(funcs)} functions, "
          f"median {statistics.median(n for n, _ in funcs):.0f} lines, "
          f"{sum(1 for n, _ in funcs if n > 80)} over 80 lines")
    print("largest files:")
    for n, rel in files[:top]:
        print(f"  {n:5d}  {rel}")
    print("largest functions:")
    for n, where in funcs[:top]:
        print(f"  {n:5d}  {where}")


if __name__ == "__main__":
    main()
