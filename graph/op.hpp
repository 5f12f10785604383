// The operator vocabulary shared by the executor and every runner: what the user asked for
// (op_request, the seed's Operator as the GraphConstructor builds it) and what a runner executes
// (op_desc, inside a batch: the seed's Execute(ops, noHoldOperands)). One schema per message type,
// written once as a CAF inspect overload, serves local messages and the wire.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/dtype.hpp"

namespace ag {

enum class op_kind : uint8_t {
  fill = 0, // out[i] = scalar
  add,      // out = a + b
  sub,      // out = a - b
  mul,      // out = a * b
  div,      // out = a / b
  matmul,   // out[m,n] = a[m,k] x b[k,n]
  relu,     // out = max(a, 0)
  sum,      // out[0] = sum of a's count elements
  copy,     // out = a, either side on the host store or on the device
  upload,   // user data -> out (op_request only; the executor turns it into store writes)
  // Direct transfers between device lanes of one process (peers: CUDA GPUs with peer access,
  // sim devices with graph_option::sim_peers), on the destination's lane, reading the source's
  // memory where it lies (cuda/peer_directory.hpp):
  peer_copy, // out = operand a of lane k (count elements); with n != 0, a piece: out has n
             // elements and a fills [m, m + count); the piece at m = 0 creates it. With b a
             // store range, lane k is a child process: b holds a's export (peer_export)
  peer_sum,  // out[i] = sum over the group of operand g[i + m] (count elements), g in the
             // group's order: a is a store range of k peer_entry records
  // Across child processes (CUDA IPC), on the source's lane: operand a (count elements) is
  // exported into the store range out (an export_slot, graph/export_slot.hpp) for peer_copy and
  // peer_sum to import.
  peer_export,
  // Every import of lane k's memory is closed (that lane's child is gone).
  peer_forget,
  // The runner waits on the completion board until lane k acknowledged its operator m (or failed,
  // or the runtime stops), having published the operators it ran before: how the planner orders
  // an operator after another local lane's without a round trip through the executor.
  await,
  // Elementwise, on any dtype the operator table (graph/op_table.hpp) allows, over op_desc::layout
  // when its operands are broadcast or strided views:
  maximum, // out = max(a, b), NaN if either is
  minimum,
  pow,     // out = a ^ scalar
  eq,      // out (uint8) = a == b; in_type is a's and b's dtype
  ne,
  lt,
  le,
  gt,
  ge,
  where,   // out = a ? b : c; a is uint8
  neg,
  abs,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  silu,
  gelu,    // k = 0: with erf; k = 1: the tanh approximation
  cast,    // out (type) = a (in_type), as static_cast with NaN -> 0 and saturation for integers
  clone,   // out = a, contiguous (a view made into a tensor of its own)
  // Over a contiguous a read as [m, k, n] (m outer, k the dimension it runs along, n inner):
  reduce_sum,  // out [m, n] = the sum over k
  reduce_mean,
  reduce_max,  // NaN if any is
  argmax,      // out (int64) [m, n]: the first index of the largest (of a NaN, if any)
  softmax,     // out [m, k, n]
  log_softmax,
  // Over the rows of a contiguous a [m, k]; scalar is eps; b (weight) and c (bias), [k] each, may
  // be missing (id 0):
  layer_norm,
  rms_norm,
  // Indexed: b holds int32 or int64 indices (in_type).
  embedding,   // out [n, k] = rows b[0 .. n) of the table a [m, k]
  gather,      // out [m] = a[r, b[r]] for a [m, k]
  // out: count elements of the stream of seed m from element n (graph/philox.hpp): k = 0
  // uniform in [scalar, scalar2), k = 1 normal with mean scalar and deviation scalar2.
  random,
  // out [m, k + n + r] row by row: a's row [k], b's [n], c's [r] (r = count / m - k - n; c may
  // be missing when r is 0), a, b and c contiguous, of any dtype.
  concat,
};

constexpr std::size_t op_kind_count = 49;

// One entry of a peer_sum's group, as the planner writes it into the store: an operand of a lane,
// found in this process's peer directory, or (slot != no_offset) exported at that store offset.
struct peer_entry {
  uint32_t lane = 0;
  uint32_t reserved = 0;
  uint64_t id = 0;
  uint64_t slot = std::numeric_limits<uint64_t>::max();
};
static_assert(sizeof(peer_entry) == 24);


// "add", "matmul", ...; "op#N" for a value outside the enumeration.
std::string to_string(op_kind k);

using operand_id = uint64_t;

// Where an operand lives, as a runner sees it: in the runner's own operand map (device memory, by
// id), or in the host tensor store at a byte offset.
struct operand_ref {
  static constexpr uint64_t no_offset = std::numeric_limits<uint64_t>::max();

