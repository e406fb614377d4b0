// Model pieces on CPU against values the test computes independently: router renormalization
// and aux loss, expert gather/scatter vs a dense per-token loop, block-diagonal attention vs
// per-sample attention (decoder and vision), projector merge order, loss masked to captions,
// the pipeline-stage parts composing to forward() and the stage layer split, the interleaved
// schedule's order (virtual stages) against Megatron's rules and a simulation of its messages.
// Shapes: T tokens, E experts, K top-k, D width, P patches.
#include "check.h"

#include "runtime/data/image_io.h"
#include "runtime/data/sample_packer.h"
#include "runtime/data/tokenizer.h"
#include "runtime/model/attention.h"
#include "runtime/model/bf16_weights.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/projector.h"
#include "runtime/model/row_ops.h"
#include "runtime/model/vision_encoder.h"
#include "runtime/model/vlm_model.h"
#include "runtime/parallel/context_parallel.h"
#include "runtime/parallel/pipeline.h"
#include "runtime/parallel/pipeline_schedule.h"
#include "runtime/train/fused_adamw.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_model {

using namespace wb;

static double maxDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a - b).abs().max().item<double>();
}

static void testRouter()
{
    // Hand-made logits for T=3 tokens over E=4 experts, top-2.
    auto logits_TE = torch::tensor({{2.0, 1.0, 0.0, -1.0}, {0.0, 0.0, 3.0, 1.0}, {1.0, 2.0, 1.0, 2.5}});
    const double coeff = 0.01;
    rt::RouterOutput r = rt::routeTopK(logits_TE, 2, coeff);
    // Independent reference: softmax by hand, pick the two largest, renormalize.
    double auxFraction[4] = {0, 0, 0, 0}, auxProb[4] = {0, 0, 0, 0};
    const int expectIds[3][2] = {{0, 1}, {2, 3}, {3, 1}};
    for (int t = 0; t < 3; ++t) {
        double p[4], sum = 0;
        for (int e = 0; e < 4; ++e) sum += (p[e] = std::exp(logits_TE[t][e].item<double>()));
        for (int e = 0; e < 4; ++e) auxProb[e] += p[e] / sum / 3.0;
        const double a = p[expectIds[t][0]] / sum, b = p[expectIds[t][1]] / sum;
        WB_CHECK(r.expertIds_TK[t][0].item<int64_t>() == expectIds[t][0]);
        WB_CHECK(r.expertIds_TK[t][1].item<int64_t>() == expectIds[t][1]);
        WB_CHECK_CLOSE(r.weights_TK[t][0].item<double>(), a / (a + b), 1e-6);
        WB_CHECK_CLOSE(r.weights_TK[t][1].item<double>(), b / (a + b), 1e-6);
        auxFraction[expectIds[t][0]] += 1.0 / 6.0;
        auxFraction[expectIds[t][1]] += 1.0 / 6.0;
    }
    double aux = 0;
    for (int e = 0; e < 4; ++e) aux += auxFraction[e] * auxProb[e];
    WB_CHECK_CLOSE(r.auxLoss.item<double>(), coeff * 4 * aux, 1e-7);
    WB_CHECK(r.weights_TK.scalar_type() == torch::kFloat32);

    // Perfectly balanced routing gives aux = coeff exactly (the Switch normalization).
    auto uniform = torch::zeros({8, 4});
    uniform.index_put_({torch::arange(8), torch::arange(8) % 4}, 5.0);
    WB_CHECK_CLOSE(rt::routeTopK(uniform, 1, 0.5).auxLoss.item<double>(), 0.5, 1e-2);
}

static void testExperts()
{
    torch::manual_seed(1);
    const int64_t T = 7, D = 6, E = 3, F = 5, K = 2;
    auto x_TD = torch::randn({T, D}, torch::requires_grad());
    auto gateUp = torch::randn({E, D, 2 * F}, torch::requires_grad()), down = torch::randn({E, F, D});
    auto logits = torch::randn({T, E});
    rt::RouterOutput r = rt::routeTopK(logits, K, 0.0);
    auto w_TK = r.weights_TK.detach().requires_grad_(true);
    auto y = rt::expertsForward(x_TD, w_TK, r.expertIds_TK, gateUp, down);
    auto ref = torch::zeros({T, D});
    for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < K; ++k) {
            const int64_t e = r.expertIds_TK[t][k].item<int64_t>();
            auto h = torch::matmul(x_TD[t], gateUp[e]);
            auto act = torch::silu(h.slice(0, 0, F)) * h.slice(0, F);
            ref[t] += w_TK[t][k] * torch::matmul(act, down[e]);
        }
    WB_CHECK_MSG(maxDiff(y, ref) < 1e-5, "max diff " << maxDiff(y, ref));
    // Backward through the gathers (dispatch, combine) equals autograd of the plain loop.
    auto probe = torch::randn({T, D});
    auto g = torch::autograd::grad({(y * probe).sum()}, {x_TD, w_TK, gateUp});
    auto gRef = torch::autograd::grad({(ref * probe).sum()}, {x_TD, w_TK, gateUp});
    for (size_t i = 0; i < g.size(); ++i)
        WB_CHECK_MSG(maxDiff(g[i], gRef[i]) < 1e-4, "grad " << i << " max diff " << maxDiff(g[i], gRef[i]));
}

