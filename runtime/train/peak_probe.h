// A short peak-rate probe for `moe-train --self-check` on CUDA: a bf16 matmul (TFLOP/s) and a
// device-to-device copy (HBM GB/s), each printed beside the datasheet number the MFU uses, so a
// user sees how far a node's achievable peak is from the catalog before blaming the trainer.
// Timed with a synchronize around warm repetitions (a probe, not the training path). CUDA only.
#pragma once

#include <torch/torch.h>

#include <string>

namespace wb::rt {

struct PeakProbe {
    bool ran = false;
    std::string why;                  ///< why it did not run (CPU build, no GPU)
    std::string device;
    double matmulTflops = 0.0;        ///< bf16 n×n·n×n, 2n³ FLOP per product
    double catalogTflops = 0.0;       ///< peakDenseBf16Tflops (0 = unknown GPU)
    double copyGbPerS = 0.0;          ///< bytes read + written per second
    double catalogGbPerS = 0.0;       ///< HBM datasheet bandwidth (0 = unknown GPU)
    int64_t matmulSize = 0;
    int64_t copyBytes = 0;
};

/// Runs on cuda:0 when this build has CUDA and a GPU is visible (a few seconds); else ran = false.
PeakProbe probePeakRates();

/// HBM datasheet bandwidth in GB/s from the device name (H100 3350, H200 4800, B200 / GB200 8000).
double catalogHbmGbPerS(const std::string& deviceName);

}  // namespace wb::rt
