// Host tensors to the device without the host waiting for the stream. Header only; any thread
// that may queue work on the current stream.
#pragma once

#include <torch/torch.h>

namespace wb::rt {

/// `host` (a CPU tensor) on `device`. CUDA: staged in pinned memory (LibTorch's caching host
/// allocator keeps the block until the copy's stream has passed it) and copied asynchronously.
/// A copy from pageable memory with non_blocking=false synchronizes the stream: the host would
/// wait there for everything queued before it (the previous step's optimizer included) and the
/// GPU would then idle while the host queues what follows. CPU: a clone (the caller's storage
/// may be a from_blob view of memory that goes away).
inline torch::Tensor toDeviceAsync(const torch::Tensor& host, torch::Device device)
{
    return device.is_cpu() ? host.clone() : host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace wb::rt
