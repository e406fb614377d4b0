// Training state that must be exactly right:
//  - frozen vision (model.freeze_vision_model + freeze_vision_projection): after training steps
//    the encoder's and projectors' weights are bit-identical, the optimizer holds no state for
//    them (and does for the decoder), they get no gradients, the vision forward builds no graph;
//  - a checkpoint round trip restores parameters, optimizer state, step, loader position, seed
//    and the RNG: random numbers drawn after the load equal those drawn after the save;
//  - per-rank checkpoint files of sharded layouts: an FSDP-like rank (optimizer over a shard,
//    trainable model parameters not saved, frozen ones saved) round-trips; layout.json commits the
//    step and removes other steps' files; a shape or step mismatch and an unreadable or missing
//    layout.json are errors that say so;
//  - the Checkpointer without a Trainer: which files a dense and a sharded layout write, the state
//    and events a resume restores, a save repeated at one step, and the refusals of another
//    layout's checkpoint (exit 2) both ways;
//  - the out-of-memory report's parsing and knob ranking (memory_report.h).
#include "check.h"
#include "tiny_run.h"

#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpointer.h"
#include "runtime/train/run_reporting.h"

#include <filesystem>
#include <fstream>

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_state {

using namespace wb;

namespace {

bool isVision(const std::string& name)
{
    return name.rfind("vision.", 0) == 0 || name.rfind("projector.", 0) == 0 || name.rfind("deepstack_projectors.", 0) == 0;
}

void testFrozenVision()
{
    core::RunConfig c = test::sampleMockConfig();
    c.model.freezeVisionModel = true;
    c.model.freezeVisionProjection = true;
    const auto batches = test::mockBatches(c, 3);
    torch::set_num_threads(1);
    torch::manual_seed(c.train.seed);
    rt::VlmModel model(c.model);
    model->applyFreezing();
    auto optimizer = rt::makeOptimizer(*model, c.train);
    std::map<std::string, torch::Tensor> initial;
    for (const auto& p : model->named_parameters())
        initial[p.key()] = p.value().detach().clone();

    for (const auto& batch : batches) {
        rt::VlmBatch tensors = rt::toTensors(batch, torch::kCPU, torch::kFloat32);
        WB_CHECK(tensors.hasImages());
        rt::VisionOutput vision = model->encodeImages(tensors);
        // No graph: the output has no grad_fn and needs no gradient (deepstack features too).
        WB_CHECK(!vision.hidden_PD.grad_fn() && !vision.hidden_PD.requires_grad());
        for (const auto& d : vision.deepstack_PD)
            WB_CHECK(!d.grad_fn());
        model->project(vision, tensors);
        WB_CHECK(!tensors.decoder.imageEmbeds_ID.grad_fn());
        rt::DecoderOutput out = model->decode(tensors);
        (out.lmLoss + out.auxLoss).backward();
        optimizer->step();
        optimizer->zero_grad();
    }

    // Which parameters the optimizer holds state for, by tensor identity.
    std::set<const void*> withState;
    for (const auto& group : optimizer->param_groups())
        for (const auto& p : group.params())
            if (optimizer->state().count(c10::guts::to_string(p.unsafeGetTensorImpl())))
                withState.insert(p.unsafeGetTensorImpl());
    int visionParams = 0, decoderChanged = 0, decoderParams = 0;
    for (const auto& p : model->named_parameters()) {
        const bool hasState = withState.count(p.value().unsafeGetTensorImpl()) > 0;
        if (isVision(p.key())) {
            ++visionParams;
            WB_CHECK_MSG(torch::equal(p.value(), initial[p.key()]), p.key() << " changed");
            WB_CHECK_MSG(!hasState, p.key() << " has optimizer state");
            WB_CHECK_MSG(!p.value().requires_grad() && !p.value().grad().defined(), p.key() << " has a gradient");
        } else {
            ++decoderParams;
            WB_CHECK_MSG(hasState, p.key() << " has no optimizer state");
            decoderChanged += torch::equal(p.value(), initial[p.key()]) ? 0 : 1;
        }
    }
    WB_CHECK(visionParams > 0 && decoderParams > 0);
    WB_CHECK_MSG(decoderChanged == decoderParams, decoderChanged << " of " << decoderParams << " decoder tensors changed");
    // The memory report counts no vision state to free.
    const auto consumers = rt::measureConsumers(*model, optimizer.get(), torch::kCPU);
    WB_CHECK(consumers.visionTrainable == 0 && consumers.optimizerState == 2 * consumers.trainable);

    // The unfrozen model does build a graph through the encoder (the check above can fail).
    core::RunConfig open = c;
    open.model.freezeVisionModel = false;
    open.model.freezeVisionProjection = false;
    rt::VlmModel trainable(open.model);
    rt::VlmBatch tensors = rt::toTensors(batches[0], torch::kCPU, torch::kFloat32);
    WB_CHECK(trainable->encodeImages(tensors).hidden_PD.grad_fn() != nullptr);
}

void testCheckpointRoundTrip()
{
    const std::filesystem::path dir = test::makeTempDir("wb-runtime-state");
    core::RunConfig c = test::sampleMockConfig();
    const auto batches = test::mockBatches(c, 1);
    torch::manual_seed(7);
    rt::VlmModel model(c.model);
    auto optimizer = rt::makeOptimizer(*model, c.train);
    rt::VlmBatch tensors = rt::toTensors(batches[0], torch::kCPU, torch::kFloat32);
    rt::DecoderOutput out = model->forward(tensors);
    (out.lmLoss + out.auxLoss).backward();
    optimizer->step();
    optimizer->zero_grad();

    rt::CheckpointState saved;
    saved.step = 42;
    saved.nextSampleSeq = 1234;
    saved.dataSeed = 99;
    rt::captureRngState(saved, torch::kCPU);
    WB_CHECK(rt::saveCheckpoint(dir.string(), *model, *optimizer, saved).ok());
    const auto drawnAfterSave = torch::rand({16});
    // The free-space check's estimate is the file's size within a few percent.
    std::vector<torch::Tensor> written;
    for (const auto& p : model->named_parameters())
        written.push_back(p.value());
    for (const auto& b : model->named_buffers())
        written.push_back(b.value());
    const double estimate = static_cast<double>(rt::checkpointBytes(written, *optimizer));
    const double actual = static_cast<double>(std::filesystem::file_size(rt::checkpointPath(dir.string())));
    WB_CHECK_MSG(std::abs(estimate - actual) < 0.05 * actual, "estimate " << estimate << " vs file " << actual);
    WB_CHECK(rt::checkCheckpointSpace(dir.string(), 1, 1).ok());
    const auto full = rt::checkCheckpointSpace(dir.string(), uint64_t{1} << 62, 2);
    WB_CHECK(!full.ok() && full.error().toString().find("not enough disk space") != std::string::npos &&
             full.error().toString().find("2 rank files") != std::string::npos);

    // A different model and generator state, then load: everything comes back.
    torch::manual_seed(8);
    rt::VlmModel other(c.model);
    auto otherOptimizer = rt::makeOptimizer(*other, c.train);
    auto loaded = rt::loadCheckpoint(dir.string(), *other, *otherOptimizer);
    WB_CHECK(loaded.ok());
    if (!loaded.ok())
        return;
    WB_CHECK(loaded->step == 42 && loaded->nextSampleSeq == 1234 && loaded->dataSeed == 99);
    rt::restoreRngState(*loaded, torch::kCPU);
    WB_CHECK(torch::equal(torch::rand({16}), drawnAfterSave));
    auto a = model->named_parameters(), b = other->named_parameters();
    bool same = a.size() == b.size();
    for (const auto& p : a)
        same = same && torch::equal(p.value(), b[p.key()]);
    WB_CHECK(same);
    // Optimizer state: one identical step from both gives identical weights.
    for (auto* m : {&model, &other}) {
        rt::VlmBatch t = rt::toTensors(batches[0], torch::kCPU, torch::kFloat32);
        rt::DecoderOutput o = (*m)->forward(t);
        (o.lmLoss + o.auxLoss).backward();
    }
    optimizer->step();
    otherOptimizer->step();
    a = model->named_parameters();
    b = other->named_parameters();
    for (const auto& p : a)
        WB_CHECK_MSG(torch::equal(p.value(), b[p.key()]), p.key());
    std::filesystem::remove_all(dir);
}

// One rank of a sharded layout, FSDP-like: the optimizer updates a flat shard; the module has a
// trainable layer (re-derived from shards, so not saved) and a frozen one (saved).
struct FakeRank {
    torch::nn::Sequential model{torch::nn::Linear(4, 3), torch::nn::Linear(3, 2)};
    torch::Tensor shard;
    std::unique_ptr<torch::optim::AdamW> optimizer;

    explicit FakeRank(int64_t shardSize)
    {
        for (auto& p : model[1]->parameters())
            p.set_requires_grad(false);
        shard = torch::randn({shardSize}).requires_grad_(true);
        optimizer = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{shard}, torch::optim::AdamWOptions(1e-2));
    }
    void step()
    {
        shard.mutable_grad() = torch::randn_like(shard);
        optimizer->step();
    }
    rt::RankTensors tensors() { return {model.ptr().get(), {shard}, /*trainableHeld=*/false}; }
};

void testRankCheckpoints()
{
    namespace fs = std::filesystem;
    const fs::path dir = test::makeTempDir("wb-runtime-rank-ckpt");
    const std::string run = dir.string();
    torch::manual_seed(3);
    FakeRank r0(6), r1(6);
    r0.step();
    r1.step();
    rt::CheckpointState state;
    state.step = 5;
    state.nextSampleSeq = 40;
    state.dataSeed = 1234;
    rt::captureRngState(state, torch::kCPU);
    fs::create_directories(dir / "ckpt" / "step2");  // an older checkpoint's files
    auto f0 = rt::saveRankCheckpoint(run, 0, 2, r0.tensors(), *r0.optimizer, state);
    auto f1 = rt::saveRankCheckpoint(run, 1, 2, r1.tensors(), *r1.optimizer, state);
    WB_CHECK(f0.ok() && f1.ok() && *f0 == "step5/rank0.pt" && *f1 == "step5/rank1.pt");
    WB_CHECK_MSG(rt::readCheckpointLayout(run).error().code == core::ErrorCode::NotFound, "no layout.json yet: not complete");
    rt::CheckpointLayout layout{2, "tp1 pp1 cp1 ep1 etp1 dp2 fsdp:optim", 5, {"step5/rank0.pt", "step5/rank1.pt"}};
    WB_CHECK(rt::commitCheckpointLayout(run, layout).ok());
    WB_CHECK_MSG(!fs::exists(dir / "ckpt" / "step2") && fs::exists(dir / "ckpt" / "step5" / "rank1.pt"),
                 "the committed step's files stay, other steps' are removed");
    auto read = rt::readCheckpointLayout(run);
    WB_CHECK(read.ok() && read->worldSize == 2 && read->step == 5 && read->layout == layout.layout && read->files == layout.files);

    // Rank 1 into fresh tensors: the shard, its AdamW state, the frozen layer and the state come
    // back; the trainable layer is left alone (FSDP gathers it from the shards).
    torch::manual_seed(4);
    FakeRank fresh(6);
    const torch::Tensor trainableBefore = fresh.model[0]->parameters()[0].detach().clone();
    auto loaded = rt::loadRankCheckpoint(run, *read, 1, fresh.tensors(), *fresh.optimizer);
    WB_CHECK_MSG(loaded.ok(), (loaded ? "" : loaded.error().toString()));
    if (loaded.ok())
        WB_CHECK(loaded->step == 5 && loaded->nextSampleSeq == 40 && loaded->dataSeed == 1234 && loaded->rngCpu.defined());
    WB_CHECK(torch::equal(fresh.shard, r1.shard));
    WB_CHECK(torch::equal(fresh.model[1]->parameters()[0], r1.model[1]->parameters()[0]));
    WB_CHECK(torch::equal(fresh.model[0]->parameters()[0], trainableBefore));
    torch::manual_seed(5);
    r1.step();
    torch::manual_seed(5);
    fresh.step();
    WB_CHECK_MSG(torch::equal(fresh.shard, r1.shard), "the AdamW state came back: the next step is the same");

    // Errors that say what is wrong.
    FakeRank wrongShape(5);
    auto bad = rt::loadRankCheckpoint(run, *read, 0, wrongShape.tensors(), *wrongShape.optimizer);
    WB_CHECK_MSG(!bad.ok() && bad.error().code == core::ErrorCode::Corrupt &&
                     bad.error().message.find("optimized tensor 0 has shape [6] in the checkpoint but [5]") != std::string::npos,
                 (bad ? "loaded" : bad.error().message));
    rt::CheckpointLayout otherStep = *read;
    otherStep.step = 4;
    auto stale = rt::loadRankCheckpoint(run, otherStep, 0, fresh.tensors(), *fresh.optimizer);
    WB_CHECK_MSG(!stale.ok() && stale.error().message.find("layout.json expects rank 0 at step 4") != std::string::npos,
                 (stale ? "loaded" : stale.error().message));
    std::ofstream(dir / "ckpt" / "layout.json") << "{\"format\": 1, \"world_size\": 2";
    auto torn = rt::readCheckpointLayout(run);
    WB_CHECK_MSG(!torn.ok() && torn.error().code == core::ErrorCode::Corrupt, "a torn layout.json is an error");
    fs::remove_all(dir);
}

// One rank's model and optimizer, every parameter trained (what an unsharded layout holds).
struct SmallRank {
    torch::nn::Sequential model{torch::nn::Linear(4, 3)};
    std::unique_ptr<torch::optim::AdamW> optimizer =
        std::make_unique<torch::optim::AdamW>(model->parameters(), torch::optim::AdamWOptions(1e-2));

    void step()
    {
        for (auto& p : model->parameters())
            p.mutable_grad() = torch::randn_like(p);
        optimizer->step();
    }
};

// A Checkpointer over a SmallRank on one rank, recording its events as "level step: message".
struct CheckpointerUnderTest {
    std::unique_ptr<rt::ProcessGroup> group = rt::makeSingleProcessGroup();
    std::vector<std::string> events;
    int shardedLoads = 0;
    std::unique_ptr<rt::Checkpointer> checkpointer;

    CheckpointerUnderTest(const std::string& runDir, SmallRank& rank, bool sharded, const std::string& layout = "tp1 pp2",
                          uint64_t seed = 1234)
    {
        rt::Checkpointer::Run run;
        run.runDir = runDir;
        run.layout = layout;
        run.sharded = sharded;
        run.seed = seed;
        rt::Checkpointer::Parts parts;
        parts.tensors = {rank.model.ptr().get(), rank.model->parameters(), true};
        parts.optimizer = rank.optimizer.get();
        parts.group = group.get();
        parts.afterShardedLoad = [this] { ++shardedLoads; };
        parts.event = [this](const std::string& level, const std::string& message, int64_t step) {
            events.push_back(level + " " + std::to_string(step) + ": " + message);
        };
        checkpointer = std::make_unique<rt::Checkpointer>(std::move(run), std::move(parts));
    }
    // The RunFailure a load throws ({-1, ""} when it throws none).
    rt::RunFailure loadFailure()
    {
        int64_t step = 0, seq = 0;
        try {
            checkpointer->load(step, seq);
        } catch (const rt::RunFailure& failure) {
            return failure;
        }
        return {-1, ""};
    }
};

bool sameParameters(SmallRank& a, SmallRank& b)
{
    auto pa = a.model->parameters(), pb = b.model->parameters();
    bool same = pa.size() == pb.size();
    for (size_t i = 0; same && i < pa.size(); ++i)
        same = torch::equal(pa[i], pb[i]);
    return same;
}

// The trainer calls save(step, seq, why) and load(step, seq) and knows nothing of the files: this
// checks what it used to spell out itself, without a Trainer.
void testCheckpointer()
{
    namespace fs = std::filesystem;
    const fs::path dir = test::makeTempDir("wb-runtime-checkpointer");
    const std::string dense = (dir / "dense").string(), sharded = (dir / "sharded").string();
    fs::create_directories(dense);  // the trainer makes the run directory first
    fs::create_directories(sharded);
    torch::manual_seed(11);
    SmallRank trained;
    trained.step();

    // Nothing to resume from: a warning, and the position stays where it was.
    {
        SmallRank fresh;
        CheckpointerUnderTest t(dense, fresh, false);
        int64_t step = 0, seq = 0;
        t.checkpointer->load(step, seq);
        WB_CHECK(step == 0 && seq == 0 && t.events.size() == 1);
        WB_CHECK_MSG(!t.events.empty() && t.events[0].rfind("warning -1: --resume: ", 0) == 0 &&
                         t.events[0].find("; starting at step 0") != std::string::npos,
                     (t.events.empty() ? "no event" : t.events[0]));
    }

    // Dense (one rank, plain DP): rank 0 writes ckpt/latest.pt; a resume brings back the weights,
    // the optimizer state, the step and the loader position.
    {
        CheckpointerUnderTest t(dense, trained, false);
        t.checkpointer->save(3, 24, "interval");
        WB_CHECK(fs::exists(rt::checkpointPath(dense)) && !fs::exists(rt::checkpointLayoutPath(dense)));
        WB_CHECK_MSG(t.events == std::vector<std::string>{"info 3: checkpoint saved (interval): " + rt::checkpointPath(dense)},
                     (t.events.empty() ? "no event" : t.events[0]));
        SmallRank fresh;
        CheckpointerUnderTest u(dense, fresh, false, "tp1 pp2", 99);
        int64_t step = 0, seq = 0;
        u.checkpointer->load(step, seq);
        WB_CHECK(step == 3 && seq == 24 && sameParameters(fresh, trained) && u.shardedLoads == 0);
        WB_CHECK_MSG(u.events.size() == 2 && u.events[0] == "info 3: resumed from " + rt::checkpointPath(dense) + " at step 3" &&
                         u.events[1].rfind("warning 3: train.seed changed from 1234 to 99", 0) == 0,
                     (u.events.empty() ? "no event" : u.events.back()));
        torch::manual_seed(12);
        trained.step();
        torch::manual_seed(12);
        fresh.step();
        WB_CHECK_MSG(sameParameters(fresh, trained), "the AdamW state came back: the next step is the same");
        // A sharded layout cannot read it.
        SmallRank other;
        const rt::RunFailure refused = CheckpointerUnderTest(dense, other, true).loadFailure();
        WB_CHECK_MSG(refused.exitCode == 2 && refused.message.find("was written by an unsharded layout") != std::string::npos,
                     refused.exitCode << " " << refused.message);
    }

    // Sharded (FSDP, EP, TP, PP): this rank's file under ckpt/step<S>/, committed by layout.json;
    // a second save at the same step (an interval save right before a stop) writes nothing.
    {
        CheckpointerUnderTest t(sharded, trained, true);
        t.checkpointer->save(5, 40, "interval");
        t.checkpointer->save(5, 40, "signal");
        WB_CHECK(fs::exists(fs::path(sharded) / "ckpt" / rt::rankCheckpointFile(5, 0)) && !fs::exists(rt::checkpointPath(sharded)));
        auto layout = rt::readCheckpointLayout(sharded);
        WB_CHECK(layout.ok() && layout->step == 5 && layout->worldSize == 1 && layout->layout == "tp1 pp2");
        WB_CHECK_MSG(t.events == std::vector<std::string>{"info 5: checkpoint saved (interval): " + sharded + "/ckpt/step5 (1 rank files) + " +
                                                          rt::checkpointLayoutPath(sharded)},
                     (t.events.empty() ? "no event" : t.events.back()));
        SmallRank fresh;
        CheckpointerUnderTest u(sharded, fresh, true);
        int64_t step = 0, seq = 0;
        u.checkpointer->load(step, seq);
        WB_CHECK(step == 5 && seq == 40 && sameParameters(fresh, trained) && u.shardedLoads == 1);
        WB_CHECK(u.events == std::vector<std::string>{"info 5: resumed from " + sharded + "/ckpt/step5 at step 5"});
        // Resumed at step 5: saving step 5 again is skipped, as after a save.
        fs::remove_all(fs::path(sharded) / "ckpt" / "step5");
        u.checkpointer->save(5, 40, "signal");
        WB_CHECK(!fs::exists(fs::path(sharded) / "ckpt" / "step5"));
        // Another layout, or an unsharded one, is refused with exit 2.
        SmallRank other;
        const rt::RunFailure otherLayout = CheckpointerUnderTest(sharded, other, true, "tp2 pp1").loadFailure();
        WB_CHECK_MSG(otherLayout.exitCode == 2 &&
                         otherLayout.message.find("was written by 1 rank with layout \"tp1 pp2\", but this run is 1 rank with layout \"tp2 pp1\"") !=
                             std::string::npos,
                     otherLayout.exitCode << " " << otherLayout.message);
        const rt::RunFailure unsharded = CheckpointerUnderTest(sharded, other, false).loadFailure();
        WB_CHECK_MSG(unsharded.exitCode == 2 && unsharded.message.find("was written by 1 rank with layout \"tp1 pp2\"") != std::string::npos,
                     unsharded.exitCode << " " << unsharded.message);
    }
    fs::remove_all(dir);
}

// The OOM message ranks the knobs by the bytes each addresses, and reads the failed request from
// both LibTorch wordings.
void testOutOfMemoryRanking()
{
    WB_CHECK(rt::failedRequestBytes("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity") == (int64_t{2} << 30));
    WB_CHECK(rt::failedRequestBytes("DefaultCPUAllocator: not enough memory: you tried to allocate 1024 bytes.") == 1024);
    WB_CHECK(rt::failedRequestBytes("something else") == 0);
    WB_CHECK(rt::isOutOfMemoryMessage("CUDA out of memory. Tried to allocate 20.00 MiB"));
    WB_CHECK(!rt::isOutOfMemoryMessage("shape mismatch"));
    core::RunConfig c = test::sampleMockConfig();
    const int64_t gib = int64_t{1} << 30;
    rt::MemoryConsumers weights;  // a model whose state dominates: sharding first
    weights.parameters = weights.trainable = weights.gradients = 20 * gib;
    weights.optimizerProjected = 40 * gib;
    weights.peak = 21 * gib;
    weights.allocatedAtPeakKnown = 20 * gib;
    weights.visionTrainable = gib / 2;
    const std::string a = rt::outOfMemoryMessage(weights, c, "NVIDIA H200", "CUDA out of memory");
    WB_CHECK_MSG(a.find("1. sharding") != std::string::npos && a.find("(allocated at the first step)") != std::string::npos, a);
    rt::MemoryConsumers vision = weights;  // a large trainable vision tower beats halving the activations
    vision.parameters = vision.trainable = vision.gradients = 2 * gib;
    vision.optimizerProjected = 4 * gib;
    vision.visionTrainable = 2 * gib;
    vision.peak = 6 * gib;
    vision.allocatedAtPeakKnown = 2 * gib;
    const std::string b = rt::outOfMemoryMessage(vision, c, "NVIDIA H200", "CUDA out of memory");
    WB_CHECK_MSG(b.find("1. sharding") != std::string::npos && b.find("2. freezing the vision encoder") != std::string::npos &&
                     b.find("3. activation recompute") != std::string::npos && b.find("activations ~4.00 GiB") != std::string::npos, b);
    c.recompute.granularity = "full";  // already recomputing everything: not suggested again
    c.recompute.recomputeNumLayers = 1;
    WB_CHECK(rt::outOfMemoryMessage(vision, c, "cpu", "x").find("recompute (") == std::string::npos);
}

}  // namespace

int run(int, char**)
{
    testFrozenVision();
    testCheckpointRoundTrip();
    testRankCheckpoints();
    testCheckpointer();
    testOutOfMemoryRanking();
    return test::checkExitCode("test_runtime_state");
}

}  // namespace wb::test::suite_state
