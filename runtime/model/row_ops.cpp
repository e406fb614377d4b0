// Row gathers and scatters at distinct indices (see row_ops.h).
#include "runtime/model/row_ops.h"

#include "runtime/model/cuda/fused_kernels.h"

namespace wb::rt {

namespace {

// Zeros [rows, D] with g's rows at `index` (distinct): the backward of the row gather.
torch::Tensor scatterIntoZeros(const torch::Tensor& g_MD, const torch::Tensor& index_M, int64_t rows)
{
    auto out = torch::zeros({rows, g_MD.size(1)}, g_MD.options());
    const auto g = g_MD.contiguous();
    if (cuda::scatterRowsSupports(out, index_M, g))
        cuda::scatterRows(out, index_M, g, /*accumulate=*/false);
    else
        out.index_copy_(0, index_M, g);
    return out;
}

class SelectDistinctRows : public torch::autograd::Function<SelectDistinctRows> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_RD,
                                 const torch::Tensor& index_M)
    {
        ctx->save_for_backward({index_M});
        ctx->saved_data["rows"] = x_RD.size(0);
        return x_RD.index_select(0, index_M);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto index_M = ctx->get_saved_variables()[0];
        return {scatterIntoZeros(grads[0], index_M, ctx->saved_data["rows"].toInt()), torch::Tensor()};
    }
};

class AddDistinctRows : public torch::autograd::Function<AddDistinctRows> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_RD,
                                 const torch::Tensor& index_M, const torch::Tensor& rows_MD)
    {
        ctx->save_for_backward({index_M});
        auto out = x_RD.clone(at::MemoryFormat::Contiguous);
        const auto rows = rows_MD.contiguous();
        if (cuda::scatterRowsSupports(out, index_M, rows))
            cuda::scatterRows(out, index_M, rows, /*accumulate=*/true);
        else
            out.index_add_(0, index_M, rows);
        return out;
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto index_M = ctx->get_saved_variables()[0];
        const auto& g = grads[0];
        return {g, torch::Tensor(), g.index_select(0, index_M)};
    }
};

}  // namespace

torch::Tensor selectDistinctRows(const torch::Tensor& x, const torch::Tensor& index)
{
    TORCH_CHECK(x.dim() == 2 && index.dim() == 1, "selectDistinctRows: x must be [R, D] and index [M]");
    return SelectDistinctRows::apply(x, index);
}

torch::Tensor addDistinctRows(const torch::Tensor& x, const torch::Tensor& index, const torch::Tensor& rows)
{
    TORCH_CHECK(x.dim() == 2 && index.dim() == 1 && rows.dim() == 2 && rows.size(0) == index.numel() &&
                    rows.size(1) == x.size(1) && rows.scalar_type() == x.scalar_type(),
                "addDistinctRows: x [R, D], index [M] and rows [M, D] of x's dtype");
    return AddDistinctRows::apply(x, index, rows);
}

}  // namespace wb::rt
