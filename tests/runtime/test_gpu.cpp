// GPU-only checks (label `gpu`, built only with WB_WITH_CUDA; no Qt, so they run on a GPU node):
// the fast paths compute the same function as the reference paths on fresh random inputs.
//  - experts: at::_grouped_mm (bf16) vs the per-expert loop (fp32), forward and gradients, with
//    an expert that gets no token (an empty group);
//  - attention: varlen flash over packed segments vs the dense masked core, decoder (causal,
//    GQA, head dim 128) and vision (block-diagonal, head dim 72), forward and input gradients;
//  - a tiny VLM: CUDA fp32 loss equals the CPU loss;
//  - the fused AdamW step equals LibTorch's AdamW::step over three steps (two param groups,
//    weight decay on one, a parameter without a gradient in one step);
//  - the hand-written kernels (RoPE, SwiGLU) against the ATen formulas in fp64;
//  - the overlapped optimizer (train.overlap_optimizer): four steps of a tiny VLM with the updates
//    on the side stream, delayed there by ~50 ms of matmuls, give the serial step's losses and
//    weights; the same run without the model's waits gives other losses (the delay makes a
//    missing wait visible: the check can fail).
//  - kept bf16 weight copies (train.bf16_weight_copies) under bf16 autocast, serial and overlapped:
//    the losses and weights of the casting run, every copy equal to its master's cast after the
//    steps, and written in place by the AdamW pass (never cast again after the first forward);
//    with bf16 gradients (train.bf16_gradients) the widening run's losses and weights;
//  - the step timer's host wait (WB_HOST_AHEAD): finish() returns with the work after the mark running.
// Errors are ‖fast − ref‖ / ‖ref‖; bf16 operands land between 1e-3 and 1e-2.
#include "check.h"

#include "runtime/data/image_io.h"
#include "runtime/data/sample_packer.h"
#include "runtime/data/tokenizer.h"
#include "runtime/model/attention.h"
#include "runtime/model/bf16_weights.h"
#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/row_ops.h"
#include "runtime/model/torch_compat.h"
#include "runtime/model/vision_encoder.h"
#include "runtime/model/vlm_model.h"
#include "runtime/train/early_grad_norm.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/optimizer_overlap.h"
#include "runtime/train/step_timer.h"

#include <torch/torch.h>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <map>

using namespace wb;

static double relErr(const torch::Tensor& fast, const torch::Tensor& ref)
{
    auto f = fast.to(torch::kFloat64).cpu(), r = ref.to(torch::kFloat64).cpu();
    if (!torch::isfinite(f).all().item<bool>())
        return 1e9;  // NaN never passes
    return ((f - r).norm() / r.norm().clamp_min(1e-30)).item<double>();
}

static void testGroupedExperts()
{
    if (!rt::groupedGemmAvailable()) {
        std::cout << "grouped GEMM not in this LibTorch: skipped" << std::endl;
        return;
    }
    for (int trial = 0; trial < 3; ++trial) {
        torch::manual_seed(100 + trial);
        const int64_t T = 517 + 64 * trial, D = 256, E = 8, F = 192, K = 2;
        const auto cuda = torch::TensorOptions().device(torch::kCUDA);
        auto x = torch::randn({T, D}, cuda).requires_grad_(true);
        auto gateUp = (torch::randn({E, D, 2 * F}, cuda) * 0.05).requires_grad_(true);
        auto down = (torch::randn({E, F, D}, cuda) * 0.05).requires_grad_(true);
        auto logits = torch::randn({T, E}, cuda);
        logits.select(1, 3).fill_(-1e4);  // expert 3 gets nothing: an empty group
        rt::RouterOutput r = rt::routeTopK(logits, K, 0.0);
        auto upstream = torch::randn({T, D}, cuda);
        auto run = [&](rt::ExpertKernel kernel) {
            auto y = rt::expertsForward(x, r.weights_TK, r.expertIds_TK, gateUp, down, kernel);
            auto grads = torch::autograd::grad({y}, {x, gateUp, down}, {upstream});
            return std::make_pair(y.detach(), grads);
        };
        auto [yLoop, gLoop] = run(rt::ExpertKernel::Loop);
        auto [yGrouped, gGrouped] = run(rt::ExpertKernel::Grouped);
        WB_CHECK_MSG(relErr(yGrouped, yLoop) < 1e-2, "forward rel err " << relErr(yGrouped, yLoop));
        const char* names[] = {"dx", "dgate_up", "ddown"};
        for (int i = 0; i < 3; ++i)
            WB_CHECK_MSG(relErr(gGrouped[i], gLoop[i]) < 2e-2, names[i] << " rel err " << relErr(gGrouped[i], gLoop[i]));
        WB_CHECK(gGrouped[1][3].abs().max().item<double>() == 0.0);  // the empty expert gets no gradient
        if (trial == 0)
            std::cout << "grouped vs loop: y " << relErr(yGrouped, yLoop) << ", dx " << relErr(gGrouped[0], gLoop[0])
                      << ", dgate_up " << relErr(gGrouped[1], gLoop[1]) << std::endl;
    }
}

static void testVarlenDecoderAttention()
{
    if (!rt::flashVarlenAvailable()) {
        std::cout << "varlen flash not in this LibTorch: skipped" << std::endl;
        return;
    }
    torch::manual_seed(7);
    const int D = 512, H = 8, G = 2, Dh = 128;
    rt::GqaAttention attn(D, H, G, Dh);
    attn->to(torch::kCUDA);
    // Two rows of 300 tokens: documents of 120, 100, 60 and 20 padding; 250 and 50 padding.
    const std::vector<std::vector<int>> rows = {{120, 100, 60, 20}, {250, 50}};
    std::vector<int64_t> doc, pos, lengths;
    for (const auto& row : rows) {
        int id = 0;
        for (size_t s = 0; s < row.size(); ++s, ++id) {
            const bool pad = (s + 1 == row.size());
            for (int t = 0; t < row[s]; ++t) {
                doc.push_back(pad ? -1 : id);
                pos.push_back(pad ? 0 : t);
            }
            lengths.push_back(row[s]);
        }
    }
    auto docs = torch::tensor(doc).view({2, 300}).to(torch::kCUDA);
    auto angle = rt::ropeAngles1d(torch::tensor(pos).view({2, 300}).to(torch::kCUDA), Dh, 10000.0);
    auto x = torch::randn({2, 300, D}, torch::kCUDA).requires_grad_(true);
    auto upstream = torch::randn({2, 300, D}, torch::kCUDA);
    auto ref = attn(x, angle, rt::documentCausalMask(docs));
    auto fast = attn(x, angle, torch::Tensor(), rt::packedSegments(lengths, torch::kCUDA));
    // Padding outputs differ by design (padding sees only itself in flash); compare documents.
    auto valid = (docs >= 0).unsqueeze(-1);
    auto err = relErr(fast.masked_fill(valid.logical_not(), 0), ref.masked_fill(valid.logical_not(), 0));
    WB_CHECK_MSG(err < 1e-2, "decoder varlen rel err " << err);
    auto gRef = torch::autograd::grad({ref.masked_fill(valid.logical_not(), 0)}, {x}, {upstream})[0];
    auto gFast = torch::autograd::grad({fast.masked_fill(valid.logical_not(), 0)}, {x}, {upstream})[0];
    WB_CHECK_MSG(relErr(gFast, gRef) < 2e-2, "decoder varlen dx rel err " << relErr(gFast, gRef));
    std::cout << "decoder varlen vs dense: y " << err << ", dx " << relErr(gFast, gRef) << std::endl;
}

