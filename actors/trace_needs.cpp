#include "actors/trace_needs.hpp"

#include <algorithm>
#include <variant>

#include "ipc/wire.hpp"

namespace ag {

bool has_direct_transfers(const trace::file& t) {
  auto direct = [](const batch& b) {
    return std::any_of(b.ops.begin(), b.ops.end(), [](const op_desc& op) {
      return op.kind == op_kind::peer_copy || op.kind == op_kind::peer_sum;
    });
  };
  for (const auto& r : t.records)
    if (const auto* l = std::get_if<trace::local_rec>(&r.body); l && direct(l->b))
      return true;
  return false;
}

bool has_exports(const trace::file& t) {
  for (const auto& r : t.records) {
    const auto* f = std::get_if<trace::frame_rec>(&r.body);
    if (!f || f->type != wire::msg_type::execute)
      continue;
    wire::execute_msg m;
    wire::decode(f->body.data(), f->body.size(), m); // parse checked it decodes
    for (const auto& b : m.batches)
      for (const auto& op : b.ops)
        if (op.kind == op_kind::peer_export)
          return true;
  }
  return false;
}

std::size_t ring_bytes_for(const trace::file& t, const replay_options& opt) {
  if (opt.transport != transport::shared_memory)
    return 0;
  std::size_t largest = 0;
  for (const auto& r : t.records)
    if (auto* f = std::get_if<trace::frame_rec>(&r.body))
      largest = std::max(largest, f->body.size());
  std::size_t ring = graph_option{}.ring_bytes;
  while (ring / 2 < largest + wire::header_size + 64)
    ring *= 2;
  return ring;
}

} // namespace ag