  operand_id id = 0;
  uint64_t offset = no_offset;

  bool on_host() const noexcept { return offset != no_offset; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, operand_ref& x) {
  return f(caf::meta::type_name("operand_ref"), x.id, x.offset);
}

// How an elementwise operator reads operands that are not all contiguous arrays of `count`
// elements (broadcasting, views): the shape it runs over (out's, written row-major), each operand's
// stride along each of its dimensions in elements (0 where it repeats), and where each operand's
// first element is. Empty (no dimensions): every operand is contiguous, of count elements.
struct op_layout {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // a's, then b's, then c's: 3 * shape.size()
  int64_t a_offset = 0;
  int64_t b_offset = 0;
  int64_t c_offset = 0;

  bool empty() const noexcept { return shape.empty(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_layout& x) {
  return f(caf::meta::type_name("op_layout"), x.shape, x.strides, x.a_offset, x.b_offset,
           x.c_offset);
}

// One operator as a runner executes it. Counts are elements of `type`.
struct op_desc {
  op_kind kind = op_kind::fill;
  operand_ref out;
  operand_ref a;
  operand_ref b; // an elementwise binary operator without b takes `scalar` as b
  uint64_t count = 0; // elements of out (sum: of a)
  uint64_t m = 0;     // matmul: a is [m,k], b is [k,n]
  uint64_t k = 0;     // elementwise with a scalar b: 1 when the scalar is the left operand
  uint64_t n = 0;
  // copy and fill with n != 0: a piece of a transfer larger than the store. The device-side
  // operand holds n elements and the piece is its elements [m, m + count); the piece at m = 0
  // creates it. The other side of a copy is a store range of count elements.
  double scalar = 0.0;
  dtype type = dtype::float32;    // of out, and of every operand unless in_type says otherwise
  dtype in_type = dtype::float32; // of a (and of b for comparisons; cast's source)
  operand_ref c;                  // where's third operand
  op_layout layout;
  double scalar2 = 0.0;           // random's second parameter
};

// An operator by its first fields (float32, no third operand, no layout).
inline op_desc make_op(op_kind kind, operand_ref out, operand_ref a, operand_ref b, uint64_t count,
                       uint64_t m, uint64_t k, uint64_t n, double scalar = 0.0) {
  op_desc op;
  op.kind = kind;
  op.out = out;
  op.a = a;
  op.b = b;
  op.count = count;
  op.m = m;
  op.k = k;
  op.n = n;
  op.scalar = scalar;
  return op;
}

// CAF 0.17 packs floats through an IEEE-754 encoder that loses -0, NaN and subnormals (and never
// finishes on an infinity), so the scalar travels as its 64 bits.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_desc& x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x.scalar, sizeof bits);
  uint64_t bits2 = 0;
  std::memcpy(&bits2, &x.scalar2, sizeof bits2);
  auto restore = caf::meta::load_callback([&]() -> caf::error {
    std::memcpy(&x.scalar, &bits, sizeof bits);
    std::memcpy(&x.scalar2, &bits2, sizeof bits2);
    return caf::none;
  });
  return f(caf::meta::type_name("op_desc"), x.kind, x.out, x.a, x.b, x.count, x.m, x.k, x.n, bits,
           x.type, x.in_type, x.c, x.layout, bits2, restore);
}

// What makes op unreadable, as "an operator of kind 40" ("" when nothing does): a kind outside
// the enumeration or one that never travels (upload), a dtype outside its enumeration, a layout
// whose strides do not fit its dimensions or with more than 8 of them. What it reads and writes is
// checked where it runs (cuda/naive_runner.cpp).
std::string malformed(const op_desc& op);

// Bytes of `count` elements of t; ag::error naming `what` when they would pass 2^62.
uint64_t bytes_of(dtype t, uint64_t count, const char* what);

// "matmul #7 (a=#5, b=#6)" for error messages.
std::string describe(const op_desc& op);

// One operator as the user's thread submits it to the executor, already validated.
struct op_request {
  op_kind kind = op_kind::fill;
  device where;            // where the result lives (copy: the target)
  operand_id out = 0;
  operand_id a = 0;
  operand_id b = 0;
  uint64_t count = 0;      // elements of out (sum: of a)
  uint64_t m = 0, k = 0, n = 0;
  double scalar = 0.0;
  dtype type = dtype::float32;
  dtype in_type = dtype::float32;
  operand_id c = 0;
  op_layout layout;
  double scalar2 = 0.0;
  std::vector<char> data; // upload only: count elements of type, as bytes
  // Upload only: the store range the user's thread wrote them into instead (runtime_core::stage),
  // which the executor then owns; no_offset: they are in data.
  uint64_t staged = operand_ref::no_offset;