static void testVarlenVision()
{
    if (!rt::flashVarlenAvailable())
        return;
    torch::manual_seed(8);
    rt::VisionBlock block(144, 2, 256);  // head dim 72, as Qwen3-VL's 1152 / 16
    block->to(torch::kCUDA);
    const std::vector<int64_t> sizes = {64, 196, 36, 100};  // patches per image
    std::vector<int32_t> image, row, col;
    for (size_t i = 0; i < sizes.size(); ++i)
        for (int64_t p = 0; p < sizes[i]; ++p) {
            image.push_back(static_cast<int32_t>(i));
            row.push_back(static_cast<int32_t>(p / 8));
            col.push_back(static_cast<int32_t>(p % 8));
        }
    const int64_t P = static_cast<int64_t>(image.size());
    auto img = torch::tensor(image).to(torch::kCUDA);
    auto angle = rt::ropeAngles2d(torch::tensor(row).to(torch::kCUDA), torch::tensor(col).to(torch::kCUDA), 72, 10000.0);
    auto x = torch::randn({P, 144}, torch::kCUDA).requires_grad_(true);
    auto upstream = torch::randn({P, 144}, torch::kCUDA);
    auto ref = block(x, angle, (img.unsqueeze(1) == img.unsqueeze(0)).unsqueeze(0));
    auto fast = block(x, angle, torch::Tensor(), rt::packedSegments(sizes, torch::kCUDA));
    WB_CHECK_MSG(relErr(fast, ref) < 1e-2, "vision varlen rel err " << relErr(fast, ref));
    auto gRef = torch::autograd::grad({ref}, {x}, {upstream})[0];
    auto gFast = torch::autograd::grad({fast}, {x}, {upstream})[0];
    WB_CHECK_MSG(relErr(gFast, gRef) < 2e-2, "vision varlen dx rel err " << relErr(gFast, gRef));
    std::cout << "vision varlen vs dense: y " << relErr(fast, ref) << ", dx " << relErr(gFast, gRef) << std::endl;
}

static core::ModelConfig tinyVlm()
{
    core::ModelConfig m;
    m.vision.numLayers = 1; m.vision.hiddenSize = 16; m.vision.ffnHiddenSize = 32; m.vision.numAttentionHeads = 2;
    m.vision.patchSize = 4; m.vision.spatialMergeSize = 2; m.vision.deepstackLayers = {0};
    m.decoder.numLayers = 2; m.decoder.hiddenSize = 32; m.decoder.numAttentionHeads = 4; m.decoder.numQueryGroups = 2;
    m.decoder.kvChannels = 8; m.decoder.numMoeExperts = 4; m.decoder.moeRouterTopk = 2; m.decoder.moeFfnHiddenSize = 16;
    m.decoder.vocabSize = 300; m.decoder.mropeSection = {2, 1, 1};
    m.vision.temporalPatchSize = 2;  // the still frame repeated on the device (toTensors)
    return m;
}

static rt::MicroBatch tinyVlmBatch()
{
    rt::SamplePacker packer(2, 48, 2, rt::patchDim(4, 2));
    for (int i = 0; i < 4; ++i) {
        rt::PreparedSample s;
        s.hasImage = i % 2 == 0;
        if (s.hasImage) {
            rt::RgbImage img{16, 8, std::vector<uint8_t>(16 * 8 * 3)};
            for (size_t j = 0; j < img.rgb.size(); ++j) img.rgb[j] = static_cast<uint8_t>((j * 37 + i) % 251);
            s.image = rt::patchify(img, 4, 2, 2);
        }
        s.caption = rt::tokenize("sample number " + std::to_string(i), 64);
        WB_CHECK(packer.tryAdd(s));
    }
    return packer.take(4);
}

static void testTinyModelCudaMatchesCpu()
{
    torch::manual_seed(9);
    const core::ModelConfig m = tinyVlm();
    rt::MicroBatch batch = tinyVlmBatch();
    rt::VlmModel model(m);
    auto cpuBatch = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
    {
        // Patch values made on the device from one frame of bytes == the host reference, bit for bit.
        auto gpuPatches = rt::toTensors(batch, torch::kCUDA, torch::kFloat32).patches_PC.cpu();
        const auto ref = rt::patchValues(batch.patchPixels.data(), batch.totalPatches(), 4, 2);
        auto ref_PC = torch::tensor(ref).view(gpuPatches.sizes());
        WB_CHECK(torch::equal(gpuPatches, ref_PC));
        WB_CHECK(torch::equal(cpuBatch.patches_PC, ref_PC));
    }
    const double cpuLoss = model->forward(cpuBatch).lmLoss.item<double>();
    model->to(torch::kCUDA);
    auto gpuBatch = rt::toTensors(batch, torch::kCUDA, torch::kFloat32);
    const double gpuLoss = model->forward(gpuBatch).lmLoss.item<double>();
    WB_CHECK_CLOSE(gpuLoss, cpuLoss, 1e-4);
    std::cout << "tiny model loss cpu " << cpuLoss << " cuda " << gpuLoss << std::endl;
}

static void testFusedAdamW()
{
    if (!rt::fusedAdamWAvailable())
        return;
    torch::manual_seed(10);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    std::vector<torch::Tensor> init = {torch::randn({64, 96}, cuda), torch::randn({3, 40, 24}, cuda), torch::randn({96}, cuda)};
    auto make = [&](std::vector<torch::Tensor>& params) {
        for (auto& t : init)
            params.push_back(t.clone().requires_grad_(true));
        std::vector<torch::optim::OptimizerParamGroup> groups;
        auto opts = [](double wd) {
            return std::make_unique<torch::optim::AdamWOptions>(
                torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
        };
        groups.emplace_back(std::vector<torch::Tensor>{params[0], params[1]}, opts(0.1));
        groups.emplace_back(std::vector<torch::Tensor>{params[2]}, opts(0.0));
        return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(3e-3));
    };
    std::vector<torch::Tensor> ref, fused;
    auto refOpt = make(ref);
    auto fusedOpt = make(fused);
    for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < init.size(); ++i) {
            if (step == 1 && i == 1)
                continue;  // no gradient this step: its own step count falls behind
            auto g = torch::randn_like(init[i]);
            // Step 2 clips: the reference divides the gradients, the fused step gets the divisor.
            ref[i].mutable_grad() = step == 2 ? g / 3.5 : g.clone();
            fused[i].mutable_grad() = g.clone();
        }
        // The multi-tensor norm equals the per-tensor one.
        {
            std::vector<torch::Tensor> gs;
            torch::Tensor sq = torch::zeros({}, cuda);
            for (auto& p : fused)
                if (p.grad().defined()) {
                    gs.push_back(p.grad());
                    sq = sq + p.grad().pow(2).sum();
                }
            WB_CHECK_CLOSE(rt::globalGradNorm(gs).item<double>(), sq.sqrt().item<double>(), 1e-4);
        }
        refOpt->step();
        rt::fusedAdamWStep(*fusedOpt, rt::MomentDtypes{}, step == 2 ? torch::full({}, 3.5, cuda) : torch::Tensor());
        refOpt->zero_grad();
        fusedOpt->zero_grad();
    }
    for (size_t i = 0; i < init.size(); ++i)
        WB_CHECK_MSG(relErr(fused[i].detach(), ref[i].detach()) < 1e-6,
                     "fused AdamW param " << i << " rel err " << relErr(fused[i].detach(), ref[i].detach()));
    std::cout << "fused AdamW vs AdamW::step: param 0 rel err " << relErr(fused[0].detach(), ref[0].detach()) << std::endl;
}

