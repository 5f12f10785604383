#include "cuda/naive_runner.hpp"

#include <cstring>
#include <limits>
#include <string>

#include <unistd.h>

#include "actorgraph/error.hpp"
#include "cuda/peer_directory.hpp"
#include "graph/export_slot.hpp"
#include "graph/op_table.hpp"

namespace ag {

namespace {

// What a read of an exporter that went writes: the controller taints the result with the failure.
const double lost_value = std::numeric_limits<double>::quiet_NaN();

// count elements of t in bytes, or an error for counts no memory could hold (its words are made
// only then: this is on every operator's path).
std::size_t bytes_of(const op_desc& op, dtype t, uint64_t count) {
  const std::size_t size = size_of(t);
  if (size == 0 || count > std::numeric_limits<std::size_t>::max() / (2 * size))
    throw error(describe(op) + ": element count " + std::to_string(count) + " is too large");
  return static_cast<std::size_t>(count) * size;
}

std::size_t bytes_of(const op_desc& op, uint64_t count) { return bytes_of(op, op.type, count); }

uint64_t product(const op_desc& op, uint64_t x, uint64_t y) {
  if (x != 0 && y > std::numeric_limits<uint64_t>::max() / x)
    throw error(describe(op) + ": matmul dimensions overflow");
  return x * y;
}

} // namespace

naive_runner::~naive_runner() {
  for (auto& [id, buf] : operands_) {
    if (peers_)
      peers_->withdraw(lane_, id);
    stream_.deallocate(buf.ptr, buf.bytes);
  }
}

void naive_runner::abandon() noexcept {
  for (auto& [id, buf] : operands_) {
    if (peers_)
      peers_->withdraw(lane_, id);
    stream_.leave(buf.ptr, buf.bytes);
  }
  operands_.clear();
  live_bytes_ = 0;
}

void* naive_runner::input(const op_desc& op, const operand_ref& ref, std::size_t bytes) const {
  if (ref.on_host()) {
    if (ref.offset > store_size_ || bytes > store_size_ - ref.offset)
      throw error(describe(op) + ": store range [" + std::to_string(ref.offset) + ", +"
                  + std::to_string(bytes) + ") lies outside the store of "
                  + std::to_string(store_size_) + " bytes");
    // A copy's store range changes from one run of a step to the next: the copy runs outside
    // the step's graphs (recorded_call::host), and its range is not part of their binding.
    return effect(op, ref, operand_effect::what::host, bytes, store_base_ + ref.offset,
                  !skip_host_);
  }
  const buffer* it = found(ref.id);
  if (!it)
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " is not on "
                + stream_.device().str());
  if (it->bytes != bytes)
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " holds "
                + std::to_string(it->bytes) + " bytes, the op needs " + std::to_string(bytes));
  return effect(op, ref, operand_effect::what::lookup, bytes, it->ptr, true);
}

void* naive_runner::output(const op_desc& op, const operand_ref& ref, std::size_t bytes) {
  if (ref.on_host())
    return input(op, ref, bytes);
  if (const buffer* it = found(ref.id)) {
    if (!prebound_ || it->bytes != bytes) // prebound: made (and maybe retired) for this run
      throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " already exists on "
                  + stream_.device().str());
    return effect(op, ref, operand_effect::what::create, bytes, it->ptr, true);
  }
  return effect(op, ref, operand_effect::what::create, bytes, create(ref.id, bytes), true);
}

void* naive_runner::piece(const op_desc& op, const operand_ref& ref, bool destination) {
  if (ref.on_host())
    throw error(describe(op) + ": a piece's operand must be on the device");
  if (op.m > op.n || op.count > op.n - op.m)
    throw error(describe(op) + ": piece [" + std::to_string(op.m) + ", +" + std::to_string(op.count)
                + ") lies outside its operand of " + std::to_string(op.n) + " elements");
  const auto whole = bytes_of(op, op.n);
  void* p = destination && op.m == 0 ? output(op, ref, whole) : input(op, ref, whole);
  return static_cast<char*>(p) + op.m * size_of(op.type);
}

