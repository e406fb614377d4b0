// Version gates between the two LibTorch builds moe-train compiles against (Debian 1.13 CPU in CI,
// the PyTorch 2.11 wheel with CUDA on GPU nodes). Every API newer than 1.13 is used behind one of
// these, with a fallback that works everywhere. Header only; any thread.
#pragma once

#include <torch/version.h>

#if WB_WITH_CUDA
#include <ATen/autocast_mode.h>
#endif

#define WB_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// at::_grouped_mm (bf16 CUTLASS fast path on sm90/sm100) appeared in 2.8.
#define WB_HAVE_GROUPED_MM (WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 8))
// at::_flash_attention_forward with cum_seq_q/k (varlen) and its autograd formula: 2.1+ on CUDA.
#define WB_HAVE_FLASH_VARLEN (WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 1))

namespace wb::rt {
/// True inside moe-train's bf16 CUDA autocast region (LibTorch >= 2.4 per-device API).
inline bool cudaAutocastBf16On()
{
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
    return at::autocast::is_autocast_enabled(at::kCUDA) && at::autocast::get_autocast_dtype(at::kCUDA) == at::kBFloat16;
#else
    return false;
#endif
}
}  // namespace wb::rt