// bf16 Adam moments (precision-aware optimizer): the CUDA step (our kernel, vector and scalar
// paths, with a gradient divisor) against the CPU ATen step on the same inputs. Both do fp32 math
// and round the moments to nearest even once; FMA contraction on the GPU may put a value on the
// other side of a bf16 midpoint, so moments may differ by one bf16 ulp in a few places.
static void testFusedAdamWBf16Moments()
{
    if (!rt::fusedAdamWAvailable())
        return;
    torch::manual_seed(12);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    // A matrix (vector path), an odd-sized vector (scalar tail), and a contiguous view at a 4-byte
    // offset (misaligned: the scalar kernel over all of it).
    const torch::Tensor backing = torch::randn({1 + 999}, cuda);
    std::vector<torch::Tensor> init = {torch::randn({64, 96}, cuda), torch::randn({1027}, cuda), backing.narrow(0, 1, 999)};
    const rt::MomentDtypes bf16{torch::kBFloat16, torch::kBFloat16};
    core::TrainConfig t;
    t.lr = 3e-3;
    t.weightDecay = 0.1;
    std::vector<torch::Tensor> gpu, cpu;
    for (const auto& x : init) {
        gpu.push_back(x.clone().requires_grad_(true));
        cpu.push_back(x.cpu().clone().requires_grad_(true));
    }
    // The misaligned one again: a view into a device buffer, as a parameter.
    const torch::Tensor gpuBacking = backing.clone();
    gpu[2] = gpuBacking.narrow(0, 1, 999).requires_grad_(true);
    auto gpuOpt = rt::makeOptimizer({gpu[0], gpu[2]}, {gpu[1]}, t);
    auto cpuOpt = rt::makeOptimizer({cpu[0], cpu[2]}, {cpu[1]}, t);
    for (int step = 0; step < 4; ++step) {
        for (size_t i = 0; i < init.size(); ++i) {
            const torch::Tensor g = torch::randn_like(init[i]);
            gpu[i].mutable_grad() = g.clone();
            cpu[i].mutable_grad() = (step == 2 ? g / 3.5 : g).cpu();
        }
        rt::fusedAdamWStep(*gpuOpt, bf16, step == 2 ? torch::full({}, 3.5, cuda.dtype(torch::kFloat32)) : torch::Tensor());
        rt::adamWStepAten(*cpuOpt, bf16);
        gpuOpt->zero_grad();
        cpuOpt->zero_grad();
    }
    for (size_t i = 0; i < init.size(); ++i) {
        const double pErr = relErr(gpu[i].detach().cpu(), cpu[i].detach());
        WB_CHECK_MSG(pErr < 1e-5, "bf16-moment AdamW param " << i << " rel err " << pErr);
        auto& gs = rt::adamWState(*gpuOpt, gpu[i], bf16);
        auto& cs = rt::adamWState(*cpuOpt, cpu[i], bf16);
        WB_CHECK(gs.exp_avg().scalar_type() == torch::kBFloat16 && gs.exp_avg_sq().scalar_type() == torch::kBFloat16);
        for (const auto& [g, c] : {std::pair{gs.exp_avg(), cs.exp_avg()}, std::pair{gs.exp_avg_sq(), cs.exp_avg_sq()}}) {
            const torch::Tensor a = g.cpu().to(torch::kFloat64), b = c.to(torch::kFloat64);
            const torch::Tensor ulp = torch::pow(2.0, torch::floor(torch::log2(b.abs().clamp_min(1e-30))) - 7.0);
            const double worst = ((a - b).abs() / ulp).max().item<double>();
            const double differing = (a != b).to(torch::kFloat64).mean().item<double>();
            WB_CHECK_MSG(worst <= 1.0 && differing < 0.01,
                         "param " << i << ": moments differ by up to " << worst << " bf16 ulp in " << differing * 100 << " %");
        }
    }
    std::cout << "bf16-moment AdamW CUDA vs CPU: param 0 rel err " << relErr(gpu[0].detach().cpu(), cpu[0].detach()) << std::endl;
}

// The resident launch (adamwStep's residentBlocks: a fixed grid of 512-thread blocks, four groups
// of loads in flight per thread) against the default grid on the same inputs: the same per-element
// arithmetic, so p, m, v and the bf16 copy are equal bit for bit — with a bf16 and an fp32
// gradient, fp32 and bf16 moments, sizes with a scalar tail, far more work than the grid covers in
// one round (the unrolled loop and its remainder loop both run) and fewer vectors than one block.
static void testAdamWResidentGrid()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(5);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    int cases = 0;
    for (const int64_t n : {int64_t{3'000'003}, int64_t{777}, int64_t{8}})
        for (const auto gType : {torch::kBFloat16, torch::kFloat32})
            for (const auto mType : {torch::kFloat32, torch::kBFloat16}) {
                const torch::Tensor p0 = torch::randn({n}, cuda), g = torch::randn({n}, cuda).to(gType);
                const torch::Tensor m0 = (torch::randn({n}, cuda) * 0.1).to(mType);
                const torch::Tensor v0 = torch::rand({n}, cuda).mul(0.01).to(mType);
                const torch::Tensor scale = torch::full({}, 2.5, cuda);
                torch::Tensor p[2], m[2], v[2], copy[2];
                for (int r = 0; r < 2; ++r) {
                    p[r] = p0.clone(), m[r] = m0.clone(), v[r] = v0.clone();
                    copy[r] = torch::empty({n}, cuda.dtype(torch::kBFloat16));
                    rt::cuda::adamwStep(p[r], g, m[r], v[r], 3e-3, 0.9, 0.95, 1e-8, 0.1, 3, scale, copy[r],
                                        /*onePassGrid=*/true, /*residentBlocks=*/r == 0 ? 0 : 5);
                }
                WB_CHECK_MSG(torch::equal(p[0], p[1]) && torch::equal(m[0], m[1]) && torch::equal(v[0], v[1]) &&
                                 torch::equal(copy[0], copy[1]),
                             "resident AdamW grid differs from the default one: n "
                                 << n << " gradient " << c10::toString(gType) << " moments " << c10::toString(mType));
                WB_CHECK(!torch::equal(p[1], p0));
                ++cases;
            }
    std::cout << "AdamW on 5 resident blocks: bit-identical to the default grid in " << cases << " cases" << std::endl;
}

