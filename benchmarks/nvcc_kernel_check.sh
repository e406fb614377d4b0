#!/usr/bin/env bash
# Compiles the fused AdamW kernels' device code (runtime/model/cuda/adamw_kernel.cuh) with nvcc
# alone, for machines without a CUDA LibTorch: every moment variant (fp32, bf16, mixed) through
# benchmarks/nvcc_kernel_check.cu. The torch wrapper (fused_kernels.cu) is built for real only on a
# GPU machine by benchmarks/build_gpu.sh; WB_CHECK_WRAPPER=1 also compiles it here against the
# LibTorch headers in WB_TORCH_INCLUDE (default /usr/include: Debian's CPU libtorch-dev ships ATen's
# CUDA headers but not c10's generated cuda_cmake_macros.h, which is stubbed empty — it only holds
# export macros), a syntax and type check against that LibTorch version, not a build.
# Usage: benchmarks/nvcc_kernel_check.sh [sm_arch ...] (default: sm_90 sm_100). Exit status: nvcc's.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$nvcc" ]]; then
  echo "nvcc_kernel_check: no nvcc at $nvcc (set NVCC=/path/to/nvcc)" >&2
  exit 2
fi
archs=("$@")
[[ ${#archs[@]} -gt 0 ]] || archs=(sm_90 sm_100)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for arch in "${archs[@]}"; do
  # ptxas -v names each entry function it compiles: vector, resident and scalar kernel for each of the four
  # moment variants (fp32/fp32, bf16/bf16, bf16/fp32, fp32/bf16) with an fp32 gradient, and two
  # with a bf16 gradient (fp32 and bf16 moments); fewer means one went missing.
  log="$("$nvcc" -std=c++17 -arch="$arch" -Werror all-warnings -Xptxas -v -I"$repo" \
    -c "$repo/benchmarks/nvcc_kernel_check.cu" -o "$out/check_$arch.o" 2>&1)" || { echo "$log" >&2; exit 1; }
  count=$(grep -c "Compiling entry function '.*adamwKernel" <<<"$log" || true)
  if [[ "$count" -ne 18 ]]; then
    echo "$log" >&2
    echo "nvcc_kernel_check: $arch built $count AdamW kernels, expected 18" >&2
    exit 1
  fi
  regs=$(grep -o 'Used [0-9]* registers' <<<"$log" | awk '{print $2}' | sort -n | tr '\n' ' ')
  echo "nvcc_kernel_check: $arch ok (18 AdamW kernels: fp32, bf16 and mixed moments, fp32 and bf16 gradients, each vector, resident and scalar; registers: $regs)"
done
if [[ "${WB_CHECK_WRAPPER:-0}" == 1 ]]; then
  inc="${WB_TORCH_INCLUDE:-/usr/include}"
  if [[ ! -f "$inc/ATen/cuda/CUDAContext.h" ]]; then
    echo "nvcc_kernel_check: no $inc/ATen/cuda/CUDAContext.h (set WB_TORCH_INCLUDE to a LibTorch include dir)" >&2
    exit 2
  fi
  mkdir -p "$out/stub/c10/cuda/impl"
  [[ -f "$inc/c10/cuda/impl/cuda_cmake_macros.h" ]] || echo '#pragma once' >"$out/stub/c10/cuda/impl/cuda_cmake_macros.h"
  "$nvcc" -std=c++17 -arch="${archs[0]}" -I"$repo" -I"$out/stub" -I"$inc" -I"$inc/torch/csrc/api/include" \
    -c "$repo/runtime/model/cuda/fused_kernels.cu" -o "$out/fused_kernels.o"
  echo "nvcc_kernel_check: fused_kernels.cu compiles against the LibTorch headers in $inc (${archs[0]})"
fi
