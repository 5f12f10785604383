// ag::tensor: a handle to the result of an operator. Operators are built eagerly on the caller's
// thread (validated there, then sent to the executor); results are read with to_vector(), which
// waits for them. Copying a handle shares the tensor; the last handle to go releases it.
//
// Threads: like std::shared_ptr, copies of a handle may be used on different threads at once; one
// handle object must not be assigned on one thread while another thread uses it. An operator call
// may block while its device has too much work in flight (graph_option::max_in_flight_ops).
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

  // Explicit move to another device (as in PyTorch); the same handle when already there.
  tensor to(const ag::device& target) const;

  // 2-D float32 matrix product: [m, k] x [k, n] -> [m, n].
  tensor matmul(const tensor& rhs) const;

  // max(x, 0) elementwise.
  tensor relu() const;

  // Sum of all elements: shape {}.
  tensor sum() const;

  // Waits for the value and copies it out (moving it to the cpu first when it lives elsewhere).
  // Throws ag::error when the work that produces it failed or did not finish within the
  // runtime's wait_timeout.
  std::vector<float> to_vector() const;

  // Elementwise, on tensors of the same shape, dtype and device.
  friend tensor operator+(const tensor& x, const tensor& y);
  friend tensor operator-(const tensor& x, const tensor& y);
  friend tensor operator*(const tensor& x, const tensor& y);
  friend tensor operator/(const tensor& x, const tensor& y);

  // "float32[4,4] on sim:0".
  std::string str() const;

private:
  friend struct detail::tensor_node;
  explicit tensor(std::shared_ptr<detail::tensor_node> node) noexcept : node_(std::move(node)) {}

  const detail::tensor_node& checked(const char* what) const;

  std::shared_ptr<detail::tensor_node> node_;
};

} // namespace ag