// The hand-written kernels (cuda/fused_kernels.h) against the ATen formulas in fp64 on the same
// inputs: RoPE on a strided [N, H, D] view (as the vision block passes it) with bf16 and fp32
// operands, forward and the −angle backward; SwiGLU forward and backward. A build without nvcc
// says so and checks nothing here.
static void testFusedKernels()
{
    if (!rt::cuda::fusedKernelsAvailable()) {
        std::cout << "fused kernels: not in this build (no nvcc); the ATen paths ran instead" << std::endl;
        return;
    }
    torch::manual_seed(11);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        // The vision block's strided k (d 72: 4-wide vectors), the decoder's contiguous q (d 128:
        // 8-wide for 2-byte types), and a row offset by one element (the scalar kernel).
        struct RopeCase {
            int64_t D;
            int layout;
        };  // layout 0 strided, 1 contiguous, 2 misaligned
        for (const RopeCase rc : {RopeCase{72, 0}, RopeCase{128, 1}, RopeCase{72, 2}})
            for (double sign : {1.0, -1.0}) {
                const int64_t N = 1000, H = 6, D = rc.D, F = D / 2;
                auto qkv = torch::randn({N, 3, H, D}, cudaF).to(dtype);
                auto flat = torch::randn({N * H * D + 1}, cudaF).to(dtype);
                auto x = rc.layout == 0   ? qkv.select(1, 1)
                         : rc.layout == 1 ? torch::randn({N, H, D}, cudaF).to(dtype)
                                          : flat.narrow(0, 1, N * H * D).view({N, H, D});
                auto angle = torch::rand({N, 1, F}, cudaF) * 40.0;
                auto cos = angle.cos().to(dtype), sin = angle.sin().to(dtype);
                auto got = rt::cuda::ropeRotate(x, cos, sin, sign);
                auto x64 = x.to(torch::kFloat64), c = cos.to(torch::kFloat64), s = sin.to(torch::kFloat64) * sign;
                auto x1 = x64.slice(-1, 0, F), x2 = x64.slice(-1, F);
                auto ref = torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
                const double err = relErr(got, ref);
                const double tol = dtype == torch::kFloat32 ? 1e-6 : 8e-3;
                WB_CHECK_MSG(got.is_contiguous() && err < tol,
                             "rope " << c10::toString(dtype) << " sign " << sign << " rel err " << err);
                std::cout << "fused rope " << c10::toString(dtype) << " d " << D << " layout " << rc.layout << " sign "
                          << sign << ": rel err " << err << std::endl;
            }
        auto gateUp = torch::randn({777, 2 * 96}, cudaF).to(dtype);
        auto dy = torch::randn({777, 96}, cudaF).to(dtype);
        auto g64 = gateUp.to(torch::kFloat64).detach().requires_grad_(true);
        auto y64 = torch::silu(g64.slice(-1, 0, 96)) * g64.slice(-1, 96);
        y64.backward(dy.to(torch::kFloat64));
        // The norms' cases: every shape of the vector kernels (norm_kernels.cuh: 8 or 16 lanes a row
        // at D/V ≤ 16, one warp up to 256 vectors, whole blocks beyond; V = 8 bf16 or 4 fp32 values),
        // the scalar fallback (bf16 D 100: not whole vectors; a row offset by one element:
        // misaligned), row counts that leave the last block part empty (333, 4099), and rows past
        // what the grid holds at once (4099 at the wide rows, 65537 at D 64), so that each row group
        // loops over rows and adds its dw over several.
        struct NormCase {
            int64_t N, D;
            bool misaligned = false;
        };
        std::vector<NormCase> normCases{{65537, 64}, {333, 2048, true}};
        const auto normRows = [&](const NormCase& c) {
            if (!c.misaligned)
                return torch::randn({c.N, c.D}, cudaF).to(dtype);
            return torch::randn({c.N * c.D + 1}, cudaF).to(dtype).narrow(0, 1, c.N * c.D).view({c.N, c.D});
        };
        std::vector<NormCase> rmsCases = normCases, layerCases = normCases;
        for (int64_t N : {int64_t{333}, int64_t{4099}}) {
            for (int64_t D : {32, 64, 128, 2048, 4608, 100})
                rmsCases.push_back({N, D});
            for (int64_t D : {32, 64, 128, 1152, 2048, 4608, 100})
                layerCases.push_back({N, D});
        }
        // RMSNorm: forward, dx and dw against the fp64 formula.
        for (const NormCase& nc : rmsCases) {
            const int64_t N = nc.N, D = nc.D;
            auto x = normRows(nc);
            auto w = (torch::rand({D}, cudaF) + 0.5);
            auto dyN = torch::randn({N, D}, cudaF).to(dtype);
            auto x64 = x.to(torch::kFloat64).requires_grad_(true), w64 = w.to(torch::kFloat64).requires_grad_(true);
            auto y64n = x64 * torch::rsqrt(x64.pow(2).mean(-1, true) + 1e-6) * w64;
            y64n.backward(dyN.to(torch::kFloat64));
            auto [yN, rstd] = rt::cuda::rmsNormForward(x, w, 1e-6);
            auto [dxN, dwN] = rt::cuda::rmsNormBackward(x, w, rstd, dyN);
            const double eF = relErr(yN, y64n.detach()), eX = relErr(dxN, x64.grad()), eW = relErr(dwN, w64.grad());
            const double tolN = dtype == torch::kFloat32 ? 1e-5 : 8e-3;
            WB_CHECK_MSG(yN.scalar_type() == dtype && eF < tolN && eX < tolN && eW < tolN,
                         "rmsnorm " << c10::toString(dtype) << " N " << N << " D " << D << " misaligned "
                                    << nc.misaligned << ": forward " << eF << " dx " << eX << " dw " << eW);
            std::cout << "fused rmsnorm " << c10::toString(dtype) << " N " << N << " D " << D << " misaligned "
                      << nc.misaligned << ": forward rel err " << eF << ", dx " << eX << ", dw " << eW << std::endl;
        }
        // LayerNorm: forward, dx, dw and db against the fp64 formula (rows with an offset, so the
        // mean matters; 1152 the vision width, 4608 the projector's merged one); and applyLayerNorm
        // under the module against torch's LayerNorm.
        for (const NormCase& nc : layerCases) {
            const int64_t N = nc.N, D = nc.D;
            auto x = normRows(nc);
            x.mul_(2.0).add_(3.0);
            auto w = (torch::rand({D}, cudaF) + 0.5), b = torch::randn({D}, cudaF);
            auto dyL = torch::randn({N, D}, cudaF).to(dtype);
            auto x64 = x.to(torch::kFloat64).requires_grad_(true), w64 = w.to(torch::kFloat64).requires_grad_(true);
            auto b64 = b.to(torch::kFloat64).requires_grad_(true);
            auto c64 = x64 - x64.mean(-1, true);
            auto y64l = c64 * torch::rsqrt(c64.pow(2).mean(-1, true) + 1e-5) * w64 + b64;
            y64l.backward(dyL.to(torch::kFloat64));
            auto [yL, meanL, rstdL] = rt::cuda::layerNormForward(x, w, b, 1e-5);
            auto [dxL, dwL, dbL] = rt::cuda::layerNormBackward(x, w, meanL, rstdL, dyL);
            const double eF = relErr(yL, y64l.detach()), eX = relErr(dxL, x64.grad());
            const double eW = relErr(dwL, w64.grad()), eB = relErr(dbL, b64.grad());
            const double tolL = dtype == torch::kFloat32 ? 1e-5 : 8e-3;
            WB_CHECK_MSG(yL.scalar_type() == dtype && eF < tolL && eX < tolL && eW < tolL && eB < tolL,
                         "layernorm " << c10::toString(dtype) << " N " << N << " D " << D << " misaligned "
                                      << nc.misaligned << ": forward " << eF << " dx " << eX << " dw " << eW << " db "
                                      << eB);
            std::cout << "fused layernorm " << c10::toString(dtype) << " N " << N << " D " << D << " misaligned "
                      << nc.misaligned << ": forward rel err " << eF << ", dx " << eX << ", dw " << eW << ", db " << eB
                      << std::endl;
        }
        {
            torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({1152}));
            ln->to(torch::kCUDA);
            auto x = torch::randn({64, 1152}, cudaF).to(dtype);
            const double e = relErr(rt::applyLayerNorm(ln, x).to(torch::kFloat32), ln->forward(x.to(torch::kFloat32)));
            WB_CHECK_MSG(e < (dtype == torch::kFloat32 ? 1e-5 : 8e-3), "applyLayerNorm vs LayerNorm: " << e);
        }
        const double errF = relErr(rt::cuda::swigluForward(gateUp), y64.detach());
        const double errB = relErr(rt::cuda::swigluBackward(gateUp, dy), g64.grad());
        const double tol = dtype == torch::kFloat32 ? 1e-5 : 8e-3;
        WB_CHECK_MSG(errF < tol && errB < tol, "swiglu " << c10::toString(dtype) << " forward " << errF << " backward " << errB);
        std::cout << "fused swiglu " << c10::toString(dtype) << ": forward rel err " << errF << ", backward " << errB
                  << std::endl;
    }
}

