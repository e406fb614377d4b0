// GPU-only (label `gpu`, built with WB_WITH_CUDA): activation recompute on the fast paths — CUDA,
// bf16 autocast (LibTorch >= 2.4), varlen flash attention, grouped expert GEMM — gives the same
// loss and parameter gradients as no recompute for one forward/backward of a tiny VLM, and the
// recomputation really runs in backward (on the autograd device thread, under the forward's
// autocast state). Tolerances: bf16 operands, and CUDA index_add is atomic (order may differ).
#include "check.h"

#include "runtime/data/image_io.h"
#include "runtime/data/sample_packer.h"
#include "runtime/data/tokenizer.h"
#include "runtime/model/attention.h"
#include "runtime/model/recompute.h"
#include "runtime/model/torch_compat.h"
#include "runtime/model/vlm_model.h"
#include "runtime/train/recompute_runner.h"

#include <torch/torch.h>
#if WB_TORCH_AT_LEAST(2, 4)
#include <ATen/autocast_mode.h>
#endif

using namespace wb;

namespace {

class Bf16Autocast {
public:
    Bf16Autocast()
    {
#if WB_TORCH_AT_LEAST(2, 4)
        at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
        at::autocast::set_autocast_enabled(at::kCUDA, true);
#endif
    }
    ~Bf16Autocast()
    {
#if WB_TORCH_AT_LEAST(2, 4)
        at::autocast::set_autocast_enabled(at::kCUDA, false);
        at::autocast::clear_cache();
#endif
    }
};

double relErr(const torch::Tensor& a, const torch::Tensor& b)
{
    auto x = a.to(torch::kFloat64).cpu(), y = b.to(torch::kFloat64).cpu();
    if (!torch::isfinite(x).all().item<bool>())
        return 1e9;
    const double denom = y.norm().item<double>();
    return (x - y).norm().item<double>() / (denom > 0 ? denom : 1.0);
}

core::ModelConfig tinyModel()
{
    core::ModelConfig m;  // D, F multiples of 8 (grouped GEMM), head dims multiples of 8 (flash)
    m.vision.numLayers = 2; m.vision.hiddenSize = 32; m.vision.ffnHiddenSize = 64; m.vision.numAttentionHeads = 2;
    m.vision.patchSize = 4; m.vision.spatialMergeSize = 2; m.vision.deepstackLayers = {0};
    m.decoder.numLayers = 3; m.decoder.hiddenSize = 64; m.decoder.numAttentionHeads = 4; m.decoder.numQueryGroups = 2;
    m.decoder.kvChannels = 16; m.decoder.numMoeExperts = 4; m.decoder.moeRouterTopk = 2; m.decoder.moeFfnHiddenSize = 32;
    m.decoder.vocabSize = 300; m.decoder.mropeSection = {4, 2, 2};
    return m;
}

rt::MicroBatch tinyBatch()
{
    rt::SamplePacker packer(2, 96, 2, rt::patchDim(4, 1));
    for (int i = 0; i < 6; ++i) {
        rt::PreparedSample s;
        s.hasImage = i % 2 == 0;
        if (s.hasImage) {
            rt::RgbImage img{16, 8, std::vector<uint8_t>(16 * 8 * 3)};
            for (size_t j = 0; j < img.rgb.size(); ++j) img.rgb[j] = static_cast<uint8_t>((j * 37 + i) % 251);
            s.image = rt::patchify(img, 4, 1, 2);
        }
        s.caption = rt::tokenize("recompute sample " + std::to_string(i), 64);
        WB_CHECK(packer.tryAdd(s));
    }
    return packer.take(6);
}

struct Result {
    double loss = 0.0;
    std::vector<torch::Tensor> grads;
};

Result run(const core::RecomputeConfig& r, const rt::MicroBatch& batch)
{
    torch::manual_seed(11);
    rt::VlmModel model(tinyModel());
    model->to(torch::kCUDA);
    auto runner = rt::makeRecomputeRunner(r);
    model->setLayerRunner(runner.get());
    auto tensors = rt::toTensors(batch, torch::kCUDA, torch::kFloat32, rt::flashVarlenAvailable());
    torch::Tensor total;
    {
        Bf16Autocast autocast;
        rt::DecoderOutput out = model->forward(tensors);
        total = out.lmLoss + out.auxLoss;
    }
    total.backward();
    Result result;
    result.loss = total.item<double>();
    for (const auto& p : model->parameters())
        result.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return result;
}

}  // namespace

int main()
{
    if (!torch::cuda::is_available()) {
        std::cout << "no CUDA device: skipped" << std::endl;
        return 77;
    }
    const rt::MicroBatch batch = tinyBatch();
    const Result none = run({}, batch);
    core::RecomputeConfig full;
    full.granularity = "full";
    full.method = "uniform";
    full.recomputeNumLayers = 1;
    core::RecomputeConfig block = full;
    block.method = "block";
    core::RecomputeConfig selective;
    selective.granularity = "selective";
    selective.modules = {"core_attn", "moe_act", "layernorm", "mlp", "moe"};
    for (const auto& [name, r] : {std::pair<const char*, core::RecomputeConfig>{"full uniform", full},
                                  {"full block 1", block}, {"selective all", selective}}) {
        const auto before = rt::recomputeCounters();
        const Result got = run(r, batch);
        const auto after = rt::recomputeCounters();
        WB_CHECK_MSG(after.units > before.units && after.units - before.units == after.recomputed - before.recomputed,
                     name << ": " << after.units - before.units << " units, " << after.recomputed - before.recomputed
                          << " recomputed");
        WB_CHECK_MSG(std::fabs(got.loss - none.loss) <= 1e-3 * std::fabs(none.loss), name << " loss " << got.loss << " vs " << none.loss);
        double worst = 0.0;
        for (size_t i = 0; i < got.grads.size(); ++i)
            worst = std::max(worst, relErr(got.grads[i], none.grads[i]));
        WB_CHECK_MSG(worst < 3e-2, name << ": worst gradient rel err " << worst);
        std::cout << name << ": loss " << got.loss << " (none " << none.loss << "), worst gradient rel err " << worst
                  << ", " << after.units - before.units << " units recomputed" << std::endl;
    }
    return test::checkExitCode("test_runtime_gpu_recompute");
}