void naive_runner::run(const op_desc& op) {
  if (bound_) { // what a kernel of op takes besides op's other fields and its operands' addresses
    uint64_t bits[2];
    std::memcpy(&bits[0], &op.scalar, sizeof bits[0]);
    std::memcpy(&bits[1], &op.scalar2, sizeof bits[1]);
    bound_->insert(bound_->end(), {bits[0], bits[1], op.m, op.n});
    if (effects_)
      effects_->push_back({operand_effect::what::scalars, 0, true, effect_op_, 0});
  }
  skip_host_ = op.kind == op_kind::copy;
  if (auto why = malformed(op); !why.empty() && op.kind != op_kind::upload) // as decoders do
    throw error(describe(op) + ": " + why);
  // A kernel reads and writes device memory (or host memory on cpu/sim streams, where the store is
  // the device's memory too); only copy may cross between the store and a CUDA device.
  const bool host_stream = stream_.device().type != device::kind::cuda;
  if (!host_stream && op.kind != op_kind::copy && op.kind != op_kind::peer_sum
      && op.kind != op_kind::peer_copy && op.kind != op_kind::peer_export
      && (op.out.on_host() || op.a.on_host() || op.b.on_host() || op.c.on_host()))
    throw error(describe(op) + ": a kernel on " + stream_.device().str()
                + " cannot use the host store directly");
  if (is_elementwise(op.kind))
    return run_elementwise(op);
  switch (info(op.kind).family) {
    case op_family::reduction:
    case op_family::rows:
    case op_family::index:
    case op_family::random:
      if (op.kind != op_kind::sum)
        return run_rows(op);
      break;
    default: break;
  }
  auto f = [](void* p) { return static_cast<float*>(p); };
  if (!takes(info(op.kind).dtypes, op.type))
    throw error(describe(op) + ": takes " + dtypes_string(info(op.kind).dtypes) + ", not "
                + to_string(op.type));
  switch (op.kind) {
    case op_kind::fill: {
      const auto bytes = bytes_of(op, op.count);
      stream_.fill(op.type, op.n != 0 ? piece(op, op.out, true) : output(op, op.out, bytes),
                   op.count, op.scalar);
      return;
    }
    case op_kind::sum: {
      auto* a = f(input(op, op.a, bytes_of(op, op.count)));
      stream_.sum(a, f(output(op, op.out, sizeof(float))), op.count);
      return;
    }
    case op_kind::matmul: {
      if (!op.layout.empty())
        return run_matmul(op);
      if (op.m >= (uint64_t{1} << 62) || op.k >= (uint64_t{1} << 62) || op.n >= (uint64_t{1} << 62))
        throw error(describe(op) + ": matmul dimensions past 2^62");
      const bool empty = op.m == 0 || op.n == 0; // an empty result reads nothing
      const void* a = empty ? nullptr : input(op, op.a, bytes_of(op, product(op, op.m, op.k)));
      const void* b = empty ? nullptr : input(op, op.b, bytes_of(op, product(op, op.k, op.n)));
      void* out = output(op, op.out, bytes_of(op, product(op, op.m, op.n)));
      if (empty)
        return;
      stream_.matmul(plain_matmul(op.type, a, b, out, static_cast<int64_t>(op.m),
                                  static_cast<int64_t>(op.k), static_cast<int64_t>(op.n)));
      return;
    }
    case op_kind::copy: {
      const auto bytes = bytes_of(op, op.count);
      if (op.n != 0) { // a piece of a transfer larger than the store: one side is a store range
        if (op.out.on_host() == op.a.on_host())
          throw error(describe(op) + ": a piece copies between the store and a device operand");
        if (op.a.on_host())
          stream_.copy(piece(op, op.out, true), false, input(op, op.a, bytes), true, bytes);
        else
          stream_.copy(input(op, op.out, bytes), true, piece(op, op.a, false), false, bytes);
        return;
      }
      void* src = input(op, op.a, bytes);
      void* dst = output(op, op.out, bytes);
      stream_.copy(dst, op.out.on_host(), src, op.a.on_host(), bytes);
      return;
    }
    case op_kind::peer_copy:
    case op_kind::peer_sum:
    case op_kind::peer_export:
    case op_kind::peer_forget: return run_peer(op);
    case op_kind::upload:
    case op_kind::await: break; // the batch runner's, on the completion board
    default: break;              // the elementwise operators ran above
  }
  throw error(describe(op) + ": not an operator a runner executes");
}

