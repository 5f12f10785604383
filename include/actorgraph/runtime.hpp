// ag::runtime: one controller driving several devices. Owns the executor actor (the seed's
// EagerGraphExecutor) and one runner per device; every runner is ready when the constructor
// returns. It owns a CAF actor system, or uses one the application already has.
//
// Threads: every member may be called from several threads at once, and so may the operators and
// reads of its tensors (README.md, "Threads"). The destructor may run on any thread (not while
// another thread is inside a member of this object); tensor waits still pending on other threads
// then end with ag::error saying the runtime was destroyed. With an application's actor system,
// the calling thread's CAF logger reference is dropped after each call (README.md, "Threads").
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/graph_option.hpp"
#include "actorgraph/tensor.hpp"

namespace ag {

namespace detail {
class controller;
} // namespace detail

struct runtime_stats {
  // Bytes of the host tensor store held by live tensors and moves in flight.
  std::size_t store_live_bytes = 0;
  // Bytes of device memory held by live operands, summed over the devices (as last reported by
  // their runners; exact after sync()).
  std::size_t device_live_bytes = 0;
  // Batches dispatched and operators in them, over every runner.
  std::size_t batches = 0;
  std::size_t operators = 0;
  // Operators submitted and not yet acknowledged, over every device (graph_option::
  // max_in_flight_ops bounds each device's share).
  std::size_t in_flight_ops = 0;
  // Operator calls that had to wait for room, since the start.
  std::size_t blocked_submits = 0;
  // Children started again after one died or was failed, over every device
  // (graph_option::max_restarts).
  std::size_t restarts = 0;
};

class runtime {
public:
  // Starts its own actor system.
  explicit runtime(graph_option opt = {});

  // Uses the application's actor system, which must outlive the runtime.
  runtime(caf::actor_system& sys, graph_option opt);

  // Waits (up to wait_timeout) for submitted work, then stops every runner (each child is given
  // wait_timeout, or 60 s without one, to exit) and releases the store, on whichever thread runs
  // it. Tensors that outlive the runtime throw ag::error when used.
  ~runtime();

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // A tensor of the given shape and dtype with every element set to value (converted as astype
  // converts; a whole number for an integer dtype).
  tensor full(const shape_t& shape, double value, const device& where,
              dtype type = dtype::float32);

  // A tensor holding values (row-major), of the values' dtype (float, ag::half, ag::bfloat16,
  // int32_t, int64_t, uint8_t); values.size() must equal the shape's element count. A braced list
  // of numbers is float32.
  tensor from_vector(const shape_t& shape, const std::vector<float>& values, const device& where);
  template <class T, class = std::enable_if_t<detail::is_value_type<T> && !std::is_same_v<T, float>>>
  tensor from_vector(const shape_t& shape, const std::vector<T>& values, const device& where) {
    return from_bytes(shape, dtype_of_v<T>, values.data(), values.size() * sizeof(T), where);
  }

  // Random tensors, counter-based (Philox 4x32-10, graph/philox.hpp): element i is draw i of the
  // stream of `seed`, the same bits on cpu, sim and cuda devices in either mode. uniform: in
  // [low, high); normal: with that mean and standard deviation. Floating dtypes.
  tensor uniform(const shape_t& shape, double low, double high, uint64_t seed, const device& where,
                 dtype type = dtype::float32);
  tensor normal(const shape_t& shape, double mean, double std, uint64_t seed, const device& where,
                dtype type = dtype::float32);

  // A tensor of `type` holding the nbytes at data (row-major, the host's byte order); nbytes must
  // be the shape's element count times the dtype's size.
  tensor from_bytes(const shape_t& shape, dtype type, const void* data, std::size_t nbytes,
                    const device& where);

  // Waits until every operator submitted so far has run. Throws ag::error naming the device, the
  // op and the reason when one failed, or when the wait exceeds wait_timeout.
  void sync();

  // Ends a step: the operators submitted since the last mark (or since the start) are one unit,
  // sent to each device as one batch whatever the executor's timing, so that a device running the
  // same step again (a training or decoding loop that marks each iteration) recognises it and, on
  // CUDA, launches it as one CUDA graph (graph_option::cuda_graphs). From the first mark on, an
  // operator waits for the mark that ends its step, unless something waits for it first: sync(),
  // a read, a step too large to hold (half of max_in_flight_ops on a device, at most 4096
  // operators) or one waiting for store space sends that step at once, as operators go without
  // marks. A program that never marks runs as before.
  void mark_step();

  // The devices besides cpu, with "auto" resolved.
  const std::vector<device>& devices() const noexcept;

  const graph_option& option() const noexcept;

  runtime_stats stats();

private:
  std::shared_ptr<detail::controller> core_;
};

} // namespace ag
