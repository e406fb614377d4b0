#!/usr/bin/env python3
"""Every ctest test has its own TIMEOUT, sized for a loaded 2-core machine (docs/build.md), and
none waits longer than the CI can afford for one test.

ctest's default (1500 s) would let a hung test eat a third of CI's budget before anyone hears of
it, and scripts/test.sh passes no --timeout: so a test added without one fails here, naming it.
usage: test_timeouts.py BUILD_DIR            (ctest: test_timeouts)
"""
import json
import subprocess
import sys

MAX_S = 900  # the slowest test (test_ssh_provision, a cold remote build) needs ~6 min on 2 cores

build = sys.argv[1]
out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True, check=True)
tests = json.loads(out.stdout)["tests"]
missing, too_long = [], []
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    timeout = props.get("TIMEOUT")
    if timeout is None:
        missing.append(t["name"])
    elif float(timeout) > MAX_S:
        too_long.append(f"{t['name']} ({timeout} s)")
print(f"{len(tests)} tests; {len(missing)} without a TIMEOUT; {len(too_long)} over {MAX_S} s")
for name in missing:
    print(f"FAIL no TIMEOUT: {name} (set_tests_properties(... TIMEOUT <3-4x its time on 2 loaded cores>))")
for name in too_long:
    print(f"FAIL TIMEOUT over {MAX_S} s: {name}")
sys.exit(1 if missing or too_long else 0)