// The fused MoE combine (gather of T·K expert rows + weighted sum over K) against fp64 ATen on a
// random permutation, forward and both gradients; widths that take 16-byte vectors (160, 2048),
// 8-byte ones (100 in bf16) and none (37), and rows that start off a 16-byte boundary (scalar).
// The dispatch's gather-sum (cuda::gatherSumRows) on the same operands against ATen's gather and
// fp32 sum over K.
static void testFusedCombine()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(12);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    const int64_t T = 513, K = 8, A = T * K;
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        for (int64_t D : {160, 2048, 100, 37}) {
            for (bool offset : {false, true}) {
                if (offset && D != 160)
                    continue;
                // Offset: the rows' storage starts one element in, so no row is 16-byte aligned.
                auto rows = torch::randn({A * D + 1}, cudaF)
                                .to(dtype)
                                .slice(0, offset ? 1 : 0, offset ? A * D + 1 : A * D)
                                .view({A, D});
                auto weights = torch::softmax(torch::randn({T, K}, cudaF), -1);
                auto slot = torch::randperm(A, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kInt64));
                auto dOut = torch::randn({T, D}, cudaF).to(dtype);
                auto r64 = rows.to(torch::kFloat64).detach().requires_grad_(true);
                auto w64 = weights.to(torch::kFloat64).detach().requires_grad_(true);
                auto ref = (r64.index_select(0, slot).view({T, K, D}) * w64.unsqueeze(-1)).sum(1);
                ref.backward(dOut.to(torch::kFloat64));
                auto out = rt::cuda::combineForward(rows, weights, slot);
                auto [dRows, dW] = rt::cuda::combineBackward(rows, weights, slot, dOut);
                const double e0 = relErr(out, ref.detach()), e1 = relErr(dRows, r64.grad()),
                             e2 = relErr(dW, w64.grad());
                const double tol = dtype == torch::kFloat32 ? 1e-5 : 8e-3;
                WB_CHECK_MSG(e0 < tol && e1 < tol && e2 < tol, "combine " << c10::toString(dtype) << " D " << D
                                                                          << " offset " << offset << " out " << e0
                                                                          << " dRows " << e1 << " dW " << e2);
                // Every dRows row is written (slot is a permutation): compare with the exact
                // product, no row left unwritten.
                auto exactRows = (dOut.to(torch::kFloat32).repeat_interleave(K, 0) * weights.flatten().unsqueeze(1))
                                     .to(dtype)
                                     .index_select(0, std::get<1>(slot.sort()));
                WB_CHECK_MSG(torch::equal(dRows, exactRows), "combine dRows is not w · dOut rounded once ("
                                                                 << c10::toString(dtype) << " D " << D << ")");
                if (rt::cuda::gatherSumSupports(rows, slot, K)) {
                    auto sum = rt::cuda::gatherSumRows(rows, slot, K);
                    auto sumRef = rows.index_select(0, slot).view({T, K, D}).sum(1, false, torch::kFloat32).to(dtype);
                    const double e3 = relErr(sum, sumRef.to(torch::kFloat64));
                    WB_CHECK_MSG(e3 < (dtype == torch::kFloat32 ? 1e-6 : 4e-3),
                                 "gatherSumRows " << c10::toString(dtype) << " D " << D << ": " << e3);
                }
                if (D == 2048 || offset)
                    std::cout << "fused combine " << c10::toString(dtype) << " D " << D
                              << (offset ? " (unaligned)" : "") << ": out " << e0 << ", dRows " << e1 << ", dW " << e2
                              << std::endl;
            }
        }
    }
}

// scatterRows (the distinct-row add and the gather's backward, row_ops.h) equals ATen's index_add
// and index_copy bit for bit (fp32 and bf16, vector and scalar widths), and the autograd wrappers
// give index_select's / index_add's gradients on the GPU.
static void testScatterRows()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(14);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
        for (int64_t D : {2048, 100, 37}) {
            const int64_t R = 1000;
            auto index = std::get<0>(torch::randperm(R, cudaF.dtype(torch::kInt64)).slice(0, 0, 700).sort());
            auto x = torch::randn({R, D}, cudaF).to(dtype);
            auto rows = torch::randn({700, D}, cudaF).to(dtype);
            if (!rt::cuda::scatterRowsSupports(x, index, rows))
                continue;  // WB_PASS_KERNELS=0
            auto added = x.clone();
            rt::cuda::scatterRows(added, index, rows, true);
            WB_CHECK_MSG(
                torch::equal(added, x.index_add(0, index, rows)),
                "scatterRows(accumulate) differs from index_add (" << c10::toString(dtype) << " D " << D << ")");
            auto written = torch::zeros_like(x);
            rt::cuda::scatterRows(written, index, rows, false);
            WB_CHECK_MSG(torch::equal(written, torch::zeros_like(x).index_copy(0, index, rows)),
                         "scatterRows differs from index_copy (" << c10::toString(dtype) << " D " << D << ")");
            auto xg = x.detach().clone().requires_grad_(true), xr = x.detach().clone().requires_grad_(true);
            auto rg = rows.detach().clone().requires_grad_(true), rr = rows.detach().clone().requires_grad_(true);
            auto w = torch::randn({R, D}, cudaF).to(dtype), wSel = torch::randn({700, D}, cudaF).to(dtype);
            auto out = rt::addDistinctRows(xg, index, rg);
            auto ref = xr.index_add(0, index, rr);
            ((out * w).sum() + (rt::selectDistinctRows(out, index) * wSel).sum()).backward();
            ((ref * w).sum() + (ref.index_select(0, index) * wSel).sum()).backward();
            WB_CHECK_MSG(
                torch::equal(out, ref) && torch::equal(xg.grad(), xr.grad()) && torch::equal(rg.grad(), rr.grad()),
                "distinct-row ops differ from ATen's on the GPU (" << c10::toString(dtype) << " D " << D << ")");
        }
        std::cout << "scatterRows " << c10::toString(dtype) << ": equal to index_add / index_copy and their gradients"
                  << std::endl;
    }
}

// The gradients' sum of squares (cuda::sumOfSquares, the clip's norm) against fp64: fp32 and bf16
// tensors, sizes off the chunk and vector multiples, a misaligned start, an empty tensor, and more
// tensors than one launch takes (100: three launches); globalGradNorm takes it on CUDA.
static void testSumOfSquares()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(15);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    std::vector<torch::Tensor> grads;
    for (int i = 0; i < 100; ++i) {
        const int64_t n = i == 7 ? 0 : (i == 3 ? 3 * 16384 + 5 : 1 + (i * 7919) % 40000);
        auto t = torch::randn({n + 1}, cudaF) * (1 + i % 5);
        auto view = i % 9 == 4 ? t.slice(0, 1) : t.slice(0, 0, n);  // a misaligned start now and then
        grads.push_back(i % 2 ? view.to(torch::kBFloat16) : view);
    }
    grads.push_back(torch::randn({2048, 768}, cudaF).to(torch::kBFloat16));
    grads.push_back(torch::randn({20001}, cudaF).to(torch::kBFloat16).slice(0, 1));  // bf16, misaligned
    if (!rt::cuda::sumOfSquaresSupports(grads))
        return;  // WB_PASS_KERNELS=0
    double ref = 0;
    for (const auto& g : grads)
        ref += g.to(torch::kFloat64).pow(2).sum().item<double>();
    const double got = rt::cuda::sumOfSquares(grads).item<double>();
    const double norm = rt::globalGradNorm(grads).item<double>();
    const double e = std::abs(got - ref) / ref, eNorm = std::abs(norm - std::sqrt(ref)) / std::sqrt(ref);
    WB_CHECK_MSG(e < 1e-5 && eNorm < 1e-5, "sumOfSquares rel err " << e << ", globalGradNorm " << eNorm);
    std::cout << "sumOfSquares: " << grads.size() << " tensors, rel err " << e << " (norm " << eNorm << ")"
              << std::endl;
}

