// ag::tensor: a handle to the result of an operator. Operators are built eagerly on the caller's
// thread (validated there, then sent to the executor); results are read with to_vector() or
// values<T>(), which wait for them. Copying a handle shares the tensor; the last handle to go
// releases it. Tensors are never written after they are made, so a view (reshape, transpose,
// permute, slice: docs/OPERATORS.md) always shows the values its base had when it was taken.
//
// Threads: like std::shared_ptr, copies of a handle may be used on different threads at once; one
// handle object must not be assigned on one thread while another thread uses it. An operator call
// may block while its device has too much work in flight (graph_option::max_in_flight_ops).
//
// The operators beyond these members are free functions in actorgraph/ops.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/dtype.hpp"

namespace ag {

namespace detail {
struct tensor_node;
} // namespace detail

using shape_t = std::vector<int64_t>;

class tensor {
public:
  tensor() noexcept = default;

  // False for a default-constructed handle.
  bool defined() const noexcept { return node_ != nullptr; }

  const shape_t& shape() const;
  ag::dtype dtype() const;
  ag::device device() const;
  int64_t numel() const;
  // Dimensions (0 for a scalar).
  int64_t dim() const;
  // True unless the tensor is a view whose elements do not lie row-major from its first.
  bool is_contiguous() const;

  // Explicit move to another device (as in PyTorch); the same handle when already there.
  tensor to(const ag::device& target) const;

  // The values converted to `type` (the same handle when already of it): floating to integer
  // rounds toward zero, saturates, and makes NaN 0; to uint8 likewise within [0, 255].
  tensor astype(ag::dtype type) const;

  // A tensor of its own, contiguous (the same handle when the tensor already is).
  tensor contiguous() const;

  // -- views (no copy, except reshape of a view that cannot be reshaped in place) ------------------
  // The same elements in `shape`, one of whose dimensions may be -1.
  tensor reshape(const shape_t& shape) const;
  // Dimensions d0 and d1 swapped (negatives count from the end).
  tensor transpose(int64_t d0, int64_t d1) const;
  // Dimension i of the result is dimension dims[i] of this one.
  tensor permute(const std::vector<int64_t>& dims) const;
  // Elements [start, end) of dimension dim, as Python slices them (negatives from the end,
  // clamped to the dimension).
  tensor slice(int64_t dim, int64_t start, int64_t end) const;

  // torch.matmul: ag::matmul(*this, rhs) (actorgraph/ops.hpp).
  tensor matmul(const tensor& rhs) const;

  // max(x, 0) elementwise.
  tensor relu() const;

  // Sum of all elements: shape {}.
  tensor sum() const;

  // -- reductions (floating dtypes; dims empty: every dimension; negatives count from the end) ------
  // Sums, means and maxima over dims, which are dropped from the shape, or kept as 1 with keepdim.
  tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  tensor mean(const std::vector<int64_t>& dims = {}, bool keepdim = false) const;
  tensor max(int64_t dim, bool keepdim = false) const;
  // The index (int64) of the largest element along dim: the first of them, or of the first NaN.
  tensor argmax(int64_t dim, bool keepdim = false) const;

  // Waits for the value and copies it out (moving it to the cpu first when it lives elsewhere),
  // converted to float: exact for every dtype but int32 and int64 beyond 2^24 (values<T>() is
  // exact). Throws ag::error when the work that produces it failed or did not finish within the
  // runtime's wait_timeout.
  std::vector<float> to_vector() const;

  // The exact values, row-major. T must be the dtype's value type (float, ag::half,
  // ag::bfloat16, int32_t, int64_t, uint8_t), else ag::error naming both.
  template <class T>
  std::vector<T> values() const {
    return read_as<T>("values");
  }

  // The values of a cpu tensor where they lie in the runtime's host store, without a copy (waiting
  // for them): numel() * size_of(dtype()) bytes, row-major (a view is made contiguous first). They
  // stay mapped and unchanged while the pointer, or a copy of it, lives, even past the runtime;
  // they must not be written. ag::error for a tensor on another device (to() the cpu first), or
  // when the work that produces it failed.
  std::shared_ptr<const void> host_bytes() const;

  // A device tensor's bytes where they lie, for another library to use without a copy (DLPack),
  // on a device whose lane runs in this process (thread mode); a view is made contiguous first.
  // When this returns, its writer ran on a sim device; on a CUDA device `stream` waits for it (a
  // CUDA event): another library's cudaStream_t as an integer, 1 for the legacy default stream,
  // 2 for the per-thread one, -1 for none (DLPack's numbering). The bytes stay while the pointer,
  // or a copy of it, lives and the runtime is open (its end frees device memory); they must not
  // be written. ag::error for a cpu tensor, a device in a child process or on a node, or when the
  // work that produces it failed.
  std::shared_ptr<void> device_bytes(std::intptr_t stream) const;

  // "float32[4,4] on sim:0".
  std::string str() const;

private:
  friend struct detail::tensor_node;
  explicit tensor(std::shared_ptr<detail::tensor_node> node) noexcept : node_(std::move(node)) {}

  const detail::tensor_node& checked(const char* what) const;

  // Waits for the value and copies its bytes out, as `what` (named in errors); ag::error when the
  // dtype is not T's.
  template <class T>
  std::vector<T> read_as(const char* what) const {
    std::vector<T> out;
    auto into = [&out](std::size_t n) {
      out.resize(n);
      return reinterpret_cast<char*>(out.data());
    };
    read_bytes(dtype_of_v<T>, what, &into,
               [](void* f, std::size_t n) { return (*static_cast<decltype(into)*>(f))(n); });
    return out;
  }
  // into(ctx, numel()) gives the memory the bytes go to.
  void read_bytes(ag::dtype type, const char* what, void* ctx,
                  char* (*into)(void*, std::size_t)) const;

  std::shared_ptr<detail::tensor_node> node_;
};

} // namespace ag