// Operand `id` of lane `lane`, where this runner can read it: its own, a peer lane's of this
// process (the peer directory), or, with an export slot, another process's (mapped through CUDA
// IPC).
peer_directory::operand naive_runner::peer_operand(const op_desc& op, uint32_t lane, operand_id id,
                                                   uint64_t slot) {
  if (lane == lane_) { // its own (a group names every part, each with its export)
    auto it = operands_.find(id);
    if (it == operands_.end())
      throw error(describe(op) + ": operand #" + std::to_string(id) + " is not on "
                  + stream_.device().str());
    return {bound(it->second.ptr), it->second.bytes, stream_.device()};
  }
  if (slot != operand_ref::no_offset)
    return imported(op, lane, id, slot);
  // No export: a trace recorded before reads between lanes of one process went through exports,
  // replayed in-process (its recorded acknowledgements order the read).
  if (!peers_)
    throw error(describe(op) + ": " + stream_.device().str() + " cannot read lane "
                + std::to_string(lane) + "'s operands (no peer lanes in this process, and no "
                  "export of it)");
  return peers_->find(lane, id, describe(op));
}

// Operand `id` of lane `lane`, exported at `slot`: once the export is written (it may be sent
// with this read), found (a lane of this process: in the peer directory; another child's: its
// allocation mapped), and this stream made to wait for the exporter's event, so that what runs
// next reads it after its writer.
peer_directory::operand naive_runner::imported(const op_desc& op, uint32_t lane, operand_id id,
                                               uint64_t slot) {
  auto* at = static_cast<std::byte*>(input(op, {0, slot}, sizeof(export_slot)));
  const auto what = [&] {
    return describe(op) + ": the export of operand #" + std::to_string(id) + " of lane "
           + std::to_string(lane) + " (slot at store@" + std::to_string(slot) + ")";
  };
  switch (wait_for_export(at, exports_)) {
    case export_state::ready: break;
    case export_state::gone: return {nullptr, 0, device::cuda(0)};
    case export_state::pending:
      throw error(what() + " was not written within " + std::to_string(exports_.timeout.count())
                  + " ms");
    default: throw error(what() + " holds no valid state");
  }
  const export_slot x = export_slots::read(at);
  if (x.lane != lane || x.pid == 0)
    throw error(what() + " was written by lane " + std::to_string(x.lane) + ", pid "
                + std::to_string(x.pid));
  if (peers_ && x.pid == ::getpid()) { // a peer lane of this process
    auto found = peers_->find(lane, id, describe(op));
    stream_.wait_local(x.event);
    return found;
  }
  const auto* p = static_cast<const std::byte*>(stream_.import_memory(x.handle, lane));
  stream_.wait_export(x.event, lane);
  return {const_cast<std::byte*>(p) + x.offset, static_cast<std::size_t>(x.bytes),
          device::cuda(x.index)};
}

