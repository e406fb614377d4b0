// Gathers and scatters of whole rows at distinct indices, as autograd functions whose backward
// knows the indices are distinct. ATen's index_select backward and index_add go through atomic
// adds (index_add_ of a zero tensor; `indexFuncLargeIndex`), which are slow on bf16 rows: six
// [16k, 2048] bf16 index_adds and six index_select backwards took 3.5 ms of a 223 ms step of the
// benchmark slice on one H200 (docs/benchmarks.md, profile of 2026-12-05T10:58Z). With distinct
// indices a row is written by one thread block, with 16-byte vectors and no atomics
// (cuda::scatterRows). The decoder's rows are all like that: the valid (non-padding) tokens,
// the image tokens, the loss targets — each from nonzero() over a mask, so sorted and distinct.
// On the CPU, for other layouts, and with WB_PASS_KERNELS=0 the ATen ops run instead; results
// equal theirs (an added row is rounded once either way).
#pragma once

#include <torch/torch.h>

namespace wb::rt {

/// x.index_select(0, index) for distinct index values; its backward scatters the rows' gradient
/// into zeros without atomics.
torch::Tensor selectDistinctRows(const torch::Tensor& x, const torch::Tensor& index);

/// x.index_add(0, index, rows) for distinct index values (x and rows of one dtype): a copy of x
/// with the rows added once each; the backward passes the gradient to x and gathers rows'.
torch::Tensor addDistinctRows(const torch::Tensor& x, const torch::Tensor& index, const torch::Tensor& rows);

}  // namespace wb::rt