static void testBlockDiagonalDecoderAttention()
{
    torch::manual_seed(2);
    const int D = 16, T1 = 5, T2 = 3;
    rt::GqaAttention attn(D, 4, 2, 8);
    auto x = torch::randn({1, T1 + T2 + 2, D});  // two samples then 2 padding tokens
    auto doc = torch::tensor({0, 0, 0, 0, 0, 1, 1, 1, -1, -1}).unsqueeze(0);
    auto pos = torch::tensor({0, 1, 2, 3, 4, 0, 1, 2, 0, 0}).unsqueeze(0);
    auto packed = attn(x, rt::ropeAngles1d(pos, 8, 10000.0), rt::documentCausalMask(doc));
    auto alone = [&](int start, int len) {
        auto xs = x.slice(1, start, start + len);
        auto p = torch::arange(len).unsqueeze(0);
        return attn(xs, rt::ropeAngles1d(p, 8, 10000.0), rt::documentCausalMask(torch::zeros({1, len}, torch::kLong)));
    };
    WB_CHECK(maxDiff(packed.slice(1, 0, T1), alone(0, T1)) < 1e-5);
    WB_CHECK(maxDiff(packed.slice(1, T1, T1 + T2), alone(T1, T2)) < 1e-5);
    WB_CHECK(torch::isfinite(packed).all().item<bool>());
    // Causality: changing a later token of sample 0 leaves earlier outputs unchanged.
    auto x2 = x.clone();
    x2[0][4] += 1.0;
    auto changed = attn(x2, rt::ropeAngles1d(pos, 8, 10000.0), rt::documentCausalMask(doc));
    WB_CHECK(maxDiff(changed.slice(1, 0, 4), packed.slice(1, 0, 4)) < 1e-6);
    WB_CHECK(maxDiff(changed.slice(1, 4, 5), packed.slice(1, 4, 5)) > 1e-4);
}

static void testBlockDiagonalVision()
{
    torch::manual_seed(3);
    core::VisionConfig v;
    v.numLayers = 2; v.hiddenSize = 16; v.ffnHiddenSize = 32; v.numAttentionHeads = 2; v.patchSize = 2;
    rt::VisionEncoder enc(v);
    const int C = 3 * 2 * 2;
    auto p1 = torch::randn({4, C}), p2 = torch::randn({8, C});
    auto rows1 = torch::tensor({0, 0, 1, 1}, torch::kInt32), cols1 = torch::tensor({0, 1, 0, 1}, torch::kInt32);
    auto rows2 = torch::tensor({0, 0, 1, 1, 0, 0, 1, 1}, torch::kInt32), cols2 = torch::tensor({0, 1, 0, 1, 2, 3, 2, 3}, torch::kInt32);
    auto packed = enc(torch::cat({p1, p2}), torch::tensor({0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kInt32),
                      torch::cat({rows1, rows2}), torch::cat({cols1, cols2})).hidden_PD;
    auto a = enc(p1, torch::zeros({4}, torch::kInt32), rows1, cols1).hidden_PD;
    auto b = enc(p2, torch::zeros({8}, torch::kInt32), rows2, cols2).hidden_PD;
    WB_CHECK(maxDiff(packed.slice(0, 0, 4), a) < 1e-5);
    WB_CHECK(maxDiff(packed.slice(0, 4), b) < 1e-5);

    // The CPU's per-image path equals the dense block-diagonal mask, forward and backward.
    rt::VisionBlock block(16, 2, 32);
    auto image = torch::tensor({0, 0, 0, 1, 1, 1, 1, 1, 2, 2}, torch::kInt32);
    auto angle = rt::ropeAngles2d(torch::arange(10, torch::kInt32) / 3, torch::arange(10, torch::kInt32) % 3, 8, 10000.0);
    auto x = torch::randn({10, 16}).requires_grad_(true);
    auto dense = block(x, angle, (image.unsqueeze(1) == image.unsqueeze(0)).unsqueeze(0));
    auto perImage = block->forward(x, angle, torch::Tensor(), rt::PackedSegments{}, std::vector<int64_t>{3, 5, 2});
    WB_CHECK_MSG(maxDiff(dense, perImage) < 1e-5, "per-image vs dense " << maxDiff(dense, perImage));
    auto upstream = torch::randn({10, 16});
    auto gDense = torch::autograd::grad({dense}, {x}, {upstream}, /*retain_graph=*/true)[0];
    auto gPerImage = torch::autograd::grad({perImage}, {x}, {upstream})[0];
    WB_CHECK(maxDiff(gDense, gPerImage) < 1e-5);
}

static void testProjectorMergeOrder()
{
    // A 4×6-patch image (patch 1 px, merge 2): patchify must emit each 2×2 neighbourhood
    // contiguously, merged cells row-major; mergePatchGroups then concatenates exactly those.
    rt::RgbImage img;
    img.width = 6; img.height = 4;
    img.rgb.resize(6 * 4 * 3);
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 6; ++x)
            img.rgb[(y * 6 + x) * 3] = static_cast<uint8_t>(y * 10 + x);  // red encodes the position
    rt::ImagePatches patches = rt::patchify(img, 1, 1, 2);
    WB_CHECK(patches.gridH == 4 && patches.gridW == 6);
    auto hidden_PD = torch::tensor(rt::patchValues(patches, 1)).view({24, 3}).slice(1, 0, 1);  // red channel only
    auto merged = rt::mergePatchGroups(hidden_PD, 2);  // [6 cells, 4]
    WB_CHECK(merged.size(0) == 6 && merged.size(1) == 4);
    for (int cell = 0; cell < 6; ++cell) {
        const int r0 = (cell / 3) * 2, c0 = (cell % 3) * 2;
        const int expect[4] = {r0 * 10 + c0, r0 * 10 + c0 + 1, (r0 + 1) * 10 + c0, (r0 + 1) * 10 + c0 + 1};
        for (int j = 0; j < 4; ++j)
            WB_CHECK_CLOSE(merged[cell][j].item<double>(), expect[j] / 127.5 - 1.0, 1e-5);
    }
    rt::Projector proj(3, 2, 8);
    WB_CHECK(proj(torch::randn({24, 3})).sizes() == torch::IntArrayRef({6, 8}));
}

