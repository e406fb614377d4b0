#!/usr/bin/env bash
# Set up (install missing packages, build) and run every test that needs no GPU.
# UI tests run on Qt's offscreen platform; nothing here needs a display.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
wb_install_missing "${WB_TEST_PACKAGES[@]}"
wb_build
echo "==> running tests"
cd "$WB_BUILD"
ctest -LE gpu --output-on-failure -j "$(nproc)" --timeout 900 "$@"
