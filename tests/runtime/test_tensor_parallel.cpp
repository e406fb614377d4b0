// Tensor parallelism's autograd collectives (runtime/parallel/tensor_parallel.h) over Gloo on
// loopback, rank by rank, against the same computation on one rank (forward values and
// gradients):
//  - f / g around a column→row parallel GELU MLP (Megatron's pair): output, dX, dW1, dW2;
//  - the same MLP under sequence parallelism (all-gather in, reduce-scatter out) on N/TP rows;
//  - split / gather-with-split-gradient around a replicated computation (the gradient is the
//    replicated one, not TP times it);
//  - the variable-count gather and reduce-scatter the MoE uses (one rank with zero rows).
// `test_runtime_suites tensor_parallel N` forks N ranks of itself (before any
// LibTorch thread exists); fails when a rank's checks fail or it does not finish in time.
#include "check.h"
#include "loopback_ranks.h"

#include "runtime/parallel/process_group.h"
#include "runtime/parallel/tensor_parallel.h"

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_tensor_parallel {

namespace test = wb::test;
using namespace wb::rt;

namespace {

// fp32 sums in another order (the partial products over F/TP columns, then the allreduce).
bool closeTo(const torch::Tensor& a, const torch::Tensor& b)
{
    return a.sizes() == b.sizes() && torch::allclose(a, b, 1e-5, 1e-6);
}

struct Mlp {
    torch::Tensor x_ND, w1_FD, w2_DF, c_ND;  // c: the loss weights, loss = Σ y ⊙ c
};

// The same tensors on every rank (same seed); N = 8 rows, D = 6, F = 12 (divisible by 2 and 4).
Mlp makeMlp()
{
    torch::manual_seed(7);
    return {torch::randn({8, 6}), torch::randn({12, 6}), torch::randn({6, 12}), torch::randn({8, 6})};
}

struct Reference {
    torch::Tensor y, dx, dw1, dw2;
};

Reference reference(const Mlp& m)
{
    auto x = m.x_ND.clone().requires_grad_(true);
    auto w1 = m.w1_FD.clone().requires_grad_(true);
    auto w2 = m.w2_DF.clone().requires_grad_(true);
    auto y = torch::matmul(torch::gelu(torch::matmul(x, w1.t())), w2.t());
    (y * m.c_ND).sum().backward();
    return {y.detach(), x.grad(), w1.grad(), w2.grad()};
}

void checkColumnRow(ProcessGroup& tp, bool sequenceParallel)
{
    const int n = tp.size(), r = tp.rank();
    const Mlp m = makeMlp();
    const Reference ref = reference(m);
    const int64_t f = 12 / n, rows = 8 / n;
    auto w1 = m.w1_FD.narrow(0, r * f, f).clone().requires_grad_(true);
    auto w2 = m.w2_DF.narrow(1, r * f, f).clone().requires_grad_(true);
    torch::Tensor x, y, c;
    if (sequenceParallel) {
        x = m.x_ND.narrow(0, r * rows, rows).clone().requires_grad_(true);
        auto partial = torch::matmul(torch::gelu(torch::matmul(gatherSequence(tp, x), w1.t())), w2.t());
        y = reduceScatterSequence(tp, partial);
        c = m.c_ND.narrow(0, r * rows, rows);
    } else {
        x = m.x_ND.clone().requires_grad_(true);
        auto partial = torch::matmul(torch::gelu(torch::matmul(copyToTensorRegion(tp, x), w1.t())), w2.t());
        y = reduceFromTensorRegion(tp, partial);
        c = m.c_ND;
    }
    // Under SP each rank's loss is its rows' share of the reference loss.
    (y * c).sum().backward();
    const char* what = sequenceParallel ? "sequence parallel" : "f/g";
    auto expectY = sequenceParallel ? ref.y.narrow(0, r * rows, rows) : ref.y;
    auto expectDx = sequenceParallel ? ref.dx.narrow(0, r * rows, rows) : ref.dx;
    WB_CHECK_MSG(closeTo(y.detach(), expectY), what << " forward on rank " << r);
    WB_CHECK_MSG(x.grad().defined() && closeTo(x.grad(), expectDx), what << " dX on rank " << r);
    WB_CHECK_MSG(w1.grad().defined() && closeTo(w1.grad(), ref.dw1.narrow(0, r * f, f)), what << " dW1 on rank " << r);
    WB_CHECK_MSG(w2.grad().defined() && closeTo(w2.grad(), ref.dw2.narrow(1, r * f, f)), what << " dW2 on rank " << r);
}

// A replicated computation between split and gather: z = gather(2·split(x)) = 2x everywhere,
// and the gradient of the replicated loss Σ z ⊙ c reaches x once: 2c (not 2c·TP).
void checkSplitGather(ProcessGroup& tp)
{
    const int r = tp.rank();
    const Mlp m = makeMlp();
    auto x = m.x_ND.clone().requires_grad_(true);
    auto z = gatherSequenceSplitGrad(tp, splitSequence(tp, x) * 2.0);
    WB_CHECK_MSG(closeTo(z.detach(), m.x_ND * 2.0), "split/gather forward on rank " << r);
    (z * m.c_ND).sum().backward();
    WB_CHECK_MSG(x.grad().defined() && closeTo(x.grad(), m.c_ND * 2.0), "split/gather backward on rank " << r);
}

// Rank k holds k rows (rank 0 none), filled with k + row/10. Gathered: every rank's rows in rank
// order. Reduce-scatter of (gathered · (r+1)) gives back own rows · Σ_k (k+1).
void checkVariableRows(ProcessGroup& tp)
{
    const int n = tp.size(), r = tp.rank();
    std::vector<int64_t> rows;
    std::vector<torch::Tensor> expected;
    for (int k = 0; k < n; ++k) {
        rows.push_back(k);
        expected.push_back(torch::arange(k, torch::kFloat32).div(10.0).add(k).unsqueeze(1).repeat({1, 3}));
    }
    auto x = expected[static_cast<size_t>(r)].clone().requires_grad_(true);
    auto gathered = gatherRowsVariable(tp, x, rows);
    WB_CHECK_MSG(closeTo(gathered.detach(), torch::cat(expected)), "variable gather on rank " << r);
    auto back = reduceScatterRowsVariable(tp, gathered * static_cast<double>(r + 1), rows);
    const double scale = n * (n + 1) / 2.0;
    WB_CHECK_MSG(closeTo(back.detach(), x.detach() * scale), "variable reduce-scatter on rank " << r);
    // d(Σ back)/dx = Σ_k (k+1) on every row (each rank's copy of the rows, scaled, summed back).
    back.sum().backward();
    if (x.size(0) > 0)
        WB_CHECK_MSG(x.grad().defined() && closeTo(x.grad(), torch::full_like(x, scale)), "variable rows backward on rank " << r);
}

int runRank(int rank, int ranks, int port)
{
    return test::runOnLoopbackGroup(rank, ranks, port, std::chrono::seconds(30), [](ProcessGroup& world) {
        checkColumnRow(world, /*sequenceParallel=*/false);
        checkColumnRow(world, /*sequenceParallel=*/true);
        checkSplitGather(world);
        checkVariableRows(world);
    });
}

}  // namespace

int run(int argc, char** argv)
{
    const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
    const int port = test::freeLoopbackPort();
    test::runForkedRanks(ranks, [&](int k) { return runRank(k, ranks, port); });
    return test::checkExitCode(("test_runtime_tensor_parallel " + std::to_string(ranks)).c_str());
}

}  // namespace wb::test::suite_tensor_parallel
