// The process group's collectives over Gloo on loopback, rank by rank: all-gather into a flat
// output (blocking and async), async allreduce, the overlapped gradient reducer, reduce-scatter, all-to-all with variable split sizes (some zero)
// after the count exchange, sub-groups made through a prefixed store (EP- and EDP-shaped), the
// differentiable all-to-all's backward, point-to-point send/recv (world and a strided sub-group),
// and a CommError naming the rank and the operation (bad group, send to itself, recv timeout);
// the step's statistics over ranks (StepReducer: sums, maxima, what TP ranks count once, the stop
// flag that one rank raised reaching every rank).
// `test_runtime_suites collectives N` forks N ranks of itself (before any LibTorch
// thread exists) and fails when any rank's checks fail or a rank does not finish in time.
// `test_runtime_suites collectives recv-timeout`: 2 ranks, a recv that is never matched times out.
#include "check.h"
#include "loopback_ranks.h"

#include "runtime/parallel/expert_parallel.h"
#include "runtime/parallel/gradient_reducer.h"
#include "runtime/train/memory_report.h"
#include "runtime/parallel/process_group.h"
#include "runtime/train/step_reducer.h"

#include <thread>

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_collectives {

namespace test = wb::test;
using namespace wb::rt;

namespace {

bool sameTensor(const torch::Tensor& a, const torch::Tensor& b)
{
    return a.sizes() == b.sizes() && a.equal(b);
}

void checkAllgather(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    auto input = torch::arange(3, torch::kFloat32) + 10.0 * r;
    auto output = torch::full({3 * n}, -1.0f);
    g.allgather(output, input);
    std::vector<torch::Tensor> expected;
    for (int k = 0; k < n; ++k)
        expected.push_back(torch::arange(3, torch::kFloat32) + 10.0 * k);
    WB_CHECK_MSG(sameTensor(output, torch::cat(expected)), "allgather on rank " << r << ": " << output);
    // Async: two in flight at once, waited in order.
    auto second = torch::full({2 * n}, -1.0f);
    auto a = g.allgatherAsync(output, input * 2);
    auto b = g.allgatherAsync(second, torch::full({2}, static_cast<float>(r)));
    a->wait();
    b->wait();
    WB_CHECK(sameTensor(output, torch::cat(expected) * 2));
    WB_CHECK(sameTensor(second, torch::arange(n, torch::kFloat32).repeat_interleave(2)));
}

void checkReduceScatter(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    // Rank k contributes k·100 + i at position i; rank r keeps block r of the sum.
    auto input = torch::arange(2 * n, torch::kFloat32) + 100.0 * r;
    auto output = torch::empty({2}, torch::kFloat32);
    g.reduceScatter(output, input);
    const double rankSum = 100.0 * n * (n - 1) / 2;
    auto expected = torch::arange(2, torch::kFloat32).add(2.0 * r).mul(n).add(rankSum);
    WB_CHECK_MSG(sameTensor(output, expected), "reduce-scatter on rank " << r << ": " << output << " vs " << expected);
}

// Rank r sends (r + j) % 3 rows to rank j (zero rows included), each row filled with 100·r + j.
void checkAllToAll(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    std::vector<int64_t> sendCounts;
    std::vector<torch::Tensor> rows;
    for (int j = 0; j < n; ++j) {
        sendCounts.push_back((r + j) % 3);
        rows.push_back(torch::full({(r + j) % 3, 4}, 100.0f * r + j));
    }
    const auto received = g.exchangeCounts(sendCounts, torch::kCPU);
    // Two values per destination (as expert parallelism sends one count per local expert).
    std::vector<int64_t> pairs;
    for (int j = 0; j < n; ++j)
        pairs.insert(pairs.end(), {10 * r + j, -(10 * r + j)});
    const auto receivedPairs = g.exchangeCounts(pairs, torch::kCPU);
    std::vector<int64_t> expectedPairs;
    for (int i = 0; i < n; ++i)
        expectedPairs.insert(expectedPairs.end(), {10 * i + r, -(10 * i + r)});
    WB_CHECK_MSG(receivedPairs == expectedPairs, "count exchange (2 per rank) on rank " << r);
    std::vector<int64_t> expectedCounts;
    for (int i = 0; i < n; ++i)
        expectedCounts.push_back((i + r) % 3);
    WB_CHECK_MSG(received == expectedCounts, "count exchange on rank " << r);
    auto x = torch::cat(rows).set_requires_grad(true);
    auto y = allToAllWithGrad(g, x, received, sendCounts);
    std::vector<torch::Tensor> expected;
    for (int i = 0; i < n; ++i)
        expected.push_back(torch::full({(i + r) % 3, 4}, 100.0f * i + r));
    WB_CHECK_MSG(sameTensor(y.detach(), torch::cat(expected)), "all-to-all on rank " << r << ": " << y);
    // d(½ Σ y²)/dy = y, sent back by the reverse all-to-all: x.grad must equal x.
    (y * y).sum().div(2).backward();
    WB_CHECK_MSG(x.grad().defined() && sameTensor(x.grad(), x.detach()), "all-to-all backward on rank " << r);
}

// Pipeline-shaped point-to-point: rank r sends two messages (tags 0 and 1, shapes 2×3 and 4) to
// r + 1 and receives r − 1's (a ring), posted async in the even/odd order the pipeline uses
// (even ranks send first); then blocking sends and recvs of int64 tensors with one tag, both
// directions, between ranks 0 and 1 in both directions, and a send to itself is a CommError naming the op.
void checkPointToPoint(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    if (n < 2)
        return;
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto a = torch::full({2, 3}, 10.0f * r);
    auto b = torch::arange(4, torch::kFloat32) + 100.0f * r;
    auto ra = torch::full({2, 3}, -1.0f), rb = torch::full({4}, -1.0f);
    std::vector<std::unique_ptr<CommWork>> works;
    auto sends = [&] {
        works.push_back(g.sendAsync(a, next, 0));
        works.push_back(g.sendAsync(b, next, 1));
    };
    auto recvs = [&] {
        works.push_back(g.recvAsync(ra, prev, 0));
        works.push_back(g.recvAsync(rb, prev, 1));
    };
    if (r % 2 == 0) {
        sends();
        recvs();
    } else {
        recvs();
        sends();
    }
    for (auto& w : works)
        w->wait();
    WB_CHECK_MSG(sameTensor(ra, torch::full({2, 3}, 10.0f * prev)), "p2p tag 0 on rank " << r << ": " << ra);
    WB_CHECK_MSG(sameTensor(rb, torch::arange(4, torch::kFloat32) + 100.0f * prev), "p2p tag 1 on rank " << r << ": " << rb);
    if (r < 2) {  // blocking, both directions, same tag twice in a row: order kept
        auto first = torch::tensor({int64_t{7} + r}), second = torch::tensor({int64_t{70} + r});
        auto in1 = torch::zeros({1}, torch::kInt64), in2 = torch::zeros({1}, torch::kInt64);
        const int peer = 1 - r;
        if (r == 0) {
            g.send(first, peer, 5);
            g.send(second, peer, 5);
            g.recv(in1, peer, 5);
            g.recv(in2, peer, 5);
        } else {
            g.recv(in1, peer, 5);
            g.recv(in2, peer, 5);
            g.send(first, peer, 5);
            g.send(second, peer, 5);
        }
        WB_CHECK_MSG(in1.item<int64_t>() == 7 + peer && in2.item<int64_t>() == 70 + peer, "blocking p2p on rank " << r);
    }
    bool threw = false;
    try {
        g.send(a, r, 0);
    } catch (const CommError& e) {
        const std::string what = e.what();
        threw = what.find("rank " + std::to_string(r)) != std::string::npos && what.find("send") != std::string::npos;
    }
    WB_CHECK(threw);
}

// Async allreduce: a sum and a max in flight together, waited in the reverse order.
void checkAllreduceAsync(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    auto a = torch::full({5}, static_cast<float>(r + 1));
    auto b = torch::arange(3, torch::kFloat32) + r;
    auto sum = g.allreduceAsync({a}, ReduceOp::Sum);
    auto max = g.allreduceAsync({b}, ReduceOp::Max);
    max->wait();
    sum->wait();
    WB_CHECK_MSG(sameTensor(a, torch::full({5}, n * (n + 1) / 2.0f)), "async allreduce sum on rank " << r << ": " << a);
    WB_CHECK_MSG(sameTensor(b, torch::arange(3, torch::kFloat32) + (n - 1)), "async allreduce max on rank " << r << ": " << b);
}

// True when `t`'s elements lie inside `buffer`'s (same storage, in range).
bool inside(const torch::Tensor& t, const torch::Tensor& buffer)
{
    if (!t.defined() || !buffer.defined())
        return false;
    const auto* p = static_cast<const char*>(t.data_ptr());
    const auto* lo = static_cast<const char*>(buffer.data_ptr());
    return p >= lo && p + t.numel() * t.element_size() <= lo + buffer.numel() * buffer.element_size();
}

// GradientReducer on hand-made leaves, one bucket each (8-byte buckets), three steps. Per step a
// first backward before arm() only accumulates; after arm() rank r's backward gives w = r + 1
// times each of a, b, e, and 1 to c on rank 0 only; then a second backward adds 10 to a, after
// a's bucket went out in step 1 (its accumulator runs again: the late part goes to a tensor of
// its own, is reduced in finish() and added; from step 2 on a's bucket goes out only in finish()).
// d gets nothing anywhere (stays undefined), f is frozen, e is deferred and doubled by
// beforeDeferred. Means over ranks: a = 2·mean(w) + 10, b = 2·mean(w), c = 1/n (zero-filled on
// the others), e = 2·mean(w). Order d, c, a, b: reversed, b's and a's buckets go out first,
// inside backward; c's only where rank 0 had it, d's never before finish(). Between steps the
// optimizer's zero_grad is played as LibTorch 2.x's (set_to_none) in step 2 and 1.13's (zeroes
// in place, keeps them) in step 3, each followed by zeroGradients(): the bucketed gradients must
// be views of their buffers throughout, nothing copied in.
void checkGradientReducer(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    auto leaf = [](int64_t size, bool trainable) { return torch::zeros({size}).set_requires_grad(trainable); };
    auto a = leaf(4, true), b = leaf(4, true), c = leaf(2, true), d = leaf(2, true), e = leaf(3, true), f = leaf(2, false);
    std::vector<ReducedParameter> params;
    for (const torch::Tensor& t : {f, d, c, a, b, e})
        params.push_back({t, &g, n, t.unsafeGetTensorImpl() == e.unsafeGetTensorImpl()});
    GradientReducer reducer(g, params, 8);
    for (const torch::Tensor& t : {a, b, c, d})
        WB_CHECK_MSG(inside(t.grad(), reducer.bucketBuffer(t)), "before step 1 a gradient is not its bucket's view");
    WB_CHECK(!reducer.bucketBuffer(e).defined() && !reducer.bucketBuffer(f).defined());
    const float w = static_cast<float>(r + 1), meanW = (n + 1) / 2.0f;
    for (int step = 1; step <= 3; ++step) {
        if (step == 2)  // torch::optim::Optimizer::zero_grad of 2.x: set_to_none
            for (torch::Tensor t : {a, b, c, d, e})
                t.mutable_grad() = torch::Tensor();
        if (step == 3) {  // of 1.13: defined ones detached and zeroed in place
            torch::NoGradGuard noGrad;
            for (torch::Tensor t : {a, b, c, d, e})
                if (t.grad().defined())
                    t.mutable_grad().detach_().zero_();
        }
        if (step > 1)
            reducer.zeroGradients();
        ((a + b) * w).sum().backward();  // an earlier micro-batch: accumulates only
        reducer.arm();
        auto loss = (a * w).sum() + (b * w).sum() + (e * w).sum();
        (r == 0 ? loss + c.sum() : loss).backward();
        (a * 10).sum().backward();
        reducer.finish([&] { e.mutable_grad().mul_(2); });
        WB_CHECK_MSG(a.grad().defined() && a.grad().allclose(torch::full({4}, 2 * meanW + 10)), "a on rank " << r << ": " << a.grad());
        WB_CHECK_MSG(b.grad().defined() && b.grad().allclose(torch::full({4}, 2 * meanW)), "b on rank " << r << ": " << b.grad());
        WB_CHECK_MSG(c.grad().defined() && c.grad().allclose(torch::full({2}, 1.0f / n)), "c on rank " << r << ": " << c.grad());
        WB_CHECK_MSG(e.grad().defined() && e.grad().allclose(torch::full({3}, 2 * meanW)), "e on rank " << r << ": " << e.grad());
        WB_CHECK_MSG(!d.grad().defined() && !f.grad().defined(), "d or f got a gradient on rank " << r);
        for (const torch::Tensor& t : {a, b, c})
            WB_CHECK_MSG(inside(t.grad(), reducer.bucketBuffer(t)),
                         "step " << step << " on rank " << r << ": a gradient is not a view of its bucket's buffer");
        WB_CHECK(!inside(e.grad(), reducer.bucketBuffer(a)) && !inside(e.grad(), reducer.bucketBuffer(b)));
    }
    const GradientReducerStats s = reducer.stats();
    // Launched during backward: step 1 b, a (+ c on rank 0); steps 2 and 3 b (+ c on rank 0), a
    // waiting for finish(). Zero-filled: c on ranks ≠ 0 in steps 1 and 2; in step 3 c's gradient
    // was kept (zeroed) by 1.13's zero_grad, so it is there, as on the synchronous path. The
    // buffers: a, b, c, d (12 floats), nothing of e's, f's.
    WB_CHECK_MSG(s.buckets == 5 && s.steps == 3 && s.reReduced == 1 && s.finishOnlyBuckets == 1 &&
                     s.undefinedEverywhere == 3 && s.zeroFilled == (r == 0 ? 0 : 2) &&
                     s.launchedInBackward == (r == 0 ? 7 : 4) && s.launchedInBackward + s.launchedAtFinish == 15 &&
                     s.copiedIn == 0 && s.bufferBytes == 12 * 4,
                 "rank " << r << ": " << reducer.summary());
}

// Someone replaces the gradients without zeroGradients() (an optimizer's set_to_none alone): the
// reducer notices at launch, copies them into its buffer (counted), and the result is still the
// average; the gradients are views again afterwards.
void checkGradientReducerReplacedGradients(ProcessGroup& g)
{
    const int n = g.size(), r = g.rank();
    auto a = torch::zeros({3}).set_requires_grad(true), b = torch::zeros({2}).set_requires_grad(true);
    GradientReducer reducer(g, {{a, &g, n}, {b, &g, n}}, 1 << 20);
    const float w = static_cast<float>(r + 1), meanW = (n + 1) / 2.0f;
    for (int step = 1; step <= 2; ++step) {
        a.mutable_grad() = torch::Tensor();
        b.mutable_grad() = torch::full({2}, 100.0f);  // replaced, and not zeroed: counts
        reducer.arm();
        ((a + b.sum()) * w).sum().backward();
        reducer.finish();
        WB_CHECK_MSG(a.grad().allclose(torch::full({3}, meanW)), "a on rank " << r << ": " << a.grad());
        WB_CHECK_MSG(b.grad().allclose(torch::full({2}, 100.0f + 3 * meanW)), "b on rank " << r << ": " << b.grad());
        WB_CHECK(inside(a.grad(), reducer.bucketBuffer(a)) && inside(b.grad(), reducer.bucketBuffer(b)));
    }
    WB_CHECK_MSG(reducer.stats().copiedIn == 4, "rank " << r << ": " << reducer.summary());
}

// The memory the overlapped reduction costs, counted by the CPU tensor counter (the allocator
// the trainer installs): 8 leaves of 64 Ki floats (2 MiB of gradients), 512 KiB buckets, steps as
// the trainer runs them (zero_grad as 2.x's set_to_none, zeroGradients(), an unarmed and an armed
// backward, finish()). The buffers are allocated once, at construction, and are exactly the
// gradients' bytes; a whole step then adds less than half the gradients' bytes at its peak (the
// transient incoming gradient autograd hands each accumulator, the forward's temporaries) and
// leaves nothing of a gradient's size behind (Gloo's works may keep a few bytes a while; observed
// 0 or 64). Flat copies of the buckets, or gradients that are not the buffers'
// views, add all of the gradients' 2 MiB.
void checkGradientReducerMemory(ProcessGroup& g)
{
    installCpuTensorCounter();
    const int n = g.size();
    constexpr int64_t kValues = 64 * 1024;
    std::vector<torch::Tensor> leaves;
    std::vector<ReducedParameter> params;
    for (int k = 0; k < 8; ++k) {
        leaves.push_back(torch::full({kValues}, static_cast<float>(k)).set_requires_grad(true));
        params.push_back({leaves.back(), &g, n});
    }
    const int64_t gradientBytes = 8 * kValues * 4;
    const int64_t before = cpuTensorBytes().current;
    GradientReducer reducer(g, params, 512 * 1024);
    WB_CHECK_MSG(cpuTensorBytes().current - before == gradientBytes && reducer.stats().bufferBytes == gradientBytes,
                 "the buffers take " << cpuTensorBytes().current - before << " bytes for " << gradientBytes
                                     << " bytes of gradients");
    const float w = static_cast<float>(g.rank() + 1), meanW = (n + 1) / 2.0f;
    for (int step = 1; step <= 3; ++step) {
        for (torch::Tensor t : leaves)
            t.mutable_grad() = torch::Tensor();
        reducer.zeroGradients();
        resetCpuTensorPeak();
        const int64_t base = cpuTensorBytes().current;
        auto loss = [&] {
            torch::Tensor sum = torch::zeros({});
            for (const torch::Tensor& t : leaves)
                sum = sum + (t * w).sum();
            return sum;
        };
        loss().backward();
        reducer.arm();
        loss().backward();
        reducer.finish();
        const TensorBytes after = cpuTensorBytes();
        WB_CHECK_MSG(after.peak - base < gradientBytes / 2 && after.current - base < 4096,
                     "step " << step << " on rank " << g.rank() << ": peak +" << after.peak - base << " bytes, "
                             << after.current - base << " left, over " << gradientBytes << " bytes of gradients");
        for (const torch::Tensor& t : leaves)
            WB_CHECK_MSG(t.grad().allclose(torch::full({kValues}, 2 * meanW)) && inside(t.grad(), reducer.bucketBuffer(t)),
                         "step " << step << " on rank " << g.rank() << ": a gradient is wrong or not its bucket's view");
    }
    WB_CHECK_MSG(reducer.stats().buckets == 4 && reducer.stats().copiedIn == 0, reducer.summary());
}

// Rank 1 waits for a message rank 0 never sends: after the group's timeout (2 s) the recv throws
// a CommError naming the rank, the operation and the peer.
int runRecvTimeout(int rank, int port)
{
    try {
        auto world = createProcessGroup(test::loopbackRank(rank, 2, port), torch::kCPU, std::chrono::seconds(2));
        if (rank == 0) {  // stays alive (and keeps the store) while rank 1 times out
            std::this_thread::sleep_for(std::chrono::seconds(5));
            return 0;
        }
        auto t = torch::zeros({3});
        const auto start = std::chrono::steady_clock::now();
        std::string message;
        try {
            world->recv(t, 0, 3);
        } catch (const CommError& e) {
            message = e.what();
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        WB_CHECK_MSG(message.find("rank 1 of 2") != std::string::npos && message.find("recv from rank 0") != std::string::npos,
                     "recv timeout message: " << message);
        WB_CHECK_MSG(took < 4.5, "recv took " << took << " s to time out");
    } catch (const std::exception& e) {
        std::cerr << "rank " << rank << ": " << e.what() << std::endl;
        return 1;
    }
    return test::failureCount() == 0 ? 0 : 1;
}

void checkSubgroups(ProcessGroup& world)
{
    const int n = world.size(), r = world.rank();
    if (n % 2 != 0)
        return;
    // EP-shaped (consecutive pairs), then EDP-shaped (stride 2), as expert parallelism makes them.
    auto pair = world.newGroup({r / 2 * 2, r / 2 * 2 + 1}, "pair" + std::to_string(r / 2));
    std::vector<int> strided;
    for (int k = r % 2; k < n; k += 2)
        strided.push_back(k);
    auto stride = world.newGroup(strided, "stride" + std::to_string(r % 2));
    WB_CHECK(pair->size() == 2 && pair->rank() == r % 2);
    WB_CHECK(stride->size() == n / 2 && stride->rank() == r / 2);
    std::vector<torch::Tensor> t{torch::full({1}, static_cast<float>(r))};
    pair->allreduce(t, ReduceOp::Sum);
    WB_CHECK_MSG(t[0].item<float>() == static_cast<float>(r / 2 * 2 * 2 + 1), "pair allreduce on rank " << r);
    t[0].fill_(static_cast<float>(r));
    stride->allreduce(t, ReduceOp::Sum);
    float expected = 0;
    for (int k : strided)
        expected += static_cast<float>(k);
    WB_CHECK_MSG(t[0].item<float>() == expected, "strided allreduce on rank " << r);
    checkAllgather(*pair);
    checkAllToAll(*stride);
    checkPointToPoint(*stride);  // pipeline-shaped: ranks of one stride (pipeline group) talk
    // Not a member: a CommError that names the rank and the operation.
    bool threw = false;
    try {
        world.newGroup({(r + 1) % n}, "bad");
    } catch (const CommError& e) {
        threw = std::string(e.what()).find("rank " + std::to_string(r) + " of " + std::to_string(n)) != std::string::npos;
    }
    WB_CHECK(threw);
}

// Rank r reports k·(r + 1) for the k-th summed value and 10 r + k for the k-th maximum (so a
// value read from another's slot shows), and only the last rank was asked to stop. Plain data
// parallel: sums and maxima over all ranks. TP 2: the loss, tokens and FLOPs that the TP ranks of
// a DP rank repeat count once (their TP rank 0's); the times are still the max.
void checkStepReducer(ProcessGroup& world, int tensorParallel)
{
    const int n = world.size(), r = world.rank();
    if (n % tensorParallel != 0)
        return;
    core::RunConfig config;
    config.parallel.tensorModelParallelSize = tensorParallel;
    ParallelTraining parallel(config, world);
    StepReducer reducer(world, parallel, torch::kCPU);
    core::StepRecord rec;
    rec.images = r + 1;
    rec.imageTokens = 2 * (r + 1);
    rec.textTokens = 3 * (r + 1);
    rec.padTokens = 4 * (r + 1);
    rec.skippedImages = 5 * (r + 1);
    double flops = 6 * (r + 1);
    torch::Tensor lmSum = torch::tensor(7.0 * (r + 1)), auxSum = torch::tensor(8.0 * (r + 1));
    const double times[] = {10.0 * r + 1, 10.0 * r + 2, 10.0 * r + 3, 10.0 * r + 4, 10.0 * r + 5,
                            10.0 * r + 6, 10.0 * r + 7, 10.0 * r + 8, 10.0 * r + 9, 10.0 * r + 10};
    double* fields[] = {&rec.stepMs, &rec.dataMs, &rec.visionMs, &rec.projectorMs, &rec.decoderMs,
                        &rec.backwardMs, &rec.optimizerMs, &rec.memAllocGib, &rec.memReservedGib, &rec.memPeakGib};
    for (size_t k = 0; k < std::size(fields); ++k)
        *fields[k] = times[k];
    reducer.reduce(rec, flops, lmSum, auxSum, r == n - 1);
    int64_t c = 0;  // the sum of r + 1 over the ranks that count
    for (int k = 0; k < n; k += tensorParallel)
        c += k + 1;
    WB_CHECK_MSG(rec.images == c && rec.imageTokens == 2 * c && rec.textTokens == 3 * c && rec.padTokens == 4 * c &&
                     rec.skippedImages == 5 * c && flops == 6.0 * c,
                 "TP " << tensorParallel << ": images " << rec.images << ", flops " << flops << ", expected " << c);
    WB_CHECK(lmSum.item<double>() == 7.0 * c && auxSum.item<double>() == 8.0 * c);
    for (size_t k = 0; k < std::size(fields); ++k)
        WB_CHECK_MSG(*fields[k] == 10.0 * (n - 1) + k + 1, "maximum " << k << ": " << *fields[k]);
    WB_CHECK_MSG(reducer.stopAgreed(), "rank " << r << " did not learn that rank " << n - 1 << " was asked to stop");
    reducer.reduce(rec, flops, lmSum, auxSum, false);
    WB_CHECK(!reducer.stopAgreed());
}

int runRank(int rank, int ranks, int port)
{
    return test::runOnLoopbackGroup(rank, ranks, port, std::chrono::seconds(30), [](ProcessGroup& world) {
        checkAllgather(world);
        checkAllreduceAsync(world);
        checkGradientReducer(world);
        checkGradientReducerReplacedGradients(world);
        checkGradientReducerMemory(world);
        checkReduceScatter(world);
        checkAllToAll(world);
        checkPointToPoint(world);
        checkSubgroups(world);
        checkStepReducer(world, 1);
        checkStepReducer(world, 2);
    });
}

}  // namespace

int run(int argc, char** argv)
{
    const int port = test::freeLoopbackPort();
    if (argc > 1 && std::string(argv[1]) == "recv-timeout") {
        test::runForkedRanks(2, [&](int k) { return runRecvTimeout(k, port); });
        return test::checkExitCode("test_runtime_collectives recv-timeout");
    }
    const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
    test::runForkedRanks(ranks, [&](int k) { return runRank(k, ranks, port); });
    return test::checkExitCode(("test_runtime_collectives " + std::to_string(ranks)).c_str());
}

}  // namespace wb::test::suite_collectives
