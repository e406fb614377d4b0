#!/usr/bin/env bash
# Set up (install missing packages, build) and run every test that needs no GPU.
# UI tests run on Qt's offscreen platform; nothing here needs a display.
# Then runs the fuzz targets for a bounded time (scripts/fuzz.sh).
# Prints the time of each phase and the 10 slowest tests at the end.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
wb_phase packages
wb_install_missing "${WB_TEST_PACKAGES[@]}"
wb_build
wb_phase tests
echo "==> running tests"
cd "$WB_BUILD"
rc=0
# Each test has its own timeout (its CMake TIMEOUT, sized for a loaded 2-core machine).
ctest -LE gpu --output-on-failure -j "$(nproc)" "$@" || rc=$?
# The fuzz targets, each for a bounded time (scripts/fuzz.sh; WB_FUZZ_SECONDS, default 30), in a
# clang build of their own. Only for the whole suite (a ctest filter given: skipped); WB_FUZZ=0
# skips them. Seed 1 unless WB_FUZZ_SEED says otherwise: the same inputs on every run.
if [ $# -eq 0 ] && [ "${WB_FUZZ:-1}" != 0 ]; then
  wb_phase fuzz
  WB_FUZZ_SEED=${WB_FUZZ_SEED:-1} bash "$WB_ROOT/scripts/fuzz.sh" || rc=1
fi
wb_phase_report
if [ -f Testing/Temporary/CTestCostData.txt ]; then
  echo "==> slowest 10 tests (s)"
  # awk, not head: head exits after 10 lines and sort, still writing (the list outgrew one 4 KiB
  # write at 166 tests), dies of SIGPIPE, which pipefail turns into a failed run (exit 141).
  awk '/^---/ {exit} NF == 3 {printf "    %7.1f  %s\n", $3, $1}' Testing/Temporary/CTestCostData.txt | sort -rn | awk 'NR <= 10'
fi
exit $rc
