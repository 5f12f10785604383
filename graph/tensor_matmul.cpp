// torch.matmul on the caller's thread: 1-D, 2-D and batched operands with broadcast batch
// dimensions, as one operator. An operand that is a transposed view is read transposed (a stride,
// no copy); one that is neither row- nor column-major in its last two dimensions is copied first.
#include <string>

#include "actorgraph/error.hpp"
#include "actorgraph/ops.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

using detail::tensor_node;

namespace {

// An operand as a matrix of a batch: its batch shape and strides, and its strides along its rows
// and columns ([m, k] for a, [k, n] for b).
struct matrix {
  shape_t batch, batch_strides;
  int64_t along_rows = 0, along_cols = 0;
};

// x as a matrix: a 1-D a is a row [1, k], a 1-D b a column [k, 1].
matrix as_matrix(const tensor_node& x, bool is_a) {
  const auto strides = x.element_strides();
  const std::size_t r = x.shape.size();
  matrix out;
  if (r == 1) {
    out.along_rows = is_a ? 0 : strides[0];
    out.along_cols = is_a ? strides[0] : 0;
    return out;
  }
  out.batch.assign(x.shape.begin(), x.shape.end() - 2);
  out.batch_strides.assign(strides.begin(), strides.end() - 2);
  out.along_rows = strides[r - 2];
  out.along_cols = strides[r - 1];
  return out;
}

// cuBLAS takes a matrix stored row-major or column-major (cuda/cublas_gemm.cpp): a stride of 1
// along one dimension and one at least as long as it along the other.
bool blas_ready(const matrix& x, int64_t rows, int64_t cols) {
  if (rows <= 1 || cols <= 1)
    return (rows <= 1 || x.along_rows >= 1) && (cols <= 1 || x.along_cols >= 1);
  return (x.along_cols == 1 && x.along_rows >= cols) || (x.along_rows == 1 && x.along_cols >= rows);
}

} // namespace

tensor matmul(const tensor& lhs, const tensor& rhs) {
  const auto& x0 = tensor_node::of(lhs, "matmul");
  const auto& y0 = tensor_node::of(rhs, "matmul");
  auto fail = [&](const std::string& what) {
    return error("matmul: " + what + ": lhs " + lhs.str() + ", rhs " + rhs.str());
  };
  if (x0.where != y0.where)
    throw fail("device mismatch");
  if (x0.type != y0.type)
    throw fail("dtype mismatch");
  if (!is_floating(x0.type))
    throw fail("takes float32, float16 or bfloat16");
  if (x0.runtime.lock() != y0.runtime.lock())
    throw fail("runtime mismatch");
  auto rt = x0.live("matmul");
  detail::matmul_plan plan;
  try {
    plan = detail::plan_matmul(x0.shape, y0.shape, "matmul");
  } catch (const error& e) {
    throw fail(std::string{"shapes do not fit ("} + e.what() + ")");
  }
  if (plan.batch.size() + 3 > detail::max_dims)
    throw fail("more than " + std::to_string(detail::max_dims - 3) + " batch dimensions");
  tensor a = lhs, b = rhs;
  matrix ma = as_matrix(tensor_node::of(a, "matmul"), true);
  matrix mb = as_matrix(tensor_node::of(b, "matmul"), false);
  if (!blas_ready(ma, plan.m, plan.k)) {
    a = lhs.contiguous();
    ma = as_matrix(tensor_node::of(a, "matmul"), true);
  }
  if (!blas_ready(mb, plan.k, plan.n)) {
    b = rhs.contiguous();
    mb = as_matrix(tensor_node::of(b, "matmul"), false);
  }
  const auto& an = tensor_node::of(a, "matmul");
  const auto& bn = tensor_node::of(b, "matmul");
  op_request req;
  req.kind = op_kind::matmul;
  req.where = an.where;
  req.type = req.in_type = an.type;
  req.a = an.id;
  req.b = bn.id;
  req.m = static_cast<uint64_t>(plan.m);
  req.k = static_cast<uint64_t>(plan.k);
  req.n = static_cast<uint64_t>(plan.n);
  req.count = detail::element_count(plan.out, "matmul");
  const bool plain = an.whole() && bn.whole() && an.shape.size() == 2 && bn.shape.size() == 2;
  if (!plain) {
    const shape_t a_batch = detail::broadcast_strides(ma.batch, ma.batch_strides, plan.batch);
    const shape_t b_batch = detail::broadcast_strides(mb.batch, mb.batch_strides, plan.batch);
    auto& l = req.layout;
    l.shape = plan.batch;
    l.shape.insert(l.shape.end(), {plan.m, plan.n, plan.k});
    const std::size_t dims = l.shape.size();
    l.strides.assign(3 * dims, 0);
    for (std::size_t d = 0; d < plan.batch.size(); ++d) {
      l.strides[d] = a_batch[d];
      l.strides[dims + d] = b_batch[d];
    }
    l.strides[dims - 3] = ma.along_rows;     // a along m
    l.strides[dims - 1] = ma.along_cols;     // a along k
    l.strides[2 * dims - 2] = mb.along_cols; // b along n
    l.strides[2 * dims - 1] = mb.along_rows; // b along k
    l.a_offset = an.offset;
    l.b_offset = bn.offset;
  }
  return detail::submit(rt, std::move(req), plan.out);
}

tensor tensor::matmul(const tensor& rhs) const { return ag::matmul(*this, rhs); }

} // namespace ag
