// Bytes a tensor's elements take (0 for an undefined tensor): memory reports, FSDP shard sizes,
// the reducer's bucket accounting. Header only; any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace wb::rt {

inline int64_t tensorBytes(const at::Tensor& t)
{
    return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

}  // namespace wb::rt