void naive_runner::run_peer(const op_desc& op) {
  if (op.kind == op_kind::peer_forget) {
    stream_.forget_imports(static_cast<uint32_t>(op.k));
    return;
  }
  if (op.kind == op_kind::peer_export) {
    const auto bytes = bytes_of(op, op.count);
    auto* at = static_cast<std::byte*>(output(op, op.out, sizeof(export_slot)));
    const void* p = input(op, op.a, bytes);
    export_slot x;
    if (peers_ || in_controller_) { // its readers are in this process: the peer directory's
      stream_.record_local(x.event);  // lanes, and the user's threads, which take the address
      x.offset = reinterpret_cast<uintptr_t>(p);
    } else {
      x.offset = stream_.export_memory(p, x.handle, x.event);
    }
    x.bytes = bytes;
    x.pid = static_cast<int32_t>(::getpid());
    x.lane = lane_;
    x.index = stream_.device().index;
    export_slots::publish(at, x);
    return;
  }
  if (op.out.on_host())
    throw error(describe(op) + ": the result of a direct transfer is a device operand");
  if (op.kind == op_kind::peer_copy) {
    const auto bytes = bytes_of(op, op.count);
    const auto src = peer_operand(op, static_cast<uint32_t>(op.k), op.a.id, op.b.offset);
    if (src.ptr != nullptr && src.bytes != bytes)
      throw error(describe(op) + ": operand #" + std::to_string(op.a.id) + " of lane "
                  + std::to_string(op.k) + " holds " + std::to_string(src.bytes)
                  + " bytes, the op needs " + std::to_string(bytes));
    void* dst = op.n != 0 ? piece(op, op.out, true) : output(op, op.out, bytes);
    if (src.ptr == nullptr) // its exporter went: the controller fails what this writes
      return stream_.fill(op.type, dst, op.count, lost_value);
    stream_.copy_peer(dst, src.ptr, src.dev, bytes);
    return;
  }
  // peer_sum: the group is k entries in the store at a's offset.
  if (op.k == 0 || op.k > kernel_stream::max_peer_parts)
    throw error(describe(op) + ": a group of " + std::to_string(op.k) + " parts (1 to "
                + std::to_string(kernel_stream::max_peer_parts) + " are possible)");
  const auto* group = static_cast<const peer_entry*>(
    input(op, op.a, static_cast<std::size_t>(op.k) * sizeof(peer_entry)));
  const float* parts[kernel_stream::max_peer_parts];
  device from[kernel_stream::max_peer_parts];
  bool lost = false;
  for (uint64_t r = 0; r < op.k && !lost; ++r) {
    const auto src = peer_operand(op, group[r].lane, group[r].id, group[r].slot);
    if ((lost = src.ptr == nullptr)) // its exporter went: the controller fails what this writes
      break;
    if (op.m > src.bytes / sizeof(float) || op.count > src.bytes / sizeof(float) - op.m)
      throw error(describe(op) + ": elements [" + std::to_string(op.m) + ", +"
                  + std::to_string(op.count) + ") lie outside operand #"
                  + std::to_string(group[r].id) + " of lane " + std::to_string(group[r].lane));
    parts[r] = static_cast<const float*>(src.ptr) + op.m;
    from[r] = src.dev;
  }
  auto* out = static_cast<float*>(output(op, op.out, bytes_of(op, op.count)));
  if (lost)
    return stream_.fill(dtype::float32, out, static_cast<std::size_t>(op.count), lost_value);
  stream_.sum_peers(out, parts, from, static_cast<std::size_t>(op.k),
                    static_cast<std::size_t>(op.count));
}