// widenToFloat (the experts' weight-gradient cast) is exactly x.to(kFloat32): aligned and
// misaligned starts, a length that is not a multiple of 8, bf16 and fp16.
static void testWidenToFloat()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(13);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
        auto base = (torch::randn({3 * 1000 + 5}, cudaF) * 100).to(dtype);
        for (int64_t offset : {0, 1, 3}) {
            auto x = base.slice(0, offset);  // contiguous, 16-byte aligned only at offset 0
            WB_CHECK(rt::cuda::widenSupports(x));
            auto fast = rt::cuda::widenToFloat(x);
            WB_CHECK_MSG(fast.scalar_type() == torch::kFloat32 && torch::equal(fast, x.to(torch::kFloat32)),
                         "widenToFloat " << c10::toString(dtype) << " offset " << offset << " differs from to(kFloat32)");
        }
        auto m = torch::randn({7, 129}, cudaF).to(dtype);
        WB_CHECK(torch::equal(rt::cuda::widenToFloat(m), m.to(torch::kFloat32)) &&
                 rt::cuda::widenToFloat(m).sizes() == m.sizes());
    }
    std::cout << "widenToFloat: bit-exact vs to(kFloat32)" << std::endl;
}

// The fused cross-entropy (no fp32 copy of the logits) against fp64 ATen: the per-target losses
// and the logits' gradient for a random per-target upstream gradient, bf16 and fp32 logits, with
// vocabularies that take the 16-byte vectors (a multiple of 8), 4-value vectors only (bf16) and
// the scalar loop (odd), none a multiple of the block.
static void testFusedCrossEntropy()
{
    if (!rt::cuda::fusedKernelsAvailable())
        return;
    torch::manual_seed(14);
    const auto cudaF = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
    const int64_t N = 37;
    for (const int64_t V : {int64_t{151936 / 8}, int64_t{151936 / 8 + 4}, int64_t{151936 / 8 + 3}})
        for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
            auto logits = (torch::randn({N, V}, cudaF) * 4).to(dtype);
            auto labels = torch::randint(0, V, {N}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kInt64));
            auto dLoss = torch::rand({N}, cudaF);
            WB_CHECK(rt::cuda::crossEntropySupports(logits, labels));
            auto x64 = logits.to(torch::kFloat64).detach().requires_grad_(true);
            auto ref = torch::nn::functional::cross_entropy(
                x64, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
            ref.backward(dLoss.to(torch::kFloat64));
            auto [loss, lse] = rt::cuda::crossEntropyForward(logits, labels);
            auto dLogits = rt::cuda::crossEntropyBackward(logits, labels, lse, dLoss);
            const double e0 = relErr(loss, ref.detach()), e1 = relErr(dLogits, x64.grad());
            const double tol0 = 1e-6, tol1 = dtype == torch::kFloat32 ? 1e-5 : 8e-3;
            WB_CHECK_MSG(e0 < tol0 && e1 < tol1 && dLogits.scalar_type() == dtype,
                         "cross-entropy " << c10::toString(dtype) << " V " << V << " loss " << e0 << " dLogits " << e1);
            std::cout << "fused cross-entropy " << c10::toString(dtype) << " V " << V << ": loss " << e0 << ", dLogits "
                      << e1 << std::endl;
        }
}

// Four steps of the tiny VLM on CUDA: serial fused step, or the overlapped one (with or without
// the model's waits), the updates delayed on their stream by `delayMatmuls` 2048³ matmuls.
// With `copies`: under bf16 autocast, with kept bf16 weight copies when `copies` is "on".
struct OverlapRun {
    std::vector<double> losses;
    std::vector<torch::Tensor> params;
    int64_t waits = 0;
    size_t copies = 0;             // kept copies after the steps
    int copiesMismatched = 0;      // copies that differ from their master's cast
    int copiesMadeAgain = 0;       // copies not written in place by the AdamW pass
    int bf16Grads = 0;             // gradients left in bf16 by the backward (last step)
    int carvedSteps = 0;           // steps after whose step() cuBLAS targeted SMs − the SM budget
    bool matmulsCarved = false;    // still so after waitAll (must not be)
};

// bf16 autocast on CUDA for one scope (as moe-train's AutocastScope).
class Bf16Autocast {
public:
    explicit Bf16Autocast(bool on) : m_on(on)
    {
#if WB_TORCH_AT_LEAST(2, 4)
        if (m_on) {
            at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
            at::autocast::set_autocast_enabled(at::kCUDA, true);
        }
#endif
    }
    ~Bf16Autocast()
    {
#if WB_TORCH_AT_LEAST(2, 4)
        if (m_on) {
            at::autocast::set_autocast_enabled(at::kCUDA, false);
            at::autocast::clear_cache();
        }
#endif
    }

private:
    bool m_on;
};

// fp32; bf16 autocast casting; bf16 with kept copies; kept copies and bf16 gradients.
enum class Copies { None, Autocast, Kept, KeptBf16Grads };

