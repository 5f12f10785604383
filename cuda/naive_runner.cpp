#include "cuda/naive_runner.hpp"

#include <cstring>
#include <limits>
#include <string>

#include <unistd.h>

#include "actorgraph/error.hpp"
#include "cuda/peer_directory.hpp"
#include "graph/export_slot.hpp"

namespace ag {

namespace {

constexpr std::size_t float_bytes = sizeof(float);
// What a read of an exporter that went writes: the controller taints the result with the failure.
const float lost_value = std::numeric_limits<float>::quiet_NaN();

// count * 4, or an error for counts no memory could hold.
std::size_t bytes_of(const op_desc& op, uint64_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / (2 * float_bytes))
    throw error(describe(op) + ": element count " + std::to_string(count) + " is too large");
  return static_cast<std::size_t>(count) * float_bytes;
}

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

void* naive_runner::input(const op_desc& op, const operand_ref& ref, std::size_t bytes) const {
  if (ref.on_host()) {
    if (ref.offset > store_size_ || bytes > store_size_ - ref.offset)
      throw error(describe(op) + ": store range [" + std::to_string(ref.offset) + ", +"
                  + std::to_string(bytes) + ") lies outside the store of "
                  + std::to_string(store_size_) + " bytes");
    return store_base_ + ref.offset;
  }
  auto it = operands_.find(ref.id);
  if (it == operands_.end())
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " is not on "
                + stream_.device().str());
  if (it->second.bytes != bytes)
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " holds "
                + std::to_string(it->second.bytes) + " bytes, the op needs "
                + std::to_string(bytes));
  return it->second.ptr;
}

void* naive_runner::output(const op_desc& op, const operand_ref& ref, std::size_t bytes) {
  if (ref.on_host())
    return input(op, ref, bytes);
  if (operands_.count(ref.id) != 0)
    throw error(describe(op) + ": operand #" + std::to_string(ref.id) + " already exists on "
                + stream_.device().str());
  void* p = stream_.allocate(bytes);
  operands_.emplace(ref.id, buffer{p, bytes});
  live_bytes_ += bytes;
  if (peers_)
    peers_->publish(lane_, ref.id, {p, bytes, stream_.device()});
  return p;
}

float* naive_runner::piece(const op_desc& op, const operand_ref& ref, bool destination) {
  if (ref.on_host())
    throw error(describe(op) + ": a piece's operand must be on the device");
  if (op.m > op.n || op.count > op.n - op.m)
    throw error(describe(op) + ": piece [" + std::to_string(op.m) + ", +" + std::to_string(op.count)
                + ") lies outside its operand of " + std::to_string(op.n) + " elements");
  const auto whole = bytes_of(op, op.n);
  void* p = destination && op.m == 0 ? output(op, ref, whole) : input(op, ref, whole);
  return static_cast<float*>(p) + op.m;
}

void naive_runner::run(const op_desc& op) {
  // A kernel reads and writes device memory (or host memory on cpu/sim streams, where the store is
  // the device's memory too); only copy may cross between the store and a CUDA device.
  const bool host_stream = stream_.device().type != device::kind::cuda;
  if (!host_stream && op.kind != op_kind::copy && op.kind != op_kind::peer_sum
      && op.kind != op_kind::peer_copy && op.kind != op_kind::peer_export
      && (op.out.on_host() || op.a.on_host() || op.b.on_host()))
    throw error(describe(op) + ": a kernel on " + stream_.device().str()
                + " cannot use the host store directly");
  auto f = [](void* p) { return static_cast<float*>(p); };
  switch (op.kind) {
    case op_kind::fill: {
      const auto bytes = bytes_of(op, op.count);
      stream_.fill(op.n != 0 ? piece(op, op.out, true) : f(output(op, op.out, bytes)), op.count,
                   op.scalar);
      return;
    }
    case op_kind::add:
    case op_kind::sub:
    case op_kind::mul:
    case op_kind::div: {
      const auto bytes = bytes_of(op, op.count);
      auto* a = f(input(op, op.a, bytes));
      auto* b = f(input(op, op.b, bytes));
      stream_.binary(op.kind, a, b, f(output(op, op.out, bytes)), op.count);
      return;
    }
    case op_kind::relu: {
      const auto bytes = bytes_of(op, op.count);
      auto* a = f(input(op, op.a, bytes));
      stream_.relu(a, f(output(op, op.out, bytes)), op.count);
      return;
    }
    case op_kind::sum: {
      auto* a = f(input(op, op.a, bytes_of(op, op.count)));
      stream_.sum(a, f(output(op, op.out, float_bytes)), op.count);
      return;
    }
    case op_kind::matmul: {
      auto* a = f(input(op, op.a, bytes_of(op, product(op, op.m, op.k))));
      auto* b = f(input(op, op.b, bytes_of(op, product(op, op.k, op.n))));
      auto* out = f(output(op, op.out, bytes_of(op, product(op, op.m, op.n))));
      stream_.matmul(a, b, out, op.m, op.k, op.n);
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
    return {it->second.ptr, it->second.bytes, stream_.device()};
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
    if (peers_) // its readers are lanes of this process: they find it in the peer directory
      stream_.record_local(x.event);
    else
      x.offset = stream_.export_memory(p, x.handle, x.event);
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
      return stream_.fill(static_cast<float*>(dst), op.count, lost_value);
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
    if (op.m > src.bytes / float_bytes || op.count > src.bytes / float_bytes - op.m)
      throw error(describe(op) + ": elements [" + std::to_string(op.m) + ", +"
                  + std::to_string(op.count) + ") lie outside operand #"
                  + std::to_string(group[r].id) + " of lane " + std::to_string(group[r].lane));
    parts[r] = static_cast<const float*>(src.ptr) + op.m;
    from[r] = src.dev;
  }
  auto* out = static_cast<float*>(output(op, op.out, bytes_of(op, op.count)));
  if (lost)
    return stream_.fill(out, static_cast<std::size_t>(op.count), lost_value);
  stream_.sum_peers(out, parts, from, static_cast<std::size_t>(op.k),
                    static_cast<std::size_t>(op.count));
}

void naive_runner::release(operand_id id) noexcept {
  auto it = operands_.find(id);
  if (it == operands_.end())
    return;
  if (peers_)
    peers_->withdraw(lane_, id);
  live_bytes_ -= it->second.bytes;
  stream_.deallocate(it->second.ptr, it->second.bytes);
  operands_.erase(it);
}

} // namespace ag
