// The model's view of a running runtime: what a tensor needs to submit operators, release its
// operand and read its value. The controller in actors/ implements it; the model stays free of
// actors (apps -> actors -> {ipc, cuda} -> graph).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/tensor.hpp"
#include "graph/collective.hpp"
#include "graph/op.hpp"
#include "graph/shape_rules.hpp" // element_count, checked_product, shape_string

namespace ag::detail {

class runtime_core {
public:
  virtual ~runtime_core() = default;

  // Operand ids are handed out on the user's thread so that an operator's result can be named by
  // the next operator before the executor has seen either.
  operand_id next_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // True when operators may run on d (cpu, or one of the runtime's devices).
  virtual bool has_device(const device& d) const noexcept = 0;

  virtual void submit(op_request&& req) = 0;
  // A collective whose results (req.outs) the caller named with next_id().
  virtual void submit(collective_request&& req) = 0;
  virtual void release(operand_id id) noexcept = 0;

  // Waits until operand id (a cpu tensor of count floats) is written and copies it out.
  virtual std::vector<float> read(operand_id id, std::size_t count) = 0;

  // True when a tensor of `bytes` is too large to stage whole in the host store: it is moved and
  // read through the store in pieces.
  virtual bool piecewise(uint64_t bytes) const noexcept = 0;

  // Copies out device operand id (count floats) a piece at a time through the store.
  virtual std::vector<float> read_device(operand_id id, std::size_t count) = 0;

  virtual void sync() = 0;

private:
  std::atomic<operand_id> next_id_{1};
};

// What a tensor handle shares: its operand, its metadata, and a weak reference to the runtime, so a
// tensor that outlives its runtime fails cleanly instead of touching freed state.
struct tensor_node {
  tensor_node(std::weak_ptr<runtime_core> rt, operand_id id, shape_t shape, device where) noexcept
    : runtime(std::move(rt)), id(id), shape(std::move(shape)), where(where) {}

  ~tensor_node();

  tensor_node(const tensor_node&) = delete;
  tensor_node& operator=(const tensor_node&) = delete;

  // The live runtime, or ag::error naming `what` when the runtime is gone.
  std::shared_ptr<runtime_core> live(const char* what) const;

  static tensor make(std::weak_ptr<runtime_core> rt, operand_id id, shape_t shape, device where) {
    return tensor{std::make_shared<tensor_node>(std::move(rt), id, std::move(shape), where)};
  }

  // The node of t; ag::error naming `what` for an undefined handle.
  static const tensor_node& of(const tensor& t, const char* what) { return t.checked(what); }

  std::weak_ptr<runtime_core> runtime;
  operand_id id;
  shape_t shape;
  device where;
  ag::dtype type = ag::dtype::float32;
};

// Names the result of the operator `req` describes (req.out, a fresh id), submits it and returns
// the handle of that result: a tensor of `shape` on req.where.
tensor submit(const std::shared_ptr<runtime_core>& rt, op_request&& req, shape_t shape);

} // namespace ag::detail