static OverlapRun runOverlap(bool overlapped, bool fenced, int delayMatmuls, Copies copies = Copies::None,
                             int smBudget = 0)
{
    torch::manual_seed(21);
    rt::VlmModel model(tinyVlm());
    model->to(torch::kCUDA);
    rt::Bf16Weights kept;
    const bool keep = copies == Copies::Kept || copies == Copies::KeptBf16Grads;
    if (keep)
        model->setBf16Weights(&kept);
    kept.setBf16Gradients(copies == Copies::KeptBf16Grads);
    core::TrainConfig t;
    t.lr = 1e-2;  // large: one update moves the loss far beyond the comparison's tolerance
    t.weightDecay = 0.1;
    auto optimizer = rt::makeOptimizer(*model, t);
    std::unique_ptr<rt::OptimizerOverlap> overlap;
    if (overlapped) {
        overlap = std::make_unique<rt::OptimizerOverlap>(rt::forwardOrderGroups(*model, model->parameters()), nullptr);
        const auto big = torch::randn({2048, 2048}, torch::TensorOptions().device(torch::kCUDA));
        overlap->setBeforeUpdates([big, delayMatmuls] {
            torch::NoGradGuard noGrad;
            torch::Tensor x = big;
            for (int i = 0; i < delayMatmuls; ++i)
                x = torch::mm(x, big).div_(2048.0);
        });
        if (fenced) {
            model->setLayerRunner(overlap.get());
            model->setParameterFence(overlap.get());
        }
        if (keep)
            overlap->setBf16Weights(&kept);
        overlap->setSmBudget(smBudget);
    }
    const rt::MicroBatch batch = tinyVlmBatch();
    OverlapRun run;
    std::map<const c10::TensorImpl*, const void*> firstCopy;  // master → its copy's storage after step 1
    for (int step = 0; step < 4; ++step) {
        auto tensors = rt::toTensors(batch, torch::kCUDA, torch::kFloat32);
        torch::Tensor loss;
        {
            Bf16Autocast autocast(copies != Copies::None);
            rt::DecoderOutput out = model->forward(tensors);
            loss = out.lmLoss + out.auxLoss;
        }
        loss.backward();
        if (step == 0)
            for (const auto& p : model->parameters())
                if (auto c = kept.copyOf(p); c.defined())
                    firstCopy[p.unsafeGetTensorImpl()] = c.data_ptr();
        run.losses.push_back(loss.item<double>());  // waits for the training stream only
        std::vector<torch::Tensor> grads;
        run.bf16Grads = 0;
        for (const auto& p : model->parameters())
            if (p.grad().defined()) {
                grads.push_back(p.grad());
                run.bf16Grads += p.grad().scalar_type() == torch::kBFloat16;
            }
        const torch::Tensor divisor = ((rt::globalGradNorm(grads) + 1e-6) / 0.5).clamp_min(1.0);
        if (overlap) {
            overlap->step(*optimizer, rt::MomentDtypes{}, divisor);
            int target = 0;
            TORCH_CUDABLAS_CHECK(cublasGetSmCountTarget(at::cuda::getCurrentCUDABlasHandle(), &target));
            run.carvedSteps +=
                smBudget > 0 && target == at::cuda::getCurrentDeviceProperties()->multiProcessorCount - smBudget;
        } else {
            rt::fusedAdamWStep(*optimizer, rt::MomentDtypes{}, divisor, {nullptr, &kept});
            optimizer->zero_grad();
        }
    }
    if (overlap) {
        overlap->waitAll();
        run.waits = overlap->waits();
        int target = -1;
        TORCH_CUDABLAS_CHECK(cublasGetSmCountTarget(at::cuda::getCurrentCUDABlasHandle(), &target));
        run.matmulsCarved = target != 0;
#if WB_TORCH_AT_LEAST(2, 7)
        run.matmulsCarved = run.matmulsCarved || at::globalContext()._SMCarveout_EXPERIMENTAL().has_value();
#endif
    }
    run.copies = kept.size();
    for (const auto& p : model->parameters()) {
        const auto c = kept.copyOf(p);
        if (!c.defined())
            continue;
        run.copiesMismatched += !torch::equal(c, p.detach().to(torch::kBFloat16));
        const auto first = firstCopy.find(p.unsafeGetTensorImpl());
        run.copiesMadeAgain += first == firstCopy.end() || first->second != c.data_ptr();
    }
    for (const auto& p : model->parameters())
        run.params.push_back(p.detach().clone());
    torch::cuda::synchronize();
    return run;
}

static void testOverlappedOptimizer()
{
    if (!rt::fusedAdamWAvailable())
        return;
    const OverlapRun serial = runOverlap(false, false, 0);
    const OverlapRun overlapped = runOverlap(true, true, 200);
    const OverlapRun unfenced = runOverlap(true, false, 200);
    const OverlapRun budgeted = runOverlap(true, true, 200, Copies::None, /*smBudget=*/8);
    double worstLoss = 0.0, worstParam = 0.0, unfencedLoss = 0.0;
    for (size_t i = 0; i < serial.losses.size(); ++i) {
        worstLoss = std::max(worstLoss, std::abs(overlapped.losses[i] - serial.losses[i]) / std::abs(serial.losses[i]));
        unfencedLoss = std::max(unfencedLoss, std::abs(unfenced.losses[i] - serial.losses[i]) / std::abs(serial.losses[i]));
    }
    for (size_t i = 0; i < serial.params.size(); ++i)
        worstParam = std::max(worstParam, relErr(overlapped.params[i], serial.params[i]));
    WB_CHECK_MSG(worstLoss < 1e-5, "overlapped optimizer: loss rel err " << worstLoss << " vs the serial step");
    WB_CHECK_MSG(worstParam < 1e-5, "overlapped optimizer: weights rel err " << worstParam << " vs the serial step");
    WB_CHECK_MSG(overlapped.waits > 0, "the model never waited for an update");
    // With an SM budget (the updates on 8 resident blocks, the matmuls told to leave 8 SMs): the
    // serial step's losses and weights (the carved matmuls may pick other kernels, so to a
    // tolerance far below what a missing wait moves), the carve-out set by every step() and given
    // back by the waits.
    double budgetLoss = 0.0, budgetParam = 0.0;
    for (size_t i = 0; i < serial.losses.size(); ++i)
        budgetLoss = std::max(budgetLoss, std::abs(budgeted.losses[i] - serial.losses[i]) / std::abs(serial.losses[i]));
    for (size_t i = 0; i < serial.params.size(); ++i)
        budgetParam = std::max(budgetParam, relErr(budgeted.params[i], serial.params[i]));
    WB_CHECK_MSG(budgetLoss < 1e-4 && budgetParam < 1e-4, "SM-budget overlap: loss rel err "
                                                              << budgetLoss << ", weights " << budgetParam
                                                              << " vs the serial step");
    WB_CHECK_MSG(budgeted.carvedSteps == 4 && !budgeted.matmulsCarved,
                 "SM budget: carved after " << budgeted.carvedSteps
                                            << " of 4 steps, still carved at the end: " << budgeted.matmulsCarved);
    WB_CHECK_MSG(unfencedLoss > 1e-3, "without the waits the losses still match (" << unfencedLoss
                                          << "): the delay does not expose a missing wait, the check proves nothing");
    std::cout << "overlapped optimizer: losses within " << worstLoss << ", weights within " << worstParam
              << " of the serial step (" << overlapped.waits << " waits); without the waits the losses move by "
              << unfencedLoss << "; with an SM budget of 8: losses within " << budgetLoss << ", weights within "
              << budgetParam << std::endl;
}

// WB_EARLY_GRAD_NORM (early_grad_norm.h) on the device: each layer's gradients summed on the side
// stream during the backward (kept bf16 copies, bf16 gradients and autocast, as the benchmark
// runs), joined at the step, equal the one pass over every gradient, step after step (the
// gradients are freed and made again between steps, the sums' memory crosses the streams).
static void testEarlyGradNorm()
{
    if (!rt::fusedAdamWAvailable() || !WB_TORCH_AT_LEAST(2, 4))
        return;
    torch::manual_seed(21);
    rt::VlmModel model(tinyVlm());
    model->to(torch::kCUDA);
    rt::Bf16Weights kept;
    model->setBf16Weights(&kept);
    kept.setBf16Gradients(true);
    rt::EarlyGradNorm early(torch::Device(torch::kCUDA, 0), nullptr);
    model->setLayerRunner(&early);
    core::TrainConfig t;
    t.lr = 1e-2;
    auto optimizer = rt::makeOptimizer(*model, t);
    const rt::MicroBatch batch = tinyVlmBatch();
    double worst = 0.0;
    int64_t counted = 0, total = 0;
    for (int step = 0; step < 4; ++step) {
        early.arm();
        auto tensors = rt::toTensors(batch, torch::kCUDA, torch::kFloat32);
        torch::Tensor loss;
        {
            Bf16Autocast autocast(true);
            rt::DecoderOutput out = model->forward(tensors);
            loss = out.lmLoss + out.auxLoss;
        }
        loss.backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : model->parameters())
            if (p.grad().defined())
                grads.push_back(p.grad());
        const torch::Tensor norm = early.norm(grads);
        const double want = rt::globalGradNorm(grads).item<double>();
        worst = std::max(worst, std::abs(norm.item<double>() - want) / want);
        counted = early.countedEarly(), total = early.countedTotal();
        const torch::Tensor divisor = ((norm + 1e-6) / 0.5).clamp_min(1.0);
        rt::fusedAdamWStep(*optimizer, rt::MomentDtypes{}, divisor, {nullptr, &kept});
        optimizer->zero_grad();
    }
    model->setLayerRunner(nullptr);
    WB_CHECK_MSG(worst < 1e-5, "early gradient norm: rel err " << worst << " vs the one pass");
    WB_CHECK_MSG(counted > 0 && counted < total,
                 counted << " of " << total << " gradients counted during the backward");
    std::cout << "early gradient norm: within " << worst << " of the one pass over 4 steps, " << counted << " of "
              << total << " gradients counted during the backward" << std::endl;
}