  // Bytes of the result.
  uint64_t bytes() const;
  uint64_t out_elements() const noexcept {
    return kind == op_kind::sum ? 1 : count;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device& x) {
  return f(caf::meta::type_name("device"), x.type, x.index);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_request& x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x.scalar, sizeof bits);
  uint64_t bits2 = 0;
  std::memcpy(&bits2, &x.scalar2, sizeof bits2);
  auto restore = caf::meta::load_callback([&]() -> caf::error {
    std::memcpy(&x.scalar, &bits, sizeof bits);
    std::memcpy(&x.scalar2, &bits2, sizeof bits2);
    return caf::none;
  });
  return f(caf::meta::type_name("op_request"), x.kind, x.where, x.out, x.a, x.b, x.count, x.m, x.k,
           x.n, bits, x.type, x.in_type, x.c, x.layout, bits2, x.data, x.staged,
           restore);
}

// The executor's lanes, one per place operators run, each running its operators in order: lane 0
// is the cpu (the controller's own runner, over the host tensor store), lane i + 1 the runtime's
// device i (its place in runtime::devices()), served by a stream actor or a child process.
inline constexpr uint32_t cpu_lane = 0;

constexpr uint32_t device_lane(std::size_t device_index) noexcept {
  return static_cast<uint32_t>(device_index) + 1;
}

// What the executor sends a runner (one lane) per mailbox drain: the seed's Execute(ops,
// noHoldOperands). ops_before counts the operators the lane was sent before this batch, so a lane's
// acknowledgement "ops_after() done" says exactly which operators have run; the runner releases
// no_hold after running ops. step: the number of the step (runtime::mark_step) whose operators on
// this lane the batch holds, all of them or, when some had to wait for another lane, the next
// ones in order; 0: no step (no marks, or a step that a wait sent before its mark).
// On the wire a step's batch comes as shape and values (graph/step_shape.hpp): ops holds their
// shapes, and values value_words words of each operator's values; decoded, it has its operators
// whole again, or, where a child's decoder saw the shape before (wire::shape_memo), the shape it
// decoded then and this run's values, ops empty (materialize() makes them whole).
struct step_shape;
constexpr std::size_t value_words = 12; // of an operator's values (graph/step_shape.hpp)

struct batch {
  uint32_t lane = 0;
  uint64_t ops_before = 0;
  std::vector<op_desc> ops;
  std::vector<operand_id> no_hold;
  uint64_t step = 0;
  std::vector<uint64_t> values;
  std::shared_ptr<const step_shape> shape; // not on the wire: the decoder's

  std::size_t op_count() const noexcept { return shape ? values.size() / value_words : ops.size(); }
  uint64_t ops_after() const noexcept { return ops_before + op_count(); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch& x) {
  return f(caf::meta::type_name("batch"), x.lane, x.ops_before, x.step, x.ops, x.no_hold,
           x.values);
}

// A range of the host tensor store, in bytes.
struct store_range {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// The store ranges a device lane's batch reads (copies from the host), in operator order: what a
// node's child must be sent before it runs the batch, since its store is its node's own.
std::vector<store_range> host_reads(const batch& b);
// The store ranges it writes (copies to the host): what a node's child sends back before it
// acknowledges the batch.
std::vector<store_range> host_writes(const batch& b);

} // namespace ag