static core::ModelConfig tinyModel()
{
    core::ModelConfig m;
    m.vision.numLayers = 1; m.vision.hiddenSize = 16; m.vision.ffnHiddenSize = 32; m.vision.numAttentionHeads = 2;
    m.vision.patchSize = 4; m.vision.spatialMergeSize = 2; m.vision.deepstackLayers = {0};
    m.decoder.numLayers = 2; m.decoder.hiddenSize = 32; m.decoder.numAttentionHeads = 4; m.decoder.numQueryGroups = 2;
    m.decoder.kvChannels = 8; m.decoder.numMoeExperts = 4; m.decoder.moeRouterTopk = 2; m.decoder.moeFfnHiddenSize = 16;
    m.decoder.vocabSize = 300; m.decoder.mropeSection = {2, 1, 1};
    return m;
}

static void testLossMaskedToCaptions()
{
    torch::manual_seed(4);
    core::ModelConfig m = tinyModel();
    // One image sample (8×8 px → 2×2 patches → 1 image token) and one text-only sample.
    rt::SamplePacker packer(1, 24, 2, rt::patchDim(4, 1));
    rt::PreparedSample withImage, textOnly;
    withImage.hasImage = true;
    rt::RgbImage img{8, 8, std::vector<uint8_t>(8 * 8 * 3, 100)};
    withImage.image = rt::patchify(img, 4, 1, 2);
    withImage.caption = rt::tokenize("cat", 64);
    textOnly.caption = rt::tokenize("dog!", 64);
    WB_CHECK(packer.tryAdd(withImage) && packer.tryAdd(textOnly));
    rt::MicroBatch batch = packer.take(2);
    // Layout: [img][c a t][eos] [bos][d o g !][eos] then padding.
    const std::vector<int64_t> ids = {rt::kImageId, 'c', 'a', 't', rt::kEosId, rt::kBosId, 'd', 'o', 'g', '!', rt::kEosId};
    const std::vector<int64_t> labels = {'c', 'a', 't', rt::kEosId, -100, 'd', 'o', 'g', '!', rt::kEosId, -100};
    for (size_t i = 0; i < ids.size(); ++i) {
        WB_CHECK(batch.tokenIds[i] == ids[i]);
        WB_CHECK(batch.labels[i] == labels[i]);
    }
    for (size_t i = ids.size(); i < 24; ++i)
        WB_CHECK(batch.labels[i] == rt::kIgnoreLabel && batch.tokenIds[i] == rt::kPadId && batch.docIds[i] == -1);
    WB_CHECK(batch.imageTokens == 1 && batch.textTokens == 10 && batch.padTokens == 13 && batch.images == 1);

    rt::VlmModel model(m);
    rt::VlmBatch tensors = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
    rt::DecoderOutput out = model->forward(tensors);
    WB_CHECK(out.targets == 9);
    // Reference: full logits over every position, cross-entropy on the label positions only.
    torch::Tensor aux;
    rt::MoeDecoder decoder = std::dynamic_pointer_cast<rt::MoeDecoderImpl>(model->named_children()["decoder"]);
    auto h = decoder->hiddenStates(tensors.decoder, aux);
    auto logits = decoder->outputLayer()(h.view({24, -1}));
    auto logp = torch::log_softmax(logits, -1);
    double ref = 0.0;
    for (size_t i = 0; i < labels.size(); ++i)
        if (labels[i] >= 0) ref -= logp[static_cast<int64_t>(i)][labels[i]].item<double>();
    WB_CHECK_CLOSE(out.lmLoss.item<double>(), ref / 9.0, 1e-5);
    WB_CHECK(out.auxLoss.item<double>() > 0.0);

    // Backward reaches every trainable parameter (vision, projector, deepstack, decoder).
    (out.lmLoss + out.auxLoss).backward();
    int missing = 0;
    for (const auto& p : model->named_parameters())
        if (!p.value().grad().defined() || !torch::isfinite(p.value().grad()).all().item<bool>()) {
            ++missing;
            std::cerr << "  no/bad grad: " << p.key() << "\n";
        }
    WB_CHECK(missing == 0);
}

