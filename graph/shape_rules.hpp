// The shape rules of N-D tensors, as PyTorch and NumPy have them: element counts, broadcasting,
// dimensions counted from either end, reshape with one inferred dimension, transpose and permute,
// slices, concatenation, reductions and torch.matmul's batched products. Plain functions of shapes
// (no runtime, no dtype): the operators' table uses them on the caller's thread, and each throws
// ag::error naming the operator and the shapes that do not fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actorgraph/tensor.hpp"

namespace ag::detail {

// The most dimensions a tensor has.
inline constexpr std::size_t max_dims = 8;

// "[2,3]"; "[]" for a scalar.
std::string shape_string(const shape_t& shape);

// Elements of a shape; throws for a negative dimension, more than max_dims dimensions, or more
// elements than 2^61 - 1 (so that bytes of the widest element stay representable).
uint64_t element_count(const shape_t& shape, const char* what);

// a * b as a dimension; throws naming `what` when it does not fit in int64_t.
int64_t checked_product(int64_t a, int64_t b, const std::string& what);

// Dimension `dim` of a tensor of `dims` dimensions, counted from the end when negative (-1: the
// last). A scalar takes 0 and -1, as in PyTorch.
std::size_t wrap_dim(int64_t dim, std::size_t dims, const char* what);

// The strides, in elements, of a tensor of `shape` laid out row-major (contiguous).
shape_t contiguous_strides(const shape_t& shape);

// The shape both broadcast to: aligned at their last dimension, each pair equal or one of them 1.
shape_t broadcast_shapes(const shape_t& a, const shape_t& b, const char* what);

// The strides with which a tensor of `shape` and `strides` is read as `to` (a shape it broadcasts
// to): 0 along every dimension it repeats.
shape_t broadcast_strides(const shape_t& shape, const shape_t& strides, const shape_t& to);

// `to` with its one -1 (if any) worked out so that it has the elements of `from`.
shape_t reshape_shape(const shape_t& from, const shape_t& to, const char* what);

// The order `dims` as dimension indices: a permutation of 0 .. shape.size() - 1, each given once
// (negatives count from the end).
std::vector<std::size_t> permutation(const shape_t& shape, const std::vector<int64_t>& dims,
                                     const char* what);

// `values` in the order `perm` (a permutation() of them).
shape_t permuted(const shape_t& values, const std::vector<std::size_t>& perm);

// A slice [start, end) of a dimension of `size` elements, as Python slices: negatives count from
// the end, both ends are clamped to [0, size], and an end before the start makes it empty.
struct slice_bounds {
  int64_t start = 0;
  int64_t end = 0;
  int64_t size() const noexcept { return end - start; }
};
slice_bounds clamp_slice(int64_t start, int64_t end, int64_t size);

// The shape of the tensors in `shapes` joined along `dim`: all of one rank, equal but along dim.
shape_t cat_shape(const std::vector<shape_t>& shapes, int64_t dim, const char* what);

// The dimensions a reduction runs over, in increasing order, each once: every dimension when
// `dims` is empty.
std::vector<std::size_t> reduced_dims(const shape_t& shape, const std::vector<int64_t>& dims,
                                      const char* what);

// The shape a reduction over `reduced` (reduced_dims) leaves: those dimensions dropped, or kept
// as 1 with keepdim.
shape_t reduce_shape(const shape_t& shape, const std::vector<std::size_t>& reduced, bool keepdim);

// torch.matmul's product of a and b as a batch of [m, k] x [k, n] matrix products.
struct matmul_plan {
  shape_t out;         // the result's shape
  shape_t batch;       // the broadcast batch dimensions ([] for none)
  shape_t a_batch;     // a's batch dimensions, as broadcast_strides reads them against `batch`
  shape_t b_batch;     // b's
  int64_t m = 1, k = 1, n = 1;
};
// a: 1-D is a row vector [1, k] whose 1 is dropped from the result; b: 1-D is a column [k, 1]
// whose 1 is dropped. Both 1-D: a dot product, shape []. More than 2-D: the leading dimensions are
// batches, broadcast against each other.
matmul_plan plan_matmul(const shape_t& a, const shape_t& b, const char* what);

} // namespace ag::detail
