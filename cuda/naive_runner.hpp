// naive_runner: runs operators in order on one kernel stream (the seed's NaiveRunner). Device
// operands live in its operand map (id -> memory from the stream); host operands are offsets into
// the tensor store. Every offset, size and id is checked before use, so a bad operator is an
// ag::error naming it, never a wild write.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cuda/export_wait.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/peer_directory.hpp"
#include "graph/op.hpp"

namespace ag {

// What an operator did with one of its operands, or with its scalars, while a step's calls were
// recorded (naive_runner::effects_into): enough to do it again for a later run of the same step
// (the same shapes, other ids, store ranges and scalars) without the operator's checks, and to
// bind the same way (actors/batch_runner_steps.cpp).
struct operand_effect {
  enum class what : uint8_t {
    scalars, // the binding takes its scalar, scalar2, m and n
    lookup,  // reads an existing device operand of `bytes` bytes
    create,  // allocates a device operand of `bytes` bytes
    host,    // reads or writes `bytes` bytes of the store at the operand's offset
  };
  what kind = what::scalars;
  uint8_t field = 0; // the operand: 0 out, 1 a, 2 b, 3 c
  bool bound = false; // its address is part of the binding
  uint32_t op = 0;    // the operator's index in its batch
  uint64_t bytes = 0;
  // A lookup of an operand a create of the same step made: 1 + that create's index among the
  // step's effects (its operand must be this one again); 0: one from before the step.
  uint32_t made_by = 0;
};

// The operand `field` of op (operand_effect::field).
inline const operand_ref& operand_of(const op_desc& op, uint8_t field) noexcept {
  return field == 0 ? op.out : field == 1 ? op.a : field == 2 ? op.b : op.c;
}

class naive_runner {
public:
  // With peers, it runs lane `lane` of its process: it publishes every operand it creates there
  // and reads peer lanes' operands from there (peer_copy, peer_sum). A read of another child's
  // export waits for it as `exports` says. in_controller: it runs in the controller's process
  // (thread mode), whose threads read its exports: they name the operand's address and this
  // stream's own event, not CUDA IPC handles.
  naive_runner(kernel_stream& stream, std::byte* store_base, std::size_t store_size,
               uint32_t lane = 0, peer_directory* peers = nullptr,
               export_wait_policy exports = {}, bool in_controller = false) noexcept
    : stream_(stream), store_base_(store_base), store_size_(store_size), lane_(lane),
      peers_(peers), exports_(std::move(exports)), in_controller_(in_controller) {}

  ~naive_runner();

  naive_runner(const naive_runner&) = delete;
  naive_runner& operator=(const naive_runner&) = delete;

  // Enqueues one operator on the stream. Throws ag::error naming the operator when an operand is
  // unknown, out of the store's bounds or of the wrong size, or when the stream fails.
  void run(const op_desc& op);

  // Frees a device operand (the seed's noHoldOperands); unknown ids are ignored, since an operand
  // whose producer failed was never created.
  void release(operand_id id) noexcept;

  // Leaves every operand's memory to the stream, which frees it when it goes (the stream outlives
  // the runner while another library shares that memory: tensor::device_bytes).
  void abandon() noexcept;

  // While `into` is set, every operand address an operator resolves, and its scalars, are appended
  // to it: what the calls a step makes depend on besides its operators' other fields (a step's
  // graph fits a later run of it when these are the same: actors/step_cache.hpp).
  void bind_into(std::vector<uint64_t>* into) noexcept { bound_ = into; }
  // While `into` is set, what each operator does with its operands is appended to it, for
  // operator `at` (set before each): a step's effects (operand_effect). complete() says whether
  // every bound address came with its effect since it was set (an operator of another kind, such
  // as a peer read, binds without one: such a step runs its operators from then on).
  void effects_into(std::vector<operand_effect>* into) noexcept {
    effects_ = into;
    effects_complete_ = true;
  }
  void at(std::size_t op) noexcept { effect_op_ = static_cast<uint32_t>(op); }
  bool complete() const noexcept { return effects_complete_; }