// The parts a pipeline stage runs (embed → decoder layers [a, b) → head) compose to forward():
// a split after layer 0 of 3, with two deepstack features, the second one added on the "later
// stage" from a copy whose first entry is undefined (as a stage that received only the features
// of its own layers has it), gives forward's loss and aux loss; gradients reach both halves.
// Plus the layer split of pipeline stages (even, uneven first/last, a split that does not add up).
static void testPipelinePartsEqualForward()
{
    torch::manual_seed(5);
    core::ModelConfig m = tinyModel();
    m.decoder.numLayers = 3;
    m.vision.numLayers = 2;
    m.vision.deepstackLayers = {0, 1};
    rt::SamplePacker packer(1, 24, 2, rt::patchDim(4, 1));
    rt::PreparedSample withImage;
    withImage.hasImage = true;
    withImage.image = rt::patchify(rt::RgbImage{8, 8, std::vector<uint8_t>(8 * 8 * 3, 60)}, 4, 1, 2);
    withImage.caption = rt::tokenize("a cat", 64);
    WB_CHECK(packer.tryAdd(withImage));
    rt::MicroBatch batch = packer.take(1);
    rt::VlmModel model(m);
    rt::VlmBatch whole = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
    rt::DecoderOutput reference = model->forward(whole);

    rt::VlmBatch first = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
    model->project(model->encodeImages(first), first);
    WB_CHECK(first.decoder.deepstack_ID.size() == 2);
    torch::Tensor aux0, aux1;
    auto h = model->decoderLayers(first, model->embed(first), 0, 1, aux0);
    // The later stage: received leaves (h and the second deepstack feature) that need gradients.
    rt::VlmBatch later = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
    auto hIn = h.detach().requires_grad_(true);
    auto deepIn = first.decoder.deepstack_ID[1].detach().requires_grad_(true);
    later.decoder.deepstack_ID = {torch::Tensor(), deepIn};
    auto h2 = model->decoderLayers(later, hIn, 1, 3, aux1);
    rt::DecoderOutput head = model->decoderHead(later, h2);
    WB_CHECK_MSG(head.lmLoss.item<double>() == reference.lmLoss.item<double>(),
                 head.lmLoss.item<double>() << " vs " << reference.lmLoss.item<double>());
    WB_CHECK_CLOSE((aux0 + aux1).item<double>(), reference.auxLoss.item<double>(), 1e-6);
    WB_CHECK(model->numDecoderLayers() == 3 && model->numDeepstackFeatures() == 2);
    (head.lmLoss + aux1).backward();
    WB_CHECK(hIn.grad().defined() && deepIn.grad().defined() && hIn.grad().abs().sum().item<double>() > 0.0);
    torch::autograd::backward({h, first.decoder.deepstack_ID[1], aux0}, {hIn.grad(), deepIn.grad(), torch::ones({})});
    int missing = 0;
    for (const auto& p : model->named_parameters())
        if (!p.value().grad().defined()) {
            ++missing;
            std::cerr << "  no grad after the two halves' backward: " << p.key() << "\n";
        }
    WB_CHECK(missing == 0);

    using Split = std::vector<std::pair<int, int>>;
    WB_CHECK((rt::pipelineStageLayers(4, 2, 0, 0) == Split{{0, 2}, {2, 4}}));
    WB_CHECK((rt::pipelineStageLayers(4, 2, 1, 3) == Split{{0, 1}, {1, 4}}));
    WB_CHECK((rt::pipelineStageLayers(5, 3, 1, 0) == Split{{0, 1}, {1, 3}, {3, 5}}));
    WB_CHECK((rt::pipelineStageLayers(6, 4, 0, 3) == Split{{0, 1}, {1, 2}, {2, 3}, {3, 6}}));
    WB_CHECK((rt::pipelineStageLayers(8, 4, 1, 1) == Split{{0, 1}, {1, 4}, {4, 7}, {7, 8}}));
    bool threw = false;
    try {
        rt::pipelineStageLayers(2, 2, 3, 0);
    } catch (const std::invalid_argument& e) {
        threw = std::string(e.what()).find("num_layers_in_first_pipeline_stage") != std::string::npos;
    }
    WB_CHECK(threw);
}

