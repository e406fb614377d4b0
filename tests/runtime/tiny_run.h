// In-process training of the sample-tiny model for the runtime tests that need to look inside a
// run (recompute, frozen vision): the shipped sample-mock config, the real loader in mock mode
// (seeded noise images, synthetic captions), the real model, optimizer and recompute runner.
// The loop is the trainer's core (forward, backward, AdamW with the configured moment dtypes)
// without clipping or LR schedule.
#pragma once

#include "core/run_config.h"
#include "runtime/data/batch_loader.h"
#include "runtime/model/vlm_model.h"
#include "runtime/train/memory_report.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/recompute_runner.h"

#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace wb::test {

inline core::RunConfig sampleMockConfig()
{
    auto loaded = core::loadRunConfig(std::string(WB_SOURCE_DIR) + "/resources/configs/sample-mock.json");
    if (!loaded)
        throw std::runtime_error(loaded.error().toString());
    core::RunConfig c = *loaded;
    c.data.manifest.clear();
    return c;
}

/// The first `count` micro-batches of the mock stream for `c`.
inline std::vector<rt::MicroBatch> mockBatches(const core::RunConfig& c, int count)
{
    std::vector<rt::ManifestEntry> entries;
    for (int i = 0; i < 256; ++i)
        entries.push_back({"", "mock sample " + std::to_string(i) + ": noise image"});
    rt::BatchLoader loader(std::move(entries), rt::LoaderOptions::fromConfig(c));
    std::vector<rt::MicroBatch> out;
    for (int i = 0; i < count; ++i)
        out.push_back(*loader.next());
    loader.stop();
    return out;
}

struct TinyRunResult {
    std::vector<double> losses;       ///< lm + aux per step
    int64_t forwardHeldBytes = 0;     ///< CPU tensor bytes still held after step 1's forward (saved for backward)
    int64_t stepPeakBytes = 0;        ///< peak CPU tensor bytes during step 1 above the level before it
    int64_t momentBytes = 0;          ///< bytes of the AdamW moments after the last step (their dtype)
};

/// Trains `batches.size()` steps from the config's seed with recompute `r`, one thread.
inline TinyRunResult trainTiny(core::RunConfig c, const core::RecomputeConfig& r,
                               const std::vector<rt::MicroBatch>& batches)
{
    rt::installCpuTensorCounter();
    torch::set_num_threads(1);
    c.recompute = r;
    torch::manual_seed(c.train.seed);
    rt::VlmModel model(c.model);
    model->applyFreezing();
    auto runner = rt::makeRecomputeRunner(r);
    model->setLayerRunner(runner.get());
    auto optimizer = rt::makeOptimizer(*model, c.train);
    const rt::MomentDtypes moments = rt::momentDtypes(c.train);  // bf16 moments: the trainer's CPU step
    TinyRunResult result;
    for (size_t step = 0; step < batches.size(); ++step) {
        rt::VlmBatch tensors = rt::toTensors(batches[step], torch::kCPU, torch::kFloat32);
        const int64_t before = rt::cpuTensorBytes().current;
        rt::resetCpuTensorPeak();
        rt::DecoderOutput out = model->forward(tensors);
        torch::Tensor loss = out.lmLoss + out.auxLoss;
        if (step == 0)
            result.forwardHeldBytes = rt::cpuTensorBytes().current - before;
        loss.backward();
        if (step == 0)
            result.stepPeakBytes = rt::cpuTensorBytes().peak - before;
        if (moments.allFp32())
            optimizer->step();
        else
            rt::adamWStepAten(*optimizer, moments);
        optimizer->zero_grad();
        result.losses.push_back(loss.item<double>());
    }
    for (const auto& [key, state] : optimizer->state())
        if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(state.get()))
            result.momentBytes += s->exp_avg().nbytes() + s->exp_avg_sq().nbytes();
    return result;
}

}  // namespace wb::test