namespace {

// What op's operands and result must be, by its family (the caller checks the dtypes for the
// operator table); empty when they are.
std::string dtype_mismatch(const op_desc& op) {
  const op_family family = info(op.kind).family;
  const dtype in = family == op_family::select ? op.type : op.in_type;
  if (family == op_family::compare && op.type != dtype::uint8)
    return "a comparison's result is uint8";
  if (family == op_family::select && op.in_type != dtype::uint8)
    return "where's mask is uint8";
  if ((family == op_family::unary || family == op_family::binary) && op.type != in)
    return "its result and operands share one dtype";
  if (op.kind == op_kind::clone && op.type != op.in_type)
    return "a clone keeps the dtype";
  return {};
}

// Elements of an operand that the layout reads through `strides` (one per dimension) from
// `offset`: its last one + 1, or 0 when the shape has none. Throws for a negative stride or
// offset, and for an extent past 2^62.
uint64_t extent(const op_desc& op, const char* name, int64_t offset, const int64_t* strides) {
  const auto& shape = op.layout.shape;
  unsigned __int128 last = 0;
  if (offset < 0)
    throw error(describe(op) + ": operand " + name + " starts at a negative offset");
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0)
      return 0;
    if (strides[d] < 0)
      throw error(describe(op) + ": operand " + name + " has a negative stride");
    last += static_cast<unsigned __int128>(shape[d] - 1) * static_cast<uint64_t>(strides[d]);
  }
  last += static_cast<uint64_t>(offset);
  if (last >= (uint64_t{1} << 62))
    throw error(describe(op) + ": operand " + name + " reaches past 2^62 elements");
  return static_cast<uint64_t>(last) + 1;
}

} // namespace

// Operand ref read as `elements` elements of t (exactly that many with `exact`, at least that many
// otherwise), at its element `offset` (< elements): ag::error for an operand too small, or for
// bytes past 2^62.
const void* naive_runner::strided_input(const op_desc& op, const operand_ref& ref, dtype t,
                                        uint64_t elements, int64_t offset, bool exact) const {
  const uint64_t bytes = bytes_of(op, t, elements);
  const auto size = static_cast<int64_t>(size_of(t));
  if (elements == 0)
    offset = 0; // nothing is read: the offset points nowhere
  if (ref.on_host())
    return static_cast<const char*>(input(op, ref, static_cast<std::size_t>(bytes)))
           + offset * size;
  const buffer* it = found(ref.id);
  if (!it)
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " is not on "
                + stream_.device().str());
  if (it->bytes < bytes || (exact && it->bytes != bytes))
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " holds "
                + std::to_string(it->bytes) + " bytes, the op reads " + std::to_string(bytes));
  return static_cast<const char*>(
           effect(op, ref, operand_effect::what::lookup, it->bytes, it->ptr, true))
         + offset * size;
}

// An elementwise operator: every operand read through the layout must lie within it.
void naive_runner::run_elementwise(const op_desc& op) {
  const op_info& row = info(op.kind);
  const dtype checked = row.family == op_family::select ? op.type : op.in_type;
  if (!takes(row.dtypes, checked))
    throw error(describe(op) + ": takes " + dtypes_string(row.dtypes) + ", got "
                + to_string(checked));
  if (auto why = dtype_mismatch(op); !why.empty())
    throw error(describe(op) + ": " + why + " (result " + to_string(op.type) + ", operand "
                + to_string(op.in_type) + ")");
  const auto& l = op.layout;
  const std::size_t dims = l.shape.size();
  if (dims != 0) {
    uint64_t elements = 1;
    for (int64_t d : l.shape) {
      if (d < 0)
        throw error(describe(op) + ": its layout has a negative dimension");
      elements = d == 0 || elements == 0 ? 0 : product(op, elements, static_cast<uint64_t>(d));
    }
    if (elements != op.count || l.strides.size() != 3 * dims)
      throw error(describe(op) + ": its layout runs over " + std::to_string(elements)
                  + " elements with " + std::to_string(l.strides.size()) + " strides, for "
                  + std::to_string(op.count) + " elements of " + std::to_string(dims)
                  + " dimensions");
  }
  const int operands = operand_count(op.kind);
  const operand_ref* refs[3] = {&op.a, &op.b, &op.c};
  const int64_t offsets[3] = {l.a_offset, l.b_offset, l.c_offset};
  const char* names[3] = {"a", "b", "c"};
  const void* in[3] = {nullptr, nullptr, nullptr};
  for (int o = 0; o < operands; ++o) {
    const operand_ref& ref = *refs[o];
    const bool scalar = o == 1 && operands == 2 && ref.id == 0 && !ref.on_host();
    if (scalar)
      continue;
    const dtype t = o == 0 ? op.in_type : row.family == op_family::select ? op.type : op.in_type;
    if (dims == 0)
      in[o] = strided_input(op, ref, t, op.count, 0, true);
    else
      in[o] = strided_input(op, ref, t, extent(op, names[o], offsets[o], l.strides.data() + o * dims),
                            offsets[o], false);
  }
  void* out = output(op, op.out, bytes_of(op, op.count));
  if (op.count == 0)
    return;
  stream_.elementwise(make_elementwise_call(op, out, in[0], in[1], in[2]));
}

