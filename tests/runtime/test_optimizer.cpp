// AdamW with moments stored in bf16 (train.exp_avg_dtype / exp_avg_sq_dtype; Megatron's
// precision-aware optimizer), on the CPU:
//  - one parameter over several steps against an independent reference: fp64 math, the moments
//    rounded to bf16 by choosing the nearer of the two neighbouring bf16 values (ties to even),
//    the parameter updated with the unrounded moment as the fp32 step does;
//  - the ATen step with fp32 moments equals LibTorch's AdamW::step (same formulas);
//  - 20 steps of the tiny model with bf16 moments stay near the fp32-moment losses, differ from
//    them (the setting is applied), and repeat bit for bit;
//  - the moments take half the bytes (tensor bytes counted), and the memory report says so;
//  - a checkpoint's moments in the other dtype are converted on load (bf16 → fp32 exactly,
//    fp32 → bf16 rounded), with a sentence for the warning event; the OOM advice names the knob;
//  - the overlapped optimizer (train.overlap_optimizer): its groups cover every optimized
//    parameter once, in forward order, the head with the last decoder layer, frozen parts left
//    out; stepping group by group equals the whole step bit for bit over 3 steps; as the model's
//    layer runner it runs every layer through the inner runner, and the loss is unchanged.
#include "check.h"
#include "tiny_run.h"

#include "runtime/train/checkpoint.h"
#include "runtime/train/early_grad_norm.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/memory_report.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/optimizer_overlap.h"

