#include "cuda/cublas_gemm.hpp"

#include <climits>

#include "actorgraph/error.hpp"
#include "cuda/cublas_loader.hpp"
#include "cuda/cuda_error.hpp"

namespace ag::cuda {

namespace {

// cuBLAS is column-major: out^T [n, m] = b^T [n, k] x a^T [k, m] writes row-major out [m, n].
// An operand X^T of `rows` x `cols`, whose element (r, c) lies at r * along_rows + c *
// along_cols: as stored column-major (op N, ld = along_cols) or as the transpose of a
// column-major matrix (op T, ld = along_rows).
struct side {
  cublasOperation_t op = CUBLAS_OP_N;
  int ld = 1;
};

int as_int(int64_t v, const char* what, const std::string& device) {
  if (v < 0 || v > INT_MAX)
    throw error(device + ": matmul " + what + " = " + std::to_string(v)
                + " is outside cuBLAS's int dimensions");
  return static_cast<int>(v);
}

side layout(int64_t rows, int64_t cols, int64_t along_rows, int64_t along_cols, const char* name,
            const std::string& device) {
  // One row: element (0, c) at c * along_cols, column-major with ld = along_cols. One column:
  // element (r, 0) at r * along_rows, the transpose of a one-row matrix.
  if (rows == 1)
    return {CUBLAS_OP_N, as_int(std::max<int64_t>(along_cols, 1), "ld", device)};
  if (cols == 1)
    return {CUBLAS_OP_T, as_int(std::max<int64_t>(along_rows, 1), "ld", device)};
  if (along_rows == 1 && along_cols >= rows)
    return {CUBLAS_OP_N, as_int(along_cols, "ld", device)};
  if (along_cols == 1 && along_rows >= cols)
    return {CUBLAS_OP_T, as_int(along_rows, "ld", device)};
  throw error(device + ": matmul operand " + name + " is neither row- nor column-major (strides "
              + std::to_string(along_rows) + ", " + std::to_string(along_cols) + ")");
}

cudaDataType_t data_type(dtype t) {
  switch (t) {
    case dtype::float16: return CUDA_R_16F;
    case dtype::bfloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

} // namespace

void gemm(cublasHandle_t handle, const matmul_call& c, cudaStream_t stream,
          const std::string& device) {
  const int64_t batches = c.batches();
  const std::size_t size = size_of(c.type);
  if (c.m == 0 || c.n == 0 || batches == 0)
    return;
  if (c.k == 0) { // an empty inner product is 0 (+0.0 is all zero bits in every floating dtype)
    AG_CUDA_TRY(cudaMemsetAsync(c.out, 0, static_cast<std::size_t>(batches * c.m * c.n) * size,
                                stream));
    return;
  }
  const int m = as_int(c.m, "m", device), n = as_int(c.n, "n", device);
  const int k = as_int(c.k, "k", device);
  // b^T [n, k]: element (j, p) of it is b (p, j); a^T [k, m]: element (p, i) is a (i, p).
  const side first = layout(c.n, c.k, c.b_n, c.b_k, "b", device);
  const side second = layout(c.k, c.m, c.a_k, c.a_m, "a", device);
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType_t t = data_type(c.type);
  const auto& api = cublas::get();
  // The innermost batch dimension goes to one strided-batched call; the others are looped over.
  const int last = c.batch_rank - 1;
  const int64_t inner = last >= 0 ? c.batch[last] : 1;
  const int64_t a_step = last >= 0 ? c.a_batch[last] : 0;
  const int64_t b_step = last >= 0 ? c.b_batch[last] : 0;
  int64_t index[matmul_call::max_batch] = {};
  int64_t a_off = 0, b_off = 0;
  for (int64_t q = 0; q < batches; q += inner) {
    const auto* a = static_cast<const char*>(c.a) + a_off * static_cast<int64_t>(size);
    const auto* b = static_cast<const char*>(c.b) + b_off * static_cast<int64_t>(size);
    auto* out = static_cast<char*>(c.out) + q * c.m * c.n * static_cast<int64_t>(size);
    if (inner == 1)
      AG_CUBLAS_TRY(api.gemm_ex(handle, first.op, second.op, n, m, k, &one, b, t, first.ld, a, t,
                                second.ld, &zero, out, t, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    else
      AG_CUBLAS_TRY(api.gemm_strided_batched_ex(
        handle, first.op, second.op, n, m, k, &one, b, t, first.ld, b_step, a, t, second.ld,
        a_step, &zero, out, t, n, c.m * c.n, as_int(inner, "batch", device), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
    for (int d = last - 1; d >= 0; --d) { // the odometer over the outer batch dimensions
      a_off += c.a_batch[d];
      b_off += c.b_batch[d];
      if (++index[d] < c.batch[d])
        break;
      a_off -= c.a_batch[d] * c.batch[d];
      b_off -= c.b_batch[d] * c.batch[d];
      index[d] = 0;
    }
  }
}

} // namespace ag::cuda
