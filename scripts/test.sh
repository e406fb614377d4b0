#!/usr/bin/env bash
# Set up (install missing packages, build) and run every test that needs no GPU.
# UI tests run on Qt's offscreen platform; nothing here needs a display.
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
wb_phase_report
if [ -f Testing/Temporary/CTestCostData.txt ]; then
  echo "==> slowest 10 tests (s)"
  awk '/^---/ {exit} NF == 3 {printf "    %7.1f  %s\n", $3, $1}' Testing/Temporary/CTestCostData.txt | sort -rn | head -10
fi
exit $rc
