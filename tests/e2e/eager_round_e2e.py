#!/usr/bin/env python3
"""Dry run of the GPU benchmark round on the CPU: `WB_ROUND_TINY=1 benchmarks/gpu_round.sh 4` with
sample-tiny must finish and print one table with every row, each measured or saying why not.

usage: eager_round_e2e.py --bin DIR   (DIR holds moe-train and moe-sample-set)
Checks: exit 0; table.md has a row for each run of the round; rows moe-train --validate refuses
say "not supported by this build"; the eager loop row is measured where a Python has torch (else
says so) and its ratio line is printed; the grouped-GEMM eager row is "n/a" on the CPU.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = ["real", "mock", "real-mbs1", "real-mbs2", "real-mbs8", "real-frozen-vision", "real-recompute-selective",
        "real-recompute-full", "real-cuda-graphs", "eager-real-loop", "eager-real-grouped", "eager-mock-loop"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    if not os.path.isdir("/usr/share/openclipart/png"):
        print("SKIP: /usr/share/openclipart/png is missing")
        return 77
    tmp = tempfile.mkdtemp(prefix="wb-round-dry-")
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            failures.append(what)

    try:
        env = dict(os.environ, WB_ROUND_TINY="1", WB_ROUND_BIN=args.bin, WB_ROUND_RESULTS=tmp, WB_ROUND_BUDGET="1200")
        env.pop("OUT", None)
        p = subprocess.run(["bash", os.path.join(ROOT, "benchmarks", "gpu_round.sh"), "4"], env=env,
                           capture_output=True, text=True, timeout=1500)
        print(p.stdout[-6000:], p.stderr[-2000:])
        check(p.returncode == 0, "gpu_round.sh exits 0")
        table_path = os.path.join(tmp, "table.md")
        check(os.path.isfile(table_path), "table.md written")
        table = open(table_path).read() if os.path.isfile(table_path) else ""
        cells = {}
        for line in table.splitlines():
            m = re.match(r"\| ([a-z0-9-]+)[^|]*\| (ours|eager) \| ([^|]*)\| ([^|]*)\|", line)
            if m:
                cells[m.group(1)] = (m.group(3).strip(), m.group(4).strip())
        for row in ROWS:
            check(row in cells, f"row {row} in the table")
        for row in ("real", "mock", "real-mbs1", "real-mbs2", "real-mbs8", "real-frozen-vision"):
            check(row in cells and cells[row][0].isdigit() and re.match(r"^[0-9.]+$", cells[row][1]) is not None,
                  f"{row} measured")
        for row in ("real-recompute-selective", "real-recompute-full", "real-cuda-graphs"):
            check(row in cells and (cells[row][0].isdigit() or "not supported by this build" in cells[row][1]),
                  f"{row} measured or 'not supported by this build'")
        torch_here = any(subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0
                         for exe in ("python3", "/usr/bin/python3") if shutil.which(exe) or os.path.exists(exe))
        if torch_here:
            check("eager-real-loop" in cells and cells["eager-real-loop"][0].isdigit(), "eager-real-loop measured")
            check(re.search(r"real / eager-real-loop: \*\*[0-9.]+×\*\*", table) is not None, "ratio ours/eager printed")
        else:
            check("no Python with torch" in cells.get("eager-real-loop", ("", ""))[1], "eager row says torch is missing")
        check("n/a" in cells.get("eager-real-grouped", ("", ""))[1] or "no Python" in cells.get("eager-real-grouped", ("", ""))[1],
              "grouped eager row is n/a on the CPU")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("FAILED: " + "; ".join(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