// The reductions, rows, index and random operators: each operand exactly as large as the op's
// fields say (graph/op.hpp).
void naive_runner::run_rows(const op_desc& op) {
  const op_info& row = info(op.kind);
  const op_family family = row.family;
  const dtype values = family == op_family::index ? op.type : op.in_type;
  if (!takes(row.dtypes, values))
    throw error(describe(op) + ": takes " + dtypes_string(row.dtypes) + ", got "
                + to_string(values));
  const dtype out_type = op.kind == op_kind::argmax ? dtype::int64 : values;
  if (op.type != out_type)
    throw error(describe(op) + ": its result is " + to_string(out_type) + ", not "
                + to_string(op.type));
  if (op.kind == op_kind::concat)
    return run_concat(op);
  if (family == op_family::index && op.in_type != dtype::int32 && op.in_type != dtype::int64)
    throw error(describe(op) + ": indices are int32 or int64, not " + to_string(op.in_type));
  const uint64_t mk = product(op, op.m, op.k);
  uint64_t a_elems = 0, out_elems = 0, b_elems = 0, c_elems = 0;
  switch (family) {
    case op_family::reduction:
      a_elems = product(op, mk, op.n);
      out_elems = product(op, op.m, op.n);
      break;
    case op_family::rows:
      a_elems = out_elems = op.kind == op_kind::softmax || op.kind == op_kind::log_softmax
                              ? product(op, mk, op.n)
                              : mk;
      b_elems = c_elems = op.k;
      break;
    case op_family::index:
      a_elems = mk;
      b_elems = op.kind == op_kind::embedding ? op.n : op.m;
      out_elems = op.kind == op_kind::embedding ? product(op, op.n, op.k) : op.m;
      break;
    default: out_elems = op.count; break;
  }
  if (op.count != out_elems)
    throw error(describe(op) + ": count " + std::to_string(op.count) + ", its fields make "
                + std::to_string(out_elems) + " elements");
  if (out_elems == 0) { // nothing to write (and k or m may be anything): nothing is read
    output(op, op.out, 0);
    return;
  }
  auto operand = [&](const operand_ref& ref, dtype t, uint64_t elements) -> const void* {
    if (ref.id == 0 && !ref.on_host())
      return nullptr;
    return input(op, ref, bytes_of(op, t, elements));
  };
  const void* a = family == op_family::random ? nullptr : operand(op.a, values, a_elems);
  const void* b = operand(op.b, family == op_family::index ? op.in_type : values, b_elems);
  const void* c = operand(op.c, values, c_elems);
  if (family == op_family::index && b == nullptr)
    throw error(describe(op) + ": no indices");
  void* out = output(op, op.out, bytes_of(op, out_elems));
  stream_.rows(make_row_call(op, out, a, b, c));
}

