// The model's view of a running runtime: what a tensor needs to submit operators, release its
// operand and read its value. The controller in actors/ implements it; the model stays free of
// actors (apps -> actors -> {ipc, cuda} -> graph).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
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

  // Where an upload of `bytes` writes its values so that they are copied once (into the store,
  // not into the request): a store range that the request then names (op_request::staged), or
  // nothing when the store should keep its room for the executor (the values then travel in the
  // request). A range that is not submitted goes back through unstage.
  struct staging {
    uint64_t offset;
    std::shared_ptr<std::byte> data; // keeps the store mapped while the values are written
  };
  virtual std::optional<staging> stage(uint64_t bytes) = 0;
  virtual void unstage(uint64_t offset, uint64_t bytes) noexcept = 0;

  virtual void submit(op_request&& req) = 0;
  // A collective whose results (req.outs) the caller named with next_id().
  virtual void submit(collective_request&& req) = 0;
  virtual void release(operand_id id) noexcept = 0;

  // Where a read copies the bytes to: called once, when they are there (so that a read whose
  // producer failed throws that failure, not the host's lack of memory for the result).
  using destination = std::function<char*()>;

  // Waits until operand id (a cpu tensor of `bytes` bytes) is written and copies it out.
  virtual void read(operand_id id, uint64_t bytes, const destination& into) = 0;

  // Waits until operand id (a cpu tensor of `bytes` bytes) is written and returns where its bytes
  // lie in the host store, kept mapped while the pointer (or a copy) lives, even past the
  // runtime. The caller keeps the operand alive as long (its release frees the range).
  virtual std::shared_ptr<const std::byte> view(operand_id id, uint64_t bytes) = 0;

  // True when a tensor of `bytes` is too large to stage whole in the host store: it is moved and
  // read through the store in pieces.
  virtual bool piecewise(uint64_t bytes) const noexcept = 0;

  // Copies out device operand id (`bytes` bytes) a piece at a time through the store.
  virtual void read_device(operand_id id, uint64_t bytes, const destination& into) = 0;

  // Where device operand id (`bytes` bytes, on a lane of this process) lies once its writer ran,
  // keeping the memory of its lane's stream (past the runtime's end); on a CUDA device, `stream`
  // (tensor::device_bytes) waits for the writer. The caller keeps the operand alive as long.
  virtual std::shared_ptr<void> share(operand_id id, uint64_t bytes, std::intptr_t stream) = 0;

  virtual void sync() = 0;

private:
  std::atomic<operand_id> next_id_{1};
};

// What a tensor handle shares: its operand, its metadata, and a weak reference to the runtime, so a
// tensor that outlives its runtime fails cleanly instead of touching freed state. A view shares
// its base's operand (and keeps the base, which releases it): its elements lie in that operand at
// `offset` with `strides`.
struct tensor_node {
  tensor_node(std::weak_ptr<runtime_core> rt, operand_id id, shape_t shape, device where,
              dtype type) noexcept
    : runtime(std::move(rt)), id(id), shape(std::move(shape)), where(where), type(type) {}

  ~tensor_node();

  tensor_node(const tensor_node&) = delete;
  tensor_node& operator=(const tensor_node&) = delete;

  // The live runtime, or ag::error naming `what` when the runtime is gone.
  std::shared_ptr<runtime_core> live(const char* what) const;

  static tensor make(std::weak_ptr<runtime_core> rt, operand_id id, shape_t shape, device where,
                     dtype type) {
    return tensor{std::make_shared<tensor_node>(std::move(rt), id, std::move(shape), where, type)};
  }

  // A view of t's elements: `shape`, read at `offset` with `strides` (in elements of t's operand).
  // The handle of the operand itself when that is what the view reads.
  static tensor view(const tensor& t, shape_t shape, shape_t strides, int64_t offset);

  // The node of t; ag::error naming `what` for an undefined handle.
  static const tensor_node& of(const tensor& t, const char* what) { return t.checked(what); }

  // True when the tensor is its operand, whole and row-major (not a view that reads it otherwise).
  bool whole() const noexcept { return strides.empty(); }
  // The strides with which the tensor reads its operand.
  shape_t element_strides() const { return whole() ? contiguous_strides(shape) : strides; }

  std::weak_ptr<runtime_core> runtime;
  operand_id id;
  shape_t shape;
  device where;
  dtype type;
  std::shared_ptr<const tensor_node> base; // a view: the tensor whose operand it reads
  shape_t strides;                         // a view: per dimension; empty when whole()
  int64_t offset = 0;                      // a view: its first element in the operand
  uint64_t operand_elements = 0;           // a view: elements of the operand
};

// Names the result of the operator `req` describes (req.out, a fresh id), submits it and returns
// the handle of that result: a tensor of `shape` and req.type on req.where.
tensor submit(const std::shared_ptr<runtime_core>& rt, op_request&& req, shape_t shape);

// runtime::full and runtime::from_bytes, for the runtime whose devices are `devices` ("cpu,sim:0").
tensor full(const std::shared_ptr<runtime_core>& rt, const shape_t& shape, double value,
            const device& where, dtype type, const std::string& devices);
tensor from_bytes(const std::shared_ptr<runtime_core>& rt, const shape_t& shape, dtype type,
                  const void* data, std::size_t nbytes, const device& where,
                  const std::string& devices);

// runtime::uniform (kind 0) and runtime::normal (kind 1).
tensor random(const std::shared_ptr<runtime_core>& rt, uint64_t kind, const shape_t& shape,
              double a, double b, uint64_t seed, const device& where, dtype type,
              const std::string& devices);

// t as a tensor of its own (whole()): t itself, or a clone of the view.
tensor materialized(const tensor& t, const char* what);

} // namespace ag::detail