  // What a later run of a recorded step does in place of its operators (naive_runner_steps.cpp).
  // The device operand `id` when it holds `bytes` bytes, else null.
  void* find(operand_id id, std::size_t bytes) const noexcept;
  bool holds(operand_id id) const noexcept { return operands_.count(id) != 0; }
  // Allocates operand `id` of `bytes` bytes as an operator's output does (the caller checked
  // that it does not exist).
  void* create(operand_id id, std::size_t bytes);
  // Frees operand `id` as release() does, but keeps its address for lookups until bury():
  // while `prebound`, the step's operators then run over what was made for them.
  void retire(operand_id id) noexcept;
  // While set, an output that exists already is taken as it is (made by create()), and an input
  // retired since the last bury() is found.
  void prebound(bool on) noexcept { prebound_ = on; }
  void bury() noexcept { retired_.clear(); }

  // Bytes of device memory held by live operands.
  std::size_t live_bytes() const noexcept { return live_bytes_; }
  std::size_t live_operands() const noexcept { return operands_.size(); }

private:
  struct buffer {
    void* ptr;
    std::size_t bytes;
  };

  // The memory of an existing operand of `bytes` bytes.
  void* input(const op_desc& op, const operand_ref& ref, std::size_t bytes) const;
  // The memory a new operand of `bytes` bytes is written to (allocated for device operands).
  void* output(const op_desc& op, const operand_ref& ref, std::size_t bytes);
  // A piece (op.n != 0): elements [m, m + count) of the device operand `ref` of n elements. As the
  // destination, the piece at m = 0 creates it.
  void* piece(const op_desc& op, const operand_ref& ref, bool destination);
  // An elementwise operator (graph/op_table.hpp), over its layout.
  void run_elementwise(const op_desc& op);
  // The reduction, rows, index and random operators (cuda/row_call.hpp).
  void run_rows(const op_desc& op);
  // A matmul with a layout: batched, broadcast, transposed operands (cuda/matmul_call.hpp).
  void run_matmul(const op_desc& op);
  // concat: rows side by side.
  void run_concat(const op_desc& op);
  // An operand of `elements` elements of t (exactly, or at least), at element `offset`.
  const void* strided_input(const op_desc& op, const operand_ref& ref, dtype t, uint64_t elements,
                            int64_t offset, bool exact) const;
  // peer_copy, peer_sum, peer_export, peer_forget.
  void run_peer(const op_desc& op);
  // A peer's operand where it lies; ptr null: its exporter went before it wrote the export.
  peer_directory::operand peer_operand(const op_desc& op, uint32_t lane, operand_id id,
                                       uint64_t slot);
  peer_directory::operand imported(const op_desc& op, uint32_t lane, operand_id id, uint64_t slot);

  void* bound(void* p) const {
    if (bound_) {
      bound_->push_back(reinterpret_cast<uintptr_t>(p));
      effects_complete_ = effects_complete_ && effect_bound_;
      effect_bound_ = false;
    }
    return p;
  }
  // Appends op's effect on `ref` (which must be one of op's fields) and binds p when `binds`.
  void* effect(const op_desc& op, const operand_ref& ref, operand_effect::what kind,
               std::size_t bytes, void* p, bool binds) const;
  const buffer* found(operand_id id) const noexcept;
  // Frees operand id's memory and forgets it; what it held, or nothing when there is no such.
  std::optional<buffer> free_operand(operand_id id) noexcept;

  kernel_stream& stream_;
  std::byte* store_base_;
  std::size_t store_size_;
  uint32_t lane_;
  peer_directory* peers_;
  export_wait_policy exports_;
  bool in_controller_;
  std::unordered_map<operand_id, buffer> operands_;
  std::size_t live_bytes_ = 0;
  std::vector<uint64_t>* bound_ = nullptr;
  std::vector<operand_effect>* effects_ = nullptr;
  uint32_t effect_op_ = 0;
  mutable bool effects_complete_ = true;
  mutable bool effect_bound_ = false; // the next bound() comes with an effect
  bool prebound_ = false;
  std::vector<std::pair<operand_id, buffer>> retired_; // retire()d since the last bury()
  bool skip_host_ = false; // the operator being run is a copy: its store range is not bound
};

} // namespace ag