// Virtual stages: the model chunks of each stage (Megatron: stage s holds chunks s, s + P, …) and
// the refusals that name the fields.
static void testPipelineChunkLayers()
{
    using Split = std::vector<std::pair<int, int>>;
    WB_CHECK((rt::pipelineChunkLayers(4, 2, 1, 1, 3) == Split{{0, 1}, {1, 4}}));  // v 1 = the stage split
    WB_CHECK((rt::pipelineChunkLayers(4, 2, 2, 0, 0) == Split{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
    WB_CHECK((rt::pipelineChunkLayers(12, 2, 3, 0, 0) == Split{{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 12}}));
    auto refusal = [](int layers, int stages, int chunks, int first, int last) {
        try {
            rt::pipelineChunkLayers(layers, stages, chunks, first, last);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    WB_CHECK(refusal(6, 2, 2, 0, 0).find("virtual_pipeline_model_parallel_size") != std::string::npos);
    WB_CHECK(refusal(6, 2, 2, 2, 0).find("num_layers_in_first_pipeline_stage") != std::string::npos);
}

// Megatron's interleaved order on every stage, and a run of all stages together: each stage
// executes its steps in order, a step starting once its own stage is free and the tensor it
// receives was produced (forward 1 time unit, backward 2, divided by v: a chunk holds 1/v of the
// stage's layers). Checked: every (chunk, micro-batch) once forward and once backward, backwards
// of a chunk in its forwards' order (the schedule pops the oldest), Megatron's warm-up count and
// chunk ids, no stage waiting forever (the send/recv order cannot deadlock), and the step time
// M·(f + b) + (P − 1)·(f + b) / v: the bubble shrinks v-fold against 1F1B.
static void testInterleavedOrder()
{
    using Step = rt::PipelineStep;
    // P 2, v 2, M 4 on stage 0: warm-up (2 − 0 − 1)·2 + (2 − 1)·2 = 4 forwards.
    const std::vector<Step> stage0 = rt::interleavedOrder(2, 0, 2, 4);
    const std::vector<Step> expected0 = {
        {true, 0, 0}, {true, 0, 1}, {true, 1, 0}, {true, 1, 1},  // warm-up
        {true, 0, 2}, {false, 1, 0}, {true, 0, 3}, {false, 1, 1}, {true, 1, 2}, {false, 0, 0}, {true, 1, 3}, {false, 0, 1},
        {false, 1, 2}, {false, 1, 3}, {false, 0, 2}, {false, 0, 3}};  // cool-down
    WB_CHECK(stage0 == expected0);
    bool threw = false;
    try {
        rt::interleavedOrder(2, 0, 2, 3);
    } catch (const std::invalid_argument& e) {
        threw = std::string(e.what()).find("train.global_batch_size") != std::string::npos;
    }
    WB_CHECK_MSG(threw, "M = 3 on 2 stages must be refused");

    for (int P : {2, 3, 4, 8})
        for (int v : {1, 2, 3, 4})
            for (int M : {P, 2 * P, 3 * P}) {
                std::vector<std::vector<Step>> orders;
                for (int s = 0; s < P; ++s) {
                    orders.push_back(rt::interleavedOrder(P, s, v, M));
                    const auto& o = orders.back();
                    WB_CHECK(o.size() == static_cast<size_t>(2 * M * v));
                    int warmup = 0;
                    while (warmup < static_cast<int>(o.size()) && o[static_cast<size_t>(warmup)].forward)
                        ++warmup;
                    const int megatron = M == P ? M * v : std::min(M * v, (P - s - 1) * 2 + (v - 1) * P);
                    // The steady state starts with a forward: it counts as warm-up here.
                    WB_CHECK_MSG(warmup == std::min(M * v, megatron + 1), "P " << P << " v " << v << " M " << M << " stage " << s
                                                                               << ": " << warmup << " leading forwards");
                    std::vector<std::vector<int>> forwards(static_cast<size_t>(v)), backwards(static_cast<size_t>(v));
                    int f = 0;
                    for (const Step& st : o) {
                        (st.forward ? forwards : backwards)[static_cast<size_t>(st.chunk)].push_back(st.micro);
                        if (st.forward) {  // the k-th forward's chunk is (k mod P·v) / P
                            WB_CHECK(st.chunk == (f % (P * v)) / P);
                            ++f;
                        }
                    }
                    for (int c = 0; c < v; ++c) {
                        std::vector<int> all(static_cast<size_t>(M));
                        std::iota(all.begin(), all.end(), 0);
                        WB_CHECK_MSG(forwards[static_cast<size_t>(c)] == all && backwards[static_cast<size_t>(c)] == all,
                                     "P " << P << " v " << v << " M " << M << " chunk " << c);
                    }
                }
                // Run all stages: key (kind, stage, chunk, micro) → time produced.
                std::map<std::tuple<bool, int, int, int>, double> produced;
                std::vector<size_t> at(static_cast<size_t>(P), 0);
                std::vector<double> freeAt(static_cast<size_t>(P), 0.0);
                for (bool progress = true; progress;) {
                    progress = false;
                    for (int s = 0; s < P; ++s) {
                        const auto& o = orders[static_cast<size_t>(s)];
                        if (at[static_cast<size_t>(s)] == o.size())
                            continue;
                        const Step st = o[at[static_cast<size_t>(s)]];
                        std::optional<std::tuple<bool, int, int, int>> need;
                        if (st.forward && !(s == 0 && st.chunk == 0))
                            need = s > 0 ? std::tuple{true, s - 1, st.chunk, st.micro} : std::tuple{true, P - 1, st.chunk - 1, st.micro};
                        if (!st.forward && !(s == P - 1 && st.chunk == v - 1))
                            need = s < P - 1 ? std::tuple{false, s + 1, st.chunk, st.micro} : std::tuple{false, 0, st.chunk + 1, st.micro};
                        if (need && !produced.count(*need))
                            continue;
                        double& t = freeAt[static_cast<size_t>(s)];
                        t = std::max(t, need ? produced[*need] : 0.0) + (st.forward ? 1.0 : 2.0) / v;
                        produced[{st.forward, s, st.chunk, st.micro}] = t;
                        ++at[static_cast<size_t>(s)];
                        progress = true;
                    }
                }
                bool finished = true;
                for (int s = 0; s < P; ++s)
                    finished = finished && at[static_cast<size_t>(s)] == orders[static_cast<size_t>(s)].size();
                WB_CHECK_MSG(finished, "P " << P << " v " << v << " M " << M << ": a stage waits forever");
                const double makespan = *std::max_element(freeAt.begin(), freeAt.end());
                WB_CHECK_CLOSE(makespan, M * 3.0 + (P - 1) * 3.0 / v, 1e-9);
            }
}

// The host-side lists toTensors hands the GPU fast paths: varlen segments (documents and each
// row's padding tail; one per image) and the index lists that replace nonzero() in the forward.
// Megatron's load-balanced causal split: CP rank r holds chunks r and 2·CP−1−r of a row; the
// ranks together hold every position once, and each has the same causal work (Σ over its
// queries of the keys they see, t + 1 for position t).
static void testContextParallelSplit()
{
    WB_CHECK((rt::contextParallelPositions(8, 2, 0) == std::vector<int64_t>{0, 1, 6, 7}));
    WB_CHECK((rt::contextParallelPositions(8, 2, 1) == std::vector<int64_t>{2, 3, 4, 5}));
    for (int cp : {1, 2, 4}) {
        const int64_t T = 256;
        std::vector<int> seen(T, 0);
        std::vector<int64_t> work;
        for (int r = 0; r < cp; ++r) {
            const auto mine = rt::contextParallelPositions(T, cp, r);
            WB_CHECK(static_cast<int64_t>(mine.size()) == T / cp);
            WB_CHECK(std::is_sorted(mine.begin(), mine.end()));
            int64_t keys = 0;
            for (int64_t t : mine) {
                ++seen[static_cast<size_t>(t)];
                keys += t + 1;
            }
            work.push_back(keys);
        }
        WB_CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
        WB_CHECK_MSG(std::adjacent_find(work.begin(), work.end(), std::not_equal_to<>()) == work.end(), "cp " << cp);
    }
    bool threw = false;
    try {
        rt::contextParallelPositions(10, 2, 0);  // 10 tokens are not 4 chunks
    } catch (const c10::Error&) {
        threw = true;
    }
    WB_CHECK(threw);
}

static void testPackedSegmentsAndIndexLists()
{
    rt::SamplePacker packer(2, 16, 2, rt::patchDim(4, 1));
    rt::PreparedSample a, b, c;
    a.hasImage = true;
    a.image = rt::patchify(rt::RgbImage{16, 8, std::vector<uint8_t>(16 * 8 * 3, 7)}, 4, 1, 2);  // 8 patches, 2 tokens
    a.caption = rt::tokenize("abcd", 64);   // 2 + 4 + eos = 7 tokens
    b.caption = rt::tokenize("xyz", 64);    // bos + 3 + eos = 5 tokens
    c.hasImage = true;
    c.image = rt::patchify(rt::RgbImage{8, 8, std::vector<uint8_t>(8 * 8 * 3, 9)}, 4, 1, 2);    // 4 patches, 1 token
    c.caption = rt::tokenize("0123456789", 64);  // 1 + 10 + eos = 12 tokens: does not fit row 0
    WB_CHECK(packer.tryAdd(a) && packer.tryAdd(b) && packer.tryAdd(c));
    rt::MicroBatch batch = packer.take(3);
    rt::VlmBatch t = rt::toTensors(batch, torch::kCPU, torch::kFloat32, /*varlenAttention=*/true);
    // Rows: [a 7][b 5][pad 4] and [c 12][pad 4].
    auto cu = t.decoder.documents.cuSeqlens_S1;
    WB_CHECK_MSG(cu.sizes() == torch::IntArrayRef({6}) && cu.equal(torch::tensor({0, 7, 12, 16, 28, 32}, torch::kInt32)),
                 "document segments " << cu);
    WB_CHECK(t.decoder.documents.maxSeqlen == 12);
    WB_CHECK(t.images.cuSeqlens_S1.equal(torch::tensor({0, 8, 12}, torch::kInt32)) && t.images.maxSeqlen == 8);
    auto ids = t.decoder.tokenIds_BT.flatten();
    WB_CHECK(t.decoder.imageIndex_I.equal((ids == rt::kImageId).nonzero().squeeze(1)));
    WB_CHECK(t.decoder.validIndex_N.equal((t.decoder.docIds_BT.flatten() >= 0).nonzero().squeeze(1)));
    WB_CHECK(t.decoder.targetIndex_N.equal((t.decoder.labels_BT.flatten() != rt::kIgnoreLabel).nonzero().squeeze(1)));
    // Without varlen the segments stay undefined, so the model builds the dense masks.
    WB_CHECK(!rt::toTensors(batch, torch::kCPU, torch::kFloat32).decoder.documents.defined());
    // The grouped expert kernel is refused on the CPU instead of silently running the loop.
    bool threw = false;
    try {
        rt::RouterOutput r = rt::routeTopK(torch::randn({4, 2}), 1, 0.0);
        rt::expertsForward(torch::randn({4, 8}), r.weights_TK, r.expertIds_TK, torch::randn({2, 8, 16}),
                           torch::randn({2, 8, 8}), rt::ExpertKernel::Grouped);
    } catch (const c10::Error&) {
        threw = true;
    }
    WB_CHECK(threw);
}

// The device path of the patches (bytes of one frame → values, frame repeated) equals the host
// reference patchValues() bit for bit, for temporal patch 2.
static void testPatchUploadMatchesReference()
{
    rt::SamplePacker packer(1, 64, 2, rt::patchDim(4, 2));
    rt::PreparedSample s;
    s.hasImage = true;
    rt::RgbImage img{16, 8, std::vector<uint8_t>(16 * 8 * 3)};
    for (size_t j = 0; j < img.rgb.size(); ++j) img.rgb[j] = static_cast<uint8_t>((j * 53) % 256);
    s.image = rt::patchify(img, 4, 2, 2);
    WB_CHECK(s.image.pixels.size() == 8u * 3 * 16);
    s.caption = rt::tokenize("x", 8);
    WB_CHECK(packer.tryAdd(s));
    rt::MicroBatch batch = packer.take(1);
    WB_CHECK(batch.temporalPatchSize == 2);
    auto patches = rt::toTensors(batch, torch::kCPU, torch::kFloat32).patches_PC;
    WB_CHECK(patches.sizes() == torch::IntArrayRef({8, 3 * 2 * 16}));
    auto ref = torch::tensor(rt::patchValues(batch.patchPixels.data(), 8, 4, 2)).view({8, 96});
    WB_CHECK(torch::equal(patches, ref));
    // Frame 0 and frame 1 of every channel are the same still image.
    auto frames = patches.view({8, 3, 2, 16});
    WB_CHECK(torch::equal(frames.select(2, 0), frames.select(2, 1)));
    WB_CHECK_CLOSE(patches[0][0].item<double>(), batch.patchPixels[0] / 127.5 - 1.0, 1e-7);
}

// Kept bf16 copies (bf16_weights.h): the operand is the cast the forward would make, made once and
// then reused; the gradient reaches the fp32 master exactly as through the cast; an in-place
// change of the master (a checkpoint load, the unfused optimizer) makes the next forward cast again.
static void testBf16WeightCopies()
{
    namespace F = torch::nn::functional;
    torch::manual_seed(5);
    auto master = torch::randn({16, 8}).requires_grad_();
    auto x = torch::randn({4, 8}).to(torch::kBFloat16);
    rt::Bf16Weights weights;
    WB_CHECK(!weights.copyOf(master).defined());
    auto operand = weights.operand(master);
    WB_CHECK(operand.scalar_type() == torch::kBFloat16);
    WB_CHECK(torch::equal(operand, master.detach().to(torch::kBFloat16)));
    WB_CHECK(operand.requires_grad());  // in the master's graph
    const void* first = weights.copyOf(master).data_ptr();
    WB_CHECK(weights.operand(master).data_ptr() == first);  // reused, not cast again
    WB_CHECK(weights.size() == 1 && weights.bytes() == 16 * 8 * 2);

    // The gradient: as through autocast's cast of the master.
    F::linear(x, weights.operand(master)).to(torch::kFloat32).square().sum().backward();
    auto reference = master.detach().clone().requires_grad_();
    F::linear(x, reference.to(torch::kBFloat16)).to(torch::kFloat32).square().sum().backward();
    WB_CHECK(master.grad().scalar_type() == torch::kFloat32);
    WB_CHECK(torch::equal(master.grad(), reference.grad()));

    // An in-place change of the master: the copy is stale, the next operand a new cast.
    {
        torch::NoGradGuard noGrad;
        master.add_(1.0);
    }
    WB_CHECK(!weights.copyOf(master).defined());
    auto recast = weights.operand(master);
    WB_CHECK(torch::equal(recast, master.detach().to(torch::kBFloat16)));
    WB_CHECK(recast.data_ptr() != first);  // a new tensor: a pending graph may hold the old one
    WB_CHECK(weights.copyOf(master).defined());
    weights.forget(master);
    WB_CHECK(!weights.copyOf(master).defined());

    // A frozen master: the copy itself, outside any graph; a non-fp32 one as it is.
    auto frozen = torch::randn({3, 8});
    auto frozenOperand = weights.operand(frozen);
    WB_CHECK(!frozenOperand.requires_grad() && frozenOperand.scalar_type() == torch::kBFloat16);
    WB_CHECK(weights.operand(x).data_ptr() == x.data_ptr());
}

// train.bf16_gradients: the copy's bf16 gradient lands in the master's .grad as it is — the value
// the widening path gives, 2 B per value — and a second contribution (a second micro-batch, a
// weight used twice in one graph) accumulates in fp32 exactly as autograd accumulates the widened
// gradients; the global norm over bf16 and fp32 gradients is the norm of the widened ones.
static void testBf16Gradients()
{
    namespace F = torch::nn::functional;
    torch::manual_seed(6);
    auto x = torch::randn({4, 8}).to(torch::kBFloat16);
    auto lossOf = [&](const torch::Tensor& w) { return F::linear(x, w).to(torch::kFloat32).square().sum(); };
    auto master = torch::randn({16, 8}).requires_grad_();
    auto reference = master.detach().clone().requires_grad_();
    rt::Bf16Weights weights;
    rt::Bf16Weights widening;
    weights.setBf16Gradients(true);
    WB_CHECK(weights.bf16Gradients() && !widening.bf16Gradients());

    // One contribution: bf16, the widening path's value.
    lossOf(weights.operand(master)).backward();
    lossOf(widening.operand(reference)).backward();
    WB_CHECK(master.grad().scalar_type() == torch::kBFloat16 && reference.grad().scalar_type() == torch::kFloat32);
    WB_CHECK(torch::equal(master.grad().to(torch::kFloat32), reference.grad()));
    const std::vector<torch::Tensor> mixed{master.grad(), torch::ones({3})},
        widened{reference.grad(), torch::ones({3})};
    WB_CHECK(torch::equal(rt::globalGradNorm(mixed), rt::globalGradNorm(widened)));

    // A second micro-batch: fp32 from now on, as autograd's sum of the widened gradients.
    lossOf(weights.operand(master)).backward();
    lossOf(widening.operand(reference)).backward();
    WB_CHECK(master.grad().scalar_type() == torch::kFloat32);
    WB_CHECK(torch::equal(master.grad(), reference.grad()));
    // A third: added to the fp32 gradient.
    lossOf(weights.operand(master)).backward();
    lossOf(widening.operand(reference)).backward();
    WB_CHECK(torch::equal(master.grad(), reference.grad()));

    // Used twice in one graph: the two contributions sum in fp32 here too.
    master.mutable_grad().reset();
    reference.mutable_grad().reset();
    (lossOf(weights.operand(master)) + 0.5 * lossOf(weights.operand(master))).backward();
    (lossOf(widening.operand(reference)) + 0.5 * lossOf(widening.operand(reference))).backward();
    WB_CHECK(master.grad().scalar_type() == torch::kFloat32);
    WB_CHECK(torch::equal(master.grad(), reference.grad()));

    // A strided gradient (the operand used transposed) is kept compact.
    master.mutable_grad().reset();
    auto y = torch::randn({4, 16}).to(torch::kBFloat16);
    F::linear(y, weights.operand(master).t()).to(torch::kFloat32).sum().backward();
    WB_CHECK(master.grad().is_contiguous() && master.grad().sizes() == master.sizes());
}

// VlmModelImpl::setBf16Weights reaches every module that multiplies by weights (attention, MoE,
// vision blocks and patch embedding, projectors, the decoder's output layer).
static void testBf16WeightsReachEveryModule()
{
    rt::VlmModel model(tinyModel());
    rt::Bf16Weights weights;
    model->setBf16Weights(&weights);
    int users = 0;
    for (const auto& module : model->modules(/*include_self=*/false))
        users += dynamic_cast<rt::UsesBf16Weights*>(module.get()) != nullptr;
    const core::ModelConfig c = tinyModel();
    const int expected = c.decoder.numLayers * 2 + c.vision.numLayers + 1 /*encoder*/ + 1 /*decoder*/ +
                         1 + static_cast<int>(c.vision.deepstackLayers.size()) /*projectors*/;
    WB_CHECK_MSG(users == expected, "modules taking bf16 copies: " << users << ", expected " << expected);
}

// The distinct-row gather and add (row_ops.h) give index_select's and index_add's values and
// gradients, fp32 and bf16; a row added on top of another is rounded once, as index_add rounds.
static void testDistinctRowOps()
{
    torch::manual_seed(31);
    const auto index = torch::tensor(std::vector<int64_t>{0, 3, 4, 9, 6}, torch::kInt64);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        auto x = torch::randn({10, 6}).to(dtype).requires_grad_(true);
        auto rows = torch::randn({5, 6}).to(dtype).requires_grad_(true);
        auto xRef = x.detach().clone().requires_grad_(true);
        auto rowsRef = rows.detach().clone().requires_grad_(true);
        auto out = rt::addDistinctRows(x, index, rows);
        auto ref = xRef.index_add(0, index, rowsRef);
        WB_CHECK_MSG(torch::equal(out, ref), "addDistinctRows differs from index_add (" << c10::toString(dtype) << ")");
        auto sel = rt::selectDistinctRows(out, index);
        auto selRef = ref.index_select(0, index);
        WB_CHECK(torch::equal(sel, selRef));
        const auto w = torch::randn({5, 6}).to(dtype), wAll = torch::randn({10, 6}).to(dtype);
        ((sel * w).sum() + (out * wAll).sum()).backward();
        ((selRef * w).sum() + (ref * wAll).sum()).backward();
        WB_CHECK_MSG(torch::equal(x.grad(), xRef.grad()) && torch::equal(rows.grad(), rowsRef.grad()),
                     "distinct-row gradients differ from ATen's (" << c10::toString(dtype) << ")");
        // The rows the index skips get no gradient from the gather: zeros, not garbage.
        auto g = torch::autograd::grad({rt::selectDistinctRows(xRef, index).sum()}, {xRef})[0];
        WB_CHECK(g.index_select(0, torch::tensor(std::vector<int64_t>{1, 2, 5, 7, 8})).abs().sum().item<double>() == 0);
        WB_CHECK(g.index_select(0, index).eq(1).all().item<bool>());
    }
    bool refused = false;
    try {
        rt::addDistinctRows(torch::zeros({4, 3}), torch::tensor(std::vector<int64_t>{1}), torch::zeros({1, 2}));
    } catch (const c10::Error&) {
        refused = true;
    }
    WB_CHECK_MSG(refused, "addDistinctRows took rows of another width");
}

int run(int, char**)
{
    torch::set_num_threads(1);
    testRouter();
    testExperts();
    testBlockDiagonalDecoderAttention();
    testBlockDiagonalVision();
    testProjectorMergeOrder();
    testLossMaskedToCaptions();
    testPackedSegmentsAndIndexLists();
    testPipelinePartsEqualForward();
    testPipelineChunkLayers();
    testInterleavedOrder();
    testContextParallelSplit();
    testPatchUploadMatchesReference();
    testBf16WeightCopies();
    testBf16Gradients();
    testDistinctRowOps();
    testBf16WeightsReachEveryModule();
    return test::checkExitCode("test_runtime_model");
}

}  // namespace wb::test::suite_model
