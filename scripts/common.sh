# Shared by start.sh and test.sh: install what is missing (Debian 12), configure and build.
# Idempotent and quick when everything is already there: apt is only called for missing packages.
set -euo pipefail

WB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WB_BUILD=${WB_BUILD_DIR:-$WB_ROOT/build}

WB_PACKAGES=(
  cmake ninja-build g++ pkg-config
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev  # GUI (Widgets, Charts) and Qt Test
  libtorch-dev libgloo-dev libopenblas0-pthread  # the runtime: CPU LibTorch (OpenBLAS: 5x the reference BLAS), Gloo
  libspdlog-dev nlohmann-json3-dev libsqlite3-dev libssh-dev libstb-dev
  libprotobuf-dev protobuf-compiler              # core/bridge: TensorBoard event files (protoc + libprotobuf-lite)
  openclipart-png                                # real images for the sample set
  fonts-dejavu-core xvfb xauth                   # text in offscreen UI tests and screenshots
  qt6-l10n-tools fonts-wqy-microhei              # lrelease for the zh_CN UI translation; a CJK font to show it
)
# Only for the tests (test.sh): the SSH tests start a private sshd on 127.0.0.1. Not installed by
# start.sh, since on a desktop the package would also enable a system sshd on port 22. The Slurm
# test starts its own munged + slurmctld + slurmd from slurm-wlm and munge the same way.
# python3-torch (Debian's PyTorch 1.13 for Python, ≈ 50 s to install beside libtorch-dev): the e2e
# test that checks the PyTorch-eager benchmark baseline against moe-train (tests/e2e/eager_e2e.py).
# help2man (the man pages, made at build time), lintian, desktop-file-utils and appstream: the
# package test (tests/e2e/package_e2e.sh) builds the .deb and checks it as Debian does.
# clang-format: the format check of changed lines (scripts/check_format.sh).
WB_TEST_PACKAGES=(openssh-server openssh-client slurm-wlm munge python3-torch
                  help2man lintian desktop-file-utils appstream clang-format)
# The fuzz targets (scripts/fuzz.sh): clang with its libFuzzer, ASan and UBSan runtimes.
WB_FUZZ_PACKAGES=(clang libclang-rt-14-dev)

# Phase timer: `wb_phase NAME` ends the previous phase and starts NAME; `wb_phase` alone ends the
# last one. wb_phase_report prints every phase's seconds (CI prints them; so does test.sh).
WB_PHASES=()
wb_phase() {
  local now
  now=$(date +%s)
  if [ -n "${WB_PHASE_NAME:-}" ]; then
    WB_PHASES+=("$WB_PHASE_NAME $((now - WB_PHASE_START))")
  fi
  WB_PHASE_NAME=${1:-}
  WB_PHASE_START=$now
}
wb_phase_report() {
  wb_phase
  echo "==> time per phase (s)"
  local p
  for p in "${WB_PHASES[@]}"; do printf '    %-10s %6s\n' ${p}; done
}

wb_install_missing() {  # extra arguments: more packages to require
  local missing=()
  for p in "${WB_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> installing ${#missing[@]} missing Debian package(s) (a few minutes on a fresh machine)"
  echo "    ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configure once, then build what changed. A first build takes ~10 min on 2 cores (docs/build.md);
# an up-to-date tree is checked in a second. WB_CMAKE_ARGS: extra configure arguments.
wb_build() {
  local jobs
  jobs=$(nproc)
  wb_phase configure
  if [ ! -f "$WB_BUILD/CMakeCache.txt" ]; then
    echo "==> configuring $WB_BUILD (first build: about $((20 / jobs + 1)) min with $jobs core(s); later builds only redo what changed)"
    # shellcheck disable=SC2086
    cmake -S "$WB_ROOT" -B "$WB_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${WB_CMAKE_ARGS:-} >/dev/null
  fi
  wb_phase build
  # An up-to-date tree takes ~1 s here (ninja checks the globs and finds nothing to do).
  echo "==> building in $WB_BUILD ($jobs jobs)"
  cmake --build "$WB_BUILD" -j "$jobs"
}
