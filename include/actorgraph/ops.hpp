// The operators on tensors, with PyTorch's names and semantics (docs/OPERATORS.md: dtypes,
// broadcasting, numerics, device kinds). Each runs on the device of its operands, which must be
// one device of one runtime; each checks its call on the caller's thread and throws ag::error
// naming the operator and its operands' shapes, dtypes and devices when they do not fit.
//
// Binary operators broadcast as NumPy and PyTorch do (shapes aligned at their last dimension, each
// pair of sizes equal or one of them 1). Their operands share one dtype; a scalar (a double on
// either side) is taken in the tensor's dtype, and must be a whole number for an integer tensor.
#pragma once

#include <string>
#include <vector>

#include "actorgraph/tensor.hpp"

namespace ag {

// -- arithmetic ------------------------------------------------------------------------------------
tensor operator+(const tensor& x, const tensor& y);
tensor operator-(const tensor& x, const tensor& y);
tensor operator*(const tensor& x, const tensor& y);
tensor operator/(const tensor& x, const tensor& y); // floating dtypes only
tensor operator+(const tensor& x, double y);
tensor operator-(const tensor& x, double y);
tensor operator*(const tensor& x, double y);
tensor operator/(const tensor& x, double y);
tensor operator+(double x, const tensor& y);
tensor operator-(double x, const tensor& y);
tensor operator*(double x, const tensor& y);
tensor operator/(double x, const tensor& y);
tensor operator-(const tensor& x); // neg

// Elementwise maximum and minimum; NaN when either operand is NaN.
tensor maximum(const tensor& x, const tensor& y);
tensor minimum(const tensor& x, const tensor& y);
// x ^ exponent, floating dtypes.
tensor pow(const tensor& x, double exponent);

// -- comparisons: uint8 results, 1 where it holds (NaN compares unequal to everything) -------------
tensor eq(const tensor& x, const tensor& y);
tensor ne(const tensor& x, const tensor& y);
tensor lt(const tensor& x, const tensor& y);
tensor le(const tensor& x, const tensor& y);
tensor gt(const tensor& x, const tensor& y);
tensor ge(const tensor& x, const tensor& y);
tensor eq(const tensor& x, double y);
tensor ne(const tensor& x, double y);
tensor lt(const tensor& x, double y);
tensor le(const tensor& x, double y);
tensor gt(const tensor& x, double y);
tensor ge(const tensor& x, double y);

// x where mask is not 0, else y: mask is uint8; x and y share a dtype; all three broadcast.
tensor where(const tensor& mask, const tensor& x, const tensor& y);

// The tensors joined along dim (negatives count from the end): one dtype and device, equal shapes
// but along dim. A copy (one operator per three tensors); cat of one tensor is that tensor.
tensor cat(const std::vector<tensor>& tensors, int64_t dim = 0);

// -- unary ------------------------------------------------------------------------------------------
tensor neg(const tensor& x);
tensor abs(const tensor& x);
tensor relu(const tensor& x);
// Floating dtypes (computed in float32, rounded to the dtype):
tensor exp(const tensor& x);
tensor log(const tensor& x);
tensor sqrt(const tensor& x);
tensor rsqrt(const tensor& x);
tensor tanh(const tensor& x);
tensor sigmoid(const tensor& x);
tensor silu(const tensor& x);
// approximate: "none" (with erf) or "tanh".
tensor gelu(const tensor& x, const std::string& approximate = "none");

// torch.matmul, floating dtypes: 1-D x 1-D is a dot product ([]); a 1-D lhs is a row and a 1-D
// rhs a column, their 1 dropped from the result; more than 2-D: the leading dimensions are
// batches, broadcast against each other. float16 and bfloat16 accumulate in float32. A transposed
// view costs no copy.
tensor matmul(const tensor& lhs, const tensor& rhs);

// -- networks (floating dtypes) ---------------------------------------------------------------------
// exp(x) / sum(exp(x)) along dim, computed from x - max; log_softmax its logarithm.
tensor softmax(const tensor& x, int64_t dim);
tensor log_softmax(const tensor& x, int64_t dim);
// Over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias (var biased), and
// x / sqrt(mean(x^2) + eps) * weight. weight and bias are [last dim], or undefined for none.
tensor layer_norm(const tensor& x, const tensor& weight, const tensor& bias, double eps = 1e-5);
tensor rms_norm(const tensor& x, const tensor& weight, double eps = 1e-6);
// Rows of table [V, D] picked by indices (int32 or int64, any shape): indices.shape + [D]. An
// index outside [0, V) fails the operator (cpu, sim) or gives a NaN row (cuda).
tensor embedding(const tensor& table, const tensor& indices);
// The mean over rows of -log_softmax(logits)[row, targets[row]]: logits [N, C], targets [N]
// (int32 or int64); shape [].
tensor cross_entropy(const tensor& logits, const tensor& targets);

} // namespace ag