// StepTimer::markHostWait (the trainer's WB_HOST_AHEAD): finish() waits only for the work queued
// before the mark, so the host goes on while ~100 ms of matmuls queued after it still run; the
// phase they belong to stays out of ms() until finishRest(). Without the mark finish() waits for
// all of it (the stream is idle after it) — the check can fail both ways.
static void testStepTimerHostWait()
{
    auto a = torch::randn({4096, 4096}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16));
    for (const bool mark : {true, false}) {
        rt::StepTimer timer(torch::kCUDA);
        timer.begin();
        auto b = a.matmul(a);
        timer.end(rt::StepTimer::Backward);
        timer.begin();
        if (mark)
            timer.markHostWait();
        for (int i = 0; i < 400; ++i)        // ≈ 0.2 ms each on an H100 or H200
            b = b.matmul(a).mul_(1.0 / 64);  // ‖b‖ stays put: a's rows have norm ≈ 64
        timer.end(rt::StepTimer::Optimizer);
        timer.finish();
        const bool streamIdle = at::cuda::getCurrentCUDAStream().query();
        const double optimizerBefore = timer.ms(rt::StepTimer::Optimizer);
        const bool rest = timer.hasRest();
        timer.finishRest();
        const double optimizerAfter = timer.ms(rt::StepTimer::Optimizer);
        WB_CHECK(timer.ms(rt::StepTimer::Backward) > 0.0);
        if (mark) {
            WB_CHECK_MSG(
                !streamIdle && rest && optimizerBefore == 0.0,
                "markHostWait: finish() waited for the work after the mark (stream idle " << streamIdle << ")");
            WB_CHECK_MSG(optimizerAfter > 10.0, "finishRest: optimizer phase " << optimizerAfter << " ms");
            std::cout << "step timer: finish() returned with the work after the mark still running; finishRest "
                      << "added its " << optimizerAfter << " ms" << std::endl;
        } else {
            WB_CHECK_MSG(streamIdle && !rest && optimizerBefore > 10.0 && optimizerAfter == optimizerBefore,
                         "finish() without a mark: stream idle " << streamIdle << ", optimizer " << optimizerBefore);
        }
    }
}

// train.bf16_weight_copies: the AdamW pass writes each weight's bf16 copy and the forward reads
// it — the same values autocast's casts give, so the run is the casting run's, serial and
// overlapped (whose updates also use the short-block grid).
static void testBf16WeightCopies()
{
    if (!rt::fusedAdamWAvailable() || !WB_TORCH_AT_LEAST(2, 4))
        return;
    const OverlapRun casting = runOverlap(false, false, 0, Copies::Autocast);
    const OverlapRun kept = runOverlap(false, false, 0, Copies::Kept);
    const OverlapRun keptOverlapped = runOverlap(true, true, 200, Copies::Kept);
    double worstLoss = 0.0, worstParam = 0.0;
    for (const OverlapRun* run : {&kept, &keptOverlapped}) {
        for (size_t i = 0; i < casting.losses.size(); ++i)
            worstLoss = std::max(worstLoss, std::abs(run->losses[i] - casting.losses[i]) / std::abs(casting.losses[i]));
        for (size_t i = 0; i < casting.params.size(); ++i)
            worstParam = std::max(worstParam, relErr(run->params[i], casting.params[i]));
        WB_CHECK_MSG(run->copies >= 10, "only " << run->copies << " kept copies");
        WB_CHECK_MSG(run->copiesMismatched == 0, run->copiesMismatched << " copies differ from their master's cast");
        WB_CHECK_MSG(run->copiesMadeAgain == 0, run->copiesMadeAgain << " copies were cast again, not written by AdamW");
    }
    WB_CHECK_MSG(worstLoss < 1e-5, "bf16 weight copies: loss rel err " << worstLoss << " vs the casting run");
    WB_CHECK_MSG(worstParam < 1e-5, "bf16 weight copies: weights rel err " << worstParam << " vs the casting run");
    std::cout << "bf16 weight copies: " << kept.copies << " copies, losses within " << worstLoss << ", weights within "
              << worstParam << " of the casting run (serial and overlapped, " << keptOverlapped.waits << " waits)"
              << std::endl;

    // train.bf16_gradients: the norm and the AdamW pass read the bf16 gradients the widening made
    // fp32 — the same update, serial and overlapped.
    const OverlapRun bf16Grads = runOverlap(false, false, 0, Copies::KeptBf16Grads);
    const OverlapRun bf16GradsOverlapped = runOverlap(true, true, 200, Copies::KeptBf16Grads);
    double gradLoss = 0.0, gradParam = 0.0;
    bool bitExact = true;
    for (const OverlapRun* run : {&bf16Grads, &bf16GradsOverlapped}) {
        for (size_t i = 0; i < kept.losses.size(); ++i)
            gradLoss = std::max(gradLoss, std::abs(run->losses[i] - kept.losses[i]) / std::abs(kept.losses[i]));
        for (size_t i = 0; i < kept.params.size(); ++i) {
            gradParam = std::max(gradParam, relErr(run->params[i], kept.params[i]));
            bitExact = bitExact && torch::equal(run->params[i], kept.params[i]);
        }
        WB_CHECK_MSG(run->bf16Grads >= 10,
                     "bf16 gradients: " << run->bf16Grads << " bf16 gradients for " << run->copies << " copies");
        WB_CHECK_MSG(run->copiesMismatched == 0, run->copiesMismatched << " copies differ from their master's cast");
    }
    WB_CHECK_MSG(kept.bf16Grads == 0, "the widening run left " << kept.bf16Grads << " bf16 gradients");
    WB_CHECK_MSG(gradLoss < 1e-5, "bf16 gradients: loss rel err " << gradLoss << " vs the widening run");
    WB_CHECK_MSG(gradParam < 1e-5, "bf16 gradients: weights rel err " << gradParam << " vs the widening run");
    std::cout << "bf16 gradients: " << bf16Grads.bf16Grads << " bf16 gradients, losses within " << gradLoss
              << ", weights within " << gradParam << (bitExact ? " (bit for bit)" : "")
              << " of the widening run (serial and overlapped)" << std::endl;
}

int main()
{
    if (!torch::cuda::is_available()) {
        std::cout << "no CUDA device: skipped" << std::endl;
        return 77;
    }
    testGroupedExperts();
    testVarlenDecoderAttention();
    testVarlenVision();
    testTinyModelCudaMatchesCpu();
    testFusedAdamW();
    testFusedAdamWBf16Moments();
    testAdamWResidentGrid();
    testOverlappedOptimizer();
    testBf16WeightCopies();
    testFusedKernels();
    testFusedCombine();
    testScatterRows();
    testSumOfSquares();
    testEarlyGradNorm();
    testStepTimerHostWait();
    testWidenToFloat();
    testFusedCrossEntropy();
    return test::checkExitCode("test_runtime_gpu");
}