#include <cstring>
#include <filesystem>

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_optimizer {

using namespace wb;

namespace {

// The bf16 value nearest to x (ties to the even mantissa), from the two bf16 neighbours of x's
// fp32 value; the runtime uses c10's bit-add rounding, this takes the definition instead.
double nearestBf16(double x)
{
    const float f = static_cast<float>(x);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint32_t down = bits & 0xFFFF0000u, up = down + 0x10000u;
    float lo, hi;
    std::memcpy(&lo, &down, 4);
    std::memcpy(&hi, &up, 4);
    const double dLo = std::abs(x - static_cast<double>(lo)), dHi = std::abs(static_cast<double>(hi) - x);
    if (dLo != dHi)
        return dLo < dHi ? lo : hi;
    return (down & 0x10000u) == 0 ? lo : hi;
}

double bf16Ulp(double x)
{
    const int exponent = std::ilogb(x == 0.0 ? 1e-30 : x);
    return std::ldexp(1.0, exponent - 7);
}

core::TrainConfig trainConfig(const std::string& moments)
{
    core::TrainConfig t;
    t.lr = 1e-2;
    t.weightDecay = 0.1;
    t.adamBeta1 = 0.9;
    t.adamBeta2 = 0.95;
    t.adamEps = 1e-8;
    t.expAvgDtype = t.expAvgSqDtype = moments;
    return t;
}

void testStepAgainstReference()
{
    torch::manual_seed(3);
    const int64_t n = 4099;  // not a multiple of 4 or 8
    const core::TrainConfig t = trainConfig("bf16");
    torch::Tensor p = torch::randn({n}).requires_grad_(true);
    std::vector<double> pRef(n), mRef(n, 0.0), vRef(n, 0.0);
    for (int64_t i = 0; i < n; ++i)
        pRef[i] = p[i].item<double>();
    auto optimizer = rt::makeOptimizer({p}, {}, t);
    const rt::MomentDtypes bf16 = rt::momentDtypes(t);
    WB_CHECK(bf16.expAvg == torch::kBFloat16 && bf16.expAvgSq == torch::kBFloat16 && bf16.bytesPerValue() == 4);
    int64_t momentMismatches = 0;
    double worstP = 0.0;
    for (int step = 1; step <= 6; ++step) {
        const torch::Tensor g = torch::randn({n}) * (step == 3 ? 1e-3 : 1.0);  // one step of small gradients
        p.mutable_grad() = g.clone();
        rt::adamWStepAten(*optimizer, bf16);
        const double b1 = t.adamBeta1, b2 = t.adamBeta2;
        const double c1 = 1.0 - std::pow(b1, step), c2 = 1.0 - std::pow(b2, step);
        auto& state = rt::adamWState(*optimizer, p, bf16);
        WB_CHECK(state.step() == step);
        WB_CHECK(state.exp_avg().scalar_type() == torch::kBFloat16 && state.exp_avg_sq().scalar_type() == torch::kBFloat16);
        const torch::Tensor m = state.exp_avg().to(torch::kFloat64), v = state.exp_avg_sq().to(torch::kFloat64);
        const torch::Tensor pNow = p.detach().to(torch::kFloat64);
        const double* mGot = m.data_ptr<double>();
        const double* vGot = v.data_ptr<double>();
        const double* pGot = pNow.data_ptr<double>();
        const float* gv = g.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
            const double gi = gv[i];
            pRef[i] *= 1.0 - t.lr * t.weightDecay;
            const double mNew = b1 * mRef[i] + (1.0 - b1) * gi, vNew = b2 * vRef[i] + (1.0 - b2) * gi * gi;
            pRef[i] -= t.lr / c1 * mNew / (std::sqrt(vNew) / std::sqrt(c2) + t.adamEps);
            mRef[i] = nearestBf16(mNew);
            vRef[i] = nearestBf16(vNew);
            // fp32 math can land on the other side of a rounding midpoint than fp64: one bf16 step
            // at most, and rarely. The reference continues from its own rounded values.
            for (const auto& [got, want] : {std::pair{mGot[i], mRef[i]}, std::pair{vGot[i], vRef[i]}})
                if (got != want) {
                    ++momentMismatches;
                    WB_CHECK_MSG(std::abs(got - want) <= bf16Ulp(want) * 1.0001,
                                 "step " << step << " element " << i << ": moment " << got << " vs reference " << want);
                }
            worstP = std::max(worstP, std::abs(pGot[i] - pRef[i]));
        }
        // Keep the runtime on the reference's moments so a one-ulp flip does not compound.
        state.exp_avg().copy_(torch::tensor(mRef, torch::kFloat64));
        state.exp_avg_sq().copy_(torch::tensor(vRef, torch::kFloat64));
        p.detach().copy_(torch::tensor(pRef, torch::kFloat64));
    }
    // fp32 arithmetic on values of order 1, six steps of 1e-2: a few fp32 ulps.
    WB_CHECK_MSG(worstP < 2e-6, "largest parameter difference from the fp64 reference " << worstP);
    WB_CHECK_MSG(momentMismatches <= 6 * 2 * n / 200, momentMismatches << " of " << 12 * n << " moments off by one ulp");
    std::cout << "bf16-moment step vs fp64 reference: parameters within " << worstP << ", " << momentMismatches
              << " of " << 12 * n << " moments one bf16 ulp apart (fp32 vs fp64 at a midpoint)" << std::endl;
}

void testFp32AtenStepEqualsAdamW()
{
    torch::manual_seed(5);
    const core::TrainConfig t = trainConfig("fp32");
    torch::Tensor a = torch::randn({64, 33}).requires_grad_(true), b = a.detach().clone().requires_grad_(true);
    torch::Tensor biasA = torch::randn({33}).requires_grad_(true), biasB = biasA.detach().clone().requires_grad_(true);
    auto reference = rt::makeOptimizer({a}, {biasA}, t);
    auto aten = rt::makeOptimizer({b}, {biasB}, t);
    for (int step = 0; step < 4; ++step) {
        const torch::Tensor g = torch::randn({64, 33}), gb = torch::randn({33});
        a.mutable_grad() = g.clone();
        b.mutable_grad() = g.clone();
        biasA.mutable_grad() = gb.clone();
        biasB.mutable_grad() = gb.clone();
        reference->step();
        rt::adamWStepAten(*aten, rt::MomentDtypes{});
    }
    const double diff = (a - b).abs().max().item<double>() + (biasA - biasB).abs().max().item<double>();
    WB_CHECK_MSG(diff <= 1e-7, "ATen step with fp32 moments vs AdamW::step: " << diff);
    WB_CHECK(rt::adamWState(*aten, b, {}).exp_avg().scalar_type() == torch::kFloat32);
}

void testTinyModel()
{
    core::RunConfig c = test::sampleMockConfig();
    WB_CHECK(c.train.precision == "fp32");  // fp32 compute with bf16 moments: allowed, as in Megatron
    const auto batches = test::mockBatches(c, 20);
    const test::TinyRunResult fp32 = test::trainTiny(c, {}, batches);
    c.train.expAvgDtype = c.train.expAvgSqDtype = "bf16";
    const test::TinyRunResult bf16 = test::trainTiny(c, {}, batches);
    const test::TinyRunResult again = test::trainTiny(c, {}, batches);
    // Stated tolerance (observed values in docs/runtime.md): each loss within 0.02 absolute of the
    // fp32-moment loss (0.3 % of the first loss; the rounding differences grow from 1e-6 at step 3
    // to ~1e-2 as the tiny model memorizes), and the mean of the last 5 within 2 % relative.
    double worst = 0.0, tailFp32 = 0.0, tailBf16 = 0.0;
    bool anyDifferent = false;
    for (size_t i = 0; i < batches.size(); ++i) {
        const double diff = std::abs(bf16.losses[i] - fp32.losses[i]);
        worst = std::max(worst, diff);
        anyDifferent = anyDifferent || bf16.losses[i] != fp32.losses[i];
        WB_CHECK_MSG(diff <= 0.02, "step " << i + 1 << ": loss " << bf16.losses[i] << " with bf16 moments, "
                                           << fp32.losses[i] << " with fp32");
        WB_CHECK_MSG(again.losses[i] == bf16.losses[i], "step " << i + 1 << " not deterministic: " << again.losses[i]
                                                                 << " vs " << bf16.losses[i]);
        if (i + 5 >= batches.size()) {
            tailFp32 += fp32.losses[i] / 5;
            tailBf16 += bf16.losses[i] / 5;
        }
    }
    const double tail = std::abs(tailBf16 - tailFp32) / tailFp32;
    WB_CHECK_MSG(tail < 0.02, "mean of the last 5 losses: " << tailBf16 << " (bf16 moments) vs " << tailFp32);
    WB_CHECK_MSG(anyDifferent, "bf16 moments gave the fp32 losses bit for bit: the setting was not applied");
    // The moments take half the bytes.
    WB_CHECK_MSG(bf16.momentBytes * 2 == fp32.momentBytes, bf16.momentBytes << " vs " << fp32.momentBytes);
    std::cout << "tiny model, 20 steps: bf16-moment losses within " << worst << " of fp32 moments (last-5 mean "
              << tailBf16 << " vs " << tailFp32 << ", " << tail << " relative); moments "
              << bf16.momentBytes << " bytes vs " << fp32.momentBytes << std::endl;
}

// One step of the tiny model with `moments`; the model and optimizer are returned for inspection.
struct Stepped {
    rt::VlmModel model{nullptr};
    std::unique_ptr<torch::optim::AdamW> optimizer;
};
Stepped stepOnce(core::RunConfig c, const std::string& expAvg, const std::string& expAvgSq, int seed)
{
    c.train.expAvgDtype = expAvg;
    c.train.expAvgSqDtype = expAvgSq;
    torch::manual_seed(seed);
    Stepped s;
    s.model = rt::VlmModel(c.model);
    s.optimizer = rt::makeOptimizer(*s.model, c.train);
    const auto batches = test::mockBatches(c, 1);
    rt::VlmBatch tensors = rt::toTensors(batches[0], torch::kCPU, torch::kFloat32);
    rt::DecoderOutput out = s.model->forward(tensors);
    (out.lmLoss + out.auxLoss).backward();
    rt::adamWStepAten(*s.optimizer, rt::momentDtypes(c.train));
    s.optimizer->zero_grad();
    return s;
}

void testMemoryAccounting()
{
    const core::RunConfig c = test::sampleMockConfig();
    Stepped fp32 = stepOnce(c, "fp32", "fp32", 1), bf16 = stepOnce(c, "bf16", "bf16", 1), mixed = stepOnce(c, "bf16", "fp32", 1);
    const auto measure = [](Stepped& s, int64_t bytesPerValue) {
        return rt::measureConsumers(*s.model, s.optimizer.get(), torch::kCPU, bytesPerValue);
    };
    const rt::MemoryConsumers a = measure(fp32, 8), b = measure(bf16, 4), m = measure(mixed, 6);
    WB_CHECK(a.optimizerState > 0 && b.optimizerState * 2 == a.optimizerState && m.optimizerState * 4 == a.optimizerState * 3);
    WB_CHECK(a.optimizerProjected == a.optimizerState && b.optimizerProjected == b.optimizerState);
    // Before the first step the report projects the moments at their configured size.
    rt::VlmModel fresh(c.model);
    const rt::MemoryConsumers before = rt::measureConsumers(*fresh, nullptr, torch::kCPU, 4);
    WB_CHECK_MSG(before.optimizerProjected == before.trainable, before.optimizerProjected << " vs " << before.trainable);
    // The checkpoint's free-space estimate counts the moments in their dtype.
    std::vector<torch::Tensor> none;
    WB_CHECK(rt::checkpointBytes(none, *bf16.optimizer) * 2 == rt::checkpointBytes(none, *fp32.optimizer));

    // The OOM advice offers bf16 moments while they are fp32, ranked by the bytes it frees.
    core::RunConfig config = c;
    const std::string advice = rt::outOfMemoryMessage(a, config, "cpu", "test");
    WB_CHECK_MSG(advice.find("bf16 Adam moments (train.exp_avg_dtype") != std::string::npos, advice);
    config.train.expAvgDtype = config.train.expAvgSqDtype = "bf16";
    WB_CHECK(rt::outOfMemoryMessage(b, config, "cpu", "test").find("bf16 Adam moments") == std::string::npos);
}

void testCheckpointConversion()
{
    const std::filesystem::path dir = test::makeTempDir("wb-runtime-optimizer");
    const core::RunConfig c = test::sampleMockConfig();
    Stepped saved = stepOnce(c, "bf16", "bf16", 2);
    rt::CheckpointState state;
    state.step = 1;
    WB_CHECK(rt::saveCheckpoint(dir.string(), *saved.model, *saved.optimizer, state).ok());

    // bf16 checkpoint → fp32 run: loaded as bf16, converted exactly.
    Stepped target = stepOnce(c, "fp32", "fp32", 9);
    WB_CHECK(rt::loadCheckpoint(dir.string(), *target.model, *target.optimizer).ok());
    std::vector<torch::Tensor> savedMoments, loaded;
    for (const auto& p : saved.model->parameters())
        savedMoments.push_back(rt::adamWState(*saved.optimizer, p, {}).exp_avg());
    const std::string message = rt::convertMoments(*target.optimizer, rt::MomentDtypes{});
    WB_CHECK_MSG(message.find("exp_avg bf16 → fp32") != std::string::npos &&
                     message.find("exp_avg_sq bf16 → fp32") != std::string::npos,
                 message);
    size_t i = 0;
    for (const auto& p : target.model->parameters()) {
        const auto& s = rt::adamWState(*target.optimizer, p, {});
        WB_CHECK(s.exp_avg().scalar_type() == torch::kFloat32 && s.exp_avg_sq().scalar_type() == torch::kFloat32);
        WB_CHECK_MSG(torch::equal(s.exp_avg(), savedMoments[i].to(torch::kFloat32)), "moment " << i << " not exact");
        ++i;
    }
    WB_CHECK(rt::convertMoments(*target.optimizer, rt::MomentDtypes{}).empty());  // nothing left to convert

    // fp32 → bf16: rounded to nearest even, once.
    std::vector<torch::Tensor> fp32Moments;
    for (const auto& p : target.model->parameters())
        fp32Moments.push_back(rt::adamWState(*target.optimizer, p, {}).exp_avg_sq().clone());
    const rt::MomentDtypes bf16{torch::kBFloat16, torch::kBFloat16};
    WB_CHECK(rt::convertMoments(*target.optimizer, bf16).find("fp32 → bf16") != std::string::npos);
    i = 0;
    for (const auto& p : target.model->parameters())
        WB_CHECK(torch::equal(rt::adamWState(*target.optimizer, p, bf16).exp_avg_sq(), fp32Moments[i++].to(torch::kBFloat16)));
    std::filesystem::remove_all(dir);
}

// Counts the layers run through it (the inner runner the overlap must pass every layer to).
class CountingRunner : public rt::LayerRunner {
public:
    std::vector<torch::Tensor> run(const rt::LayerKey& key, const rt::LayerFn& fn,
                                   const std::vector<torch::Tensor>& inputs) override
    {
        ++(std::string(key.stack) == "vision" ? vision : decoder);
        return fn(inputs);
    }
    int vision = 0, decoder = 0;
};

void testOverlapGroups()
{
    core::RunConfig c = test::sampleMockConfig();
    torch::manual_seed(3);
    rt::VlmModel model(c.model);
    const std::vector<torch::Tensor> all = model->parameters();
    const auto groups = rt::forwardOrderGroups(*model, all);
    std::vector<std::string> names;
    for (const auto& g : groups)
        names.push_back(g.name);
    std::vector<std::string> expected{"vision.input"};
    for (int i = 0; i < c.model.vision.numLayers; ++i)
        expected.push_back("vision.blocks." + std::to_string(i));
    expected.push_back("projectors");
    expected.push_back("decoder.input");
    for (int i = 0; i < c.model.decoder.numLayers; ++i)
        expected.push_back("decoder.layers." + std::to_string(i));
    WB_CHECK_MSG(names == expected, "groups: " << names.size() << " (" << names.front() << " … " << names.back() << ")");
    // Every parameter exactly once; the output layer is in the last group.
    std::map<const c10::TensorImpl*, int> seen;
    for (const auto& g : groups)
        for (const auto& p : g.params)
            ++seen[p.unsafeGetTensorImpl()];
    WB_CHECK_MSG(seen.size() == all.size(), seen.size() << " of " << all.size() << " parameters grouped");
    for (const auto& [impl, count] : seen)
        WB_CHECK(count == 1);
    const torch::Tensor output = model->named_parameters()["decoder.output.weight"];
    WB_CHECK(groups.back().subset.count(output.unsafeGetTensorImpl()) == 1);

    // Frozen vision: no vision group, and a parameter the names do not place (a stand-in for a
    // future module) lands in the first group rather than nowhere.
    rt::VlmModel frozen(c.model);
    c.model.freezeVisionModel = true;
    std::vector<torch::Tensor> trainable;
    for (const auto& item : frozen->named_parameters())
        if (item.key().rfind("vision.", 0) != 0)
            trainable.push_back(item.value());
    const torch::Tensor stray = torch::zeros({3}, torch::requires_grad());
    trainable.push_back(stray);
    const auto partial = rt::forwardOrderGroups(*frozen, trainable);
    WB_CHECK_MSG(partial.front().name == "projectors", partial.front().name);
    WB_CHECK(partial.front().subset.count(stray.unsafeGetTensorImpl()) == 1);
    size_t grouped = 0;
    for (const auto& g : partial)
        grouped += g.params.size();
    WB_CHECK(grouped == trainable.size());
}

void testOverlapStepEqualsSerial()
{
    core::RunConfig c = test::sampleMockConfig();
    const auto batches = test::mockBatches(c, 3);
    torch::manual_seed(9);
    rt::VlmModel serial(c.model);
    torch::manual_seed(9);
    rt::VlmModel grouped(c.model);
    auto serialOptimizer = rt::makeOptimizer(*serial, c.train);
    auto groupedOptimizer = rt::makeOptimizer(*grouped, c.train);
    CountingRunner inner;
    rt::OptimizerOverlap overlap(rt::forwardOrderGroups(*grouped, grouped->parameters()), &inner);
    grouped->setLayerRunner(&overlap);
    grouped->setParameterFence(&overlap);
    const rt::MomentDtypes dtypes = rt::momentDtypes(c.train);
    int afterUpdates = 0;
    for (size_t step = 0; step < batches.size(); ++step) {
        rt::VlmBatch a = rt::toTensors(batches[step], torch::kCPU, torch::kFloat32);
        rt::VlmBatch b = rt::toTensors(batches[step], torch::kCPU, torch::kFloat32);
        rt::DecoderOutput outA = serial->forward(a), outB = grouped->forward(b);
        const torch::Tensor lossA = outA.lmLoss + outA.auxLoss, lossB = outB.lmLoss + outB.auxLoss;
        WB_CHECK_MSG(torch::equal(lossA, lossB), "step " << step + 1 << ": loss " << lossA.item<double>() << " vs "
                                                            << lossB.item<double>() << " with the overlap's runner");
        lossA.backward();
        lossB.backward();
        // A clip divisor > 1 on one step (the clipped path), 1 on the others.
        const torch::Tensor divisor = torch::full({}, step == 1 ? 3.0 : 1.0);
        for (auto& p : serial->parameters())
            if (p.grad().defined())
                p.mutable_grad().div_(divisor);
        rt::adamWStepAten(*serialOptimizer, dtypes);
        serialOptimizer->zero_grad();
        overlap.step(*groupedOptimizer, dtypes, divisor, [&] { ++afterUpdates; });
        for (const auto& p : grouped->parameters())
            WB_CHECK_MSG(!p.grad().defined(), "a gradient survived the grouped step");
    }
    WB_CHECK(afterUpdates == 3);
    const auto pa = serial->named_parameters(), pb = grouped->named_parameters();
    for (const auto& item : pa)
        WB_CHECK_MSG(torch::equal(item.value(), pb[item.key()]), item.key() << " differs after 3 grouped steps");
    WB_CHECK_MSG(inner.vision == 3 * c.model.vision.numLayers && inner.decoder == 3 * c.model.decoder.numLayers,
                 "inner runner saw " << inner.vision << " vision and " << inner.decoder << " decoder layers");
    WB_CHECK(overlap.waits() == 0);  // CPU: nothing is pending, nothing to wait for
}

// WB_EARLY_GRAD_NORM (early_grad_norm.h): what the layers counted during the last micro-batch's
// backward plus the rest at the step is the norm of every gradient, with recompute inside it too;
// the first micro-batch (not armed) counts nothing; a gradient changed after its layer counted it
// makes the step read them all again; a run that was never armed reads them all.
void testEarlyGradNorm()
{
    core::RunConfig c = test::sampleMockConfig();
    const auto batches = test::mockBatches(c, 2);
    torch::manual_seed(9);
    rt::VlmModel model(c.model);
    // The gradients a layer's hook can count: those of the vision blocks and decoder layers.
    int64_t layerGrads = 0;
    auto gradients = [&] {
        std::vector<torch::Tensor> grads;
        layerGrads = 0;
        for (const auto& item : model->named_parameters())
            if (item.value().grad().defined()) {
                grads.push_back(item.value().grad());
                const std::string& name = item.key();
                layerGrads += name.rfind("vision.blocks.", 0) == 0 || name.rfind("decoder.layers.", 0) == 0;
            }
        return grads;
    };
    auto backward = [&](rt::EarlyGradNorm& early, bool armLast) {
        model->zero_grad();
        for (size_t m = 0; m < batches.size(); ++m) {
            if (armLast && m + 1 == batches.size())
                early.arm();
            rt::VlmBatch t = rt::toTensors(batches[m], torch::kCPU, torch::kFloat32);
            rt::DecoderOutput out = model->forward(t);
            ((out.lmLoss + out.auxLoss) / 2.0).backward();
        }
    };
    for (const bool recompute : {false, true}) {
        core::RecomputeConfig r;
        if (recompute)
            r.granularity = "full", r.method = "uniform", r.recomputeNumLayers = 1;
        auto inner = rt::makeRecomputeRunner(r);
        rt::EarlyGradNorm early(torch::kCPU, inner.get());
        model->setLayerRunner(&early);
        backward(early, true);
        const auto grads = gradients();
        const double want = rt::globalGradNorm(grads).item<double>();
        const double got = early.norm(grads).item<double>();
        WB_CHECK_MSG(std::abs(got - want) <= 1e-5 * want,
                     "recompute " << recompute << ": early norm " << got << " vs " << want);
        WB_CHECK_MSG(early.countedEarly() == layerGrads && layerGrads > 0 && layerGrads < early.countedTotal(),
                     "recompute " << recompute << ": " << early.countedEarly() << " of " << early.countedTotal()
                                  << " gradients counted early, the layers hold " << layerGrads);
        model->setLayerRunner(nullptr);
    }
    rt::EarlyGradNorm early(torch::kCPU, nullptr);
    model->setLayerRunner(&early);
    // A layer's gradient changed after its hook counted it (as a reduction would): all read again.
    backward(early, true);
    auto grads = gradients();
    for (const auto& item : model->named_parameters())
        if (item.key().rfind("decoder.layers.0.", 0) == 0 && item.value().grad().defined()) {
            item.value().grad().mul_(3.0);
            break;
        }
    double want = rt::globalGradNorm(grads).item<double>();
    double got = early.norm(grads).item<double>();
    WB_CHECK_MSG(std::abs(got - want) <= 1e-5 * want && early.countedEarly() == 0,
                 "a gradient changed after its layer: " << got << " vs " << want << ", " << early.countedEarly()
                                                        << " counted early");
    // Never armed: nothing counted early.
    backward(early, false);
    grads = gradients();
    want = rt::globalGradNorm(grads).item<double>();
    got = early.norm(grads).item<double>();
    WB_CHECK_MSG(std::abs(got - want) <= 1e-5 * want && early.countedEarly() == 0,
                 "not armed: " << got << " vs " << want);
    model->setLayerRunner(nullptr);
}

}  // namespace

int run(int, char**)
{
    torch::set_num_threads(1);
    testStepAgainstReference();
    testFp32AtenStepEqualsAdamW();
    testMemoryAccounting();
    testCheckpointConversion();
    testOverlapGroups();
    testOverlapStepEqualsSerial();
    testEarlyGradNorm();
    testTinyModel();
    return test::checkExitCode("test_runtime_optimizer");
}

}  // namespace wb::test::suite_optimizer
