#!/bin/bash
# `moe-workbench-cli hosts script check|build|bundle` (no network): the check script runs here
# with sh and its output is accepted by `build`, which prints the report on stderr and a build
# script on stdout (POSIX sh, and a CUDA build for a GPU node's check output); `bundle` writes the
# exact upload set into DIR/src, with a hash that depends on the content; usage errors.
# Usage: test_hosts_script.sh CLI
set -uo pipefail

cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi; }
wb() { "$cli" --db "$tmp/data/runs.sqlite" "$@"; }

cache="$tmp/cache dir/it's"
wb hosts script check --cache-dir "$cache" >"$tmp/check.sh"
check '[ $? -eq 0 ] && sh -n "$tmp/check.sh"' "hosts script check prints a POSIX sh script"
sh "$tmp/check.sh" >"$tmp/check.out" 2>"$tmp/check.err"
check 'grep -qxF "cache_dir=$cache" "$tmp/check.out" && grep -q "^cpus=" "$tmp/check.out"' "run here, it reports the quoted cache dir and the CPUs"

wb hosts script build --check-output "$tmp/check.out" >"$tmp/build.sh" 2>"$tmp/build.err"
rc=$?
check '[ $rc -eq 0 ] && sh -n "$tmp/build.sh" && grep -q "cmake -S src/runtime -B build" "$tmp/build.sh"' "hosts script build prints the build script for this machine (rc $rc)"
check 'grep -q "^LibTorch: " "$tmp/build.err" && grep -q "^compiler: " "$tmp/build.err"' "and the node report on stderr"
check '! grep -q "WB_WITH_CUDA" "$tmp/build.sh"' "no CUDA build on a CPU-only node"

# A GPU node's check output (as nvidia-smi and the PyTorch wheel report them on an H200 node).
{ cat "$tmp/check.out"; printf '%s\n' "gpu=NVIDIA H200, 143771 MiB" "gpu=NVIDIA H200, 143771 MiB" \
    "py_torch=/opt/venv/lib/python3.12/site-packages/torch/share/cmake 2.11.0+cu130 13.0" \
    "nccl_dir=/opt/venv/lib/python3.12/site-packages/nvidia/nccl"; } >"$tmp/gpu.out"
nccl="-DNCCL_INCLUDE_DIR='/opt/venv/lib/python3.12/site-packages/nvidia/nccl/include'"
wb hosts script build --check-output "$tmp/gpu.out" --jobs 16 >"$tmp/gpu.sh" 2>"$tmp/gpu.err"
check '[ $? -eq 0 ] && grep -q -- "-DWB_WITH_CUDA=ON" "$tmp/gpu.sh" && grep -qF -- "$nccl" "$tmp/gpu.sh" && grep -q -- "-j 16 " "$tmp/gpu.sh"' "a GPU node's check gives a CUDA build with the wheel's NCCL"
check 'grep -q "^GPUs: 2 x NVIDIA H200 (143771 MiB)" "$tmp/gpu.err" && grep -q "^LibTorch: 2.11.0+cu130 from python3 torch, CUDA 13.0" "$tmp/gpu.err"' "the report names the GPUs and the CUDA LibTorch"

# What the check printed on a real H200 node without the stb headers (verbatim): ready, nothing
# missing (the headers come with the bundle), a CUDA build that uses the bundle's headers.
here=$(cd "$(dirname "$0")" && pwd)
wb hosts script build --check-output "$here/h200_node_check.out" >"$tmp/h200.sh" 2>"$tmp/h200.err"
rc=$?
check '[ $rc -eq 0 ] && ! grep -q "^missing:" "$tmp/h200.err" && grep -q "^headers: nlohmann/json and stb come with the bundle" "$tmp/h200.err"' "the real H200 node's check gives a build, nothing missing (rc $rc)"
check 'grep -q -- "-DWB_WITH_CUDA=ON" "$tmp/h200.sh" && grep -qF -- "-DWB_STB_INCLUDE_DIR=\$(pwd)/src/deps/include/stb" "$tmp/h200.sh" && sh -n "$tmp/h200.sh"' "with CUDA and the bundle's headers"

# A node that lacks cmake: the report says so and no script comes out.
grep -v '^cmake=' "$tmp/check.out" >"$tmp/nocmake.out"
wb hosts script build --check-output "$tmp/nocmake.out" >"$tmp/nocmake.sh" 2>"$tmp/nocmake.err"
check '[ $? -eq 1 ] && [ ! -s "$tmp/nocmake.sh" ] && grep -q "cmake is not on PATH" "$tmp/nocmake.err"' "a node without cmake: the fix is named, nothing to run"

wb hosts script bundle --out "$tmp/b1" >"$tmp/b1.out"
check '[ $? -eq 0 ] && [ -f "$tmp/b1/src/runtime/CMakeLists.txt" ] && [ -d "$tmp/b1/src/core" ] && [ -d "$tmp/b1/src/cmake" ]' "hosts script bundle writes src/ with runtime, core and cmake"
check '[ -f "$tmp/b1/src/deps/include/nlohmann/json.hpp" ] && [ -f "$tmp/b1/src/deps/include/stb/stb_image.h" ] && grep -q "^headers in src/deps/include: nlohmann/json from .*, stb from " "$tmp/b1.out"' "the bundle carries nlohmann/json and stb from this machine"
hash1=$(awk 'NR==1 {print $2}' "$tmp/b1.out" | tr -d ':')
files=$(find "$tmp/b1/src" -type f | wc -l)
check 'grep -q "$files files" "$tmp/b1.out" && [ ${#hash1} -eq 16 ]' "it reports $files files and a 16-digit hash ($hash1)"
wb hosts script bundle --out "$tmp/b1" >/dev/null 2>"$tmp/again.err"
check '[ $? -ne 0 ] && grep -q "already exists" "$tmp/again.err"' "an existing src/ is not overwritten"

wb hosts script build >/dev/null 2>"$tmp/usage.err"
check '[ $? -eq 2 ] && grep -q -- "--check-output" "$tmp/usage.err"' "build without --check-output is a usage error"
wb hosts script nonsense >/dev/null 2>&1
check '[ $? -eq 2 ]' "an unknown script is a usage error"

[ $failures -eq 0 ] || { tail -n 20 "$tmp"/*.err; exit 1; }
echo "all passed"
