#!/usr/bin/env bash
# Builds runtime/ with CUDA + NCCL against the machine's PyTorch wheel (LibTorch), header-only deps
# from .gpu-deps/usr. Used by gpu_round.sh and gpu_dp.sh; prints the build dir's bin folder.
#   benchmarks/build_gpu.sh TARGET... ; env WB_GPU_BUILD (default /tmp/wb-rt-build), RESULTS (logs),
#   WB_CUDA_ARCHS (default: this machine's GPU, e.g. 90; runtime/CMakeLists.txt alone builds 90 and
#   100 — nvcc compiles fused_kernels.cu once per architecture, on the build's critical path)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
LOGS=${RESULTS:-/tmp/gpu_round}
mkdir -p "$LOGS"
TORCH_CMAKE=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
NCCL_DIR=$(python3 -c 'import torch,os;print(os.path.dirname(os.path.dirname(torch.__file__)))')/nvidia/nccl
echo "== build ($(python3 -c 'import torch;print(torch.__version__)'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | xargs))" >&2
ARCHS=${WB_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')}
cmake -S "$ROOT/runtime" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWB_WITH_CUDA=ON \
      ${ARCHS:+-DCMAKE_CUDA_ARCHITECTURES="$ARCHS"} \
      -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" -DWB_DEPS_PREFIX="$ROOT/.gpu-deps/usr" \
      -DNCCL_INCLUDE_DIR="$NCCL_DIR/include" -DNCCL_LIBRARY="$NCCL_DIR/lib/libnccl.so.2" >"$LOGS/cmake.log" 2>&1 \
  || { tail -30 "$LOGS/cmake.log" >&2; exit 1; }
ninja -C "$BUILD" "$@" >"$LOGS/build.log" 2>&1 \
  || { grep -B2 -A12 'error' "$LOGS/build.log" | head -80 >&2; exit 1; }
echo "$BUILD/bin"