// concat: rows of a [m, k], b [m, n] and c [m, r] side by side, r what count leaves.
void naive_runner::run_concat(const op_desc& op) {
  const uint64_t width = op.m == 0 ? 0 : op.count / op.m;
  if ((op.m == 0 && op.count != 0)
      || (op.m != 0 && (op.count % op.m != 0 || op.k > width || op.n > width - op.k)))
    throw error(describe(op) + ": rows of " + std::to_string(op.k) + " and " + std::to_string(op.n)
                + " do not fit " + std::to_string(op.count) + " elements in " + std::to_string(op.m)
                + " rows");
  const uint64_t r = width - op.k - op.n;
  const void* a = input(op, op.a, bytes_of(op, product(op, op.m, op.k)));
  const void* b = input(op, op.b, bytes_of(op, product(op, op.m, op.n)));
  const bool has_c = op.c.id != 0 || op.c.on_host();
  if (!has_c && r != 0)
    throw error(describe(op) + ": no third operand for the rest of its rows");
  const void* c = has_c ? input(op, op.c, bytes_of(op, product(op, op.m, r))) : nullptr;
  void* out = output(op, op.out, bytes_of(op, op.count));
  if (op.count == 0)
    return;
  stream_.rows(make_row_call(op, out, a, b, c));
}

// A batched matmul over its layout: dimensions [batch..., m, n, k], a not moving along n nor b
// along m, every element either reads within its operand.
void naive_runner::run_matmul(const op_desc& op) {
  const auto& l = op.layout;
  const std::size_t dims = l.shape.size();
  if (dims < 3 || l.strides.size() != 3 * dims)
    throw error(describe(op) + ": a matmul layout has its batch dimensions then m, n and k");
  auto stride = [&](std::size_t operand, std::size_t d) { return l.strides[operand * dims + d]; };
  if (static_cast<uint64_t>(l.shape[dims - 3]) != op.m
      || static_cast<uint64_t>(l.shape[dims - 2]) != op.n
      || static_cast<uint64_t>(l.shape[dims - 1]) != op.k || stride(0, dims - 2) != 0
      || stride(1, dims - 3) != 0)
    throw error(describe(op) + ": its layout does not run over [m, n, k] = [" + std::to_string(op.m)
                + ", " + std::to_string(op.n) + ", " + std::to_string(op.k) + "]");
  for (int64_t d : l.shape)
    if (d < 0)
      throw error(describe(op) + ": its layout has a negative dimension");
  uint64_t elements = 1;
  for (std::size_t d = 0; d + 1 < dims; ++d) // every dimension but k is one of out's
    elements = product(op, elements, static_cast<uint64_t>(l.shape[d]));
  if (elements != op.count)
    throw error(describe(op) + ": count " + std::to_string(op.count) + ", its layout makes "
                + std::to_string(elements));
  const void* in[2] = {nullptr, nullptr};
  const operand_ref* refs[2] = {&op.a, &op.b};
  const int64_t offsets[2] = {l.a_offset, l.b_offset};
  if (op.count == 0) { // no product reads anything (and k can be anything)
    output(op, op.out, 0);
    return;
  }
  for (int o = 0; o < 2; ++o)
    in[o] = strided_input(op, *refs[o], op.type,
                          extent(op, o == 0 ? "a" : "b", offsets[o], l.strides.data() + o * dims),
                          offsets[o], false);
  void* out = output(op, op.out, bytes_of(op, op.count));
  stream_.matmul(make_matmul_call(op, out, in[0], in[1]));
}

void naive_runner::release(operand_id id) noexcept { (void)free_operand(id); }

std::optional<naive_runner::buffer> naive_runner::free_operand(operand_id id) noexcept {
  auto it = operands_.find(id);
  if (it == operands_.end())
    return std::nullopt;
  if (peers_)
    peers_->withdraw(lane_, id);
  const buffer freed = it->second;
  live_bytes_ -= freed.bytes;
  stream_.deallocate(freed.ptr, freed.bytes);
  operands_.erase(it);
  return freed;
}

} // namespace ag
