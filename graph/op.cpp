#include "graph/op.hpp"

#include <array>

namespace ag {

std::string to_string(op_kind k) {
  static constexpr std::array<const char*, op_kind_count> names{
    "fill", "add", "sub", "mul", "div", "matmul", "relu", "sum", "copy", "upload", "peer_copy",
    "peer_sum", "peer_export", "peer_forget", "await"};
  const auto i = static_cast<std::size_t>(k);
  return i < names.size() ? names[i] : "op#" + std::to_string(i);
}

namespace {

std::string ref(const operand_ref& r) {
  return r.on_host() ? "store@" + std::to_string(r.offset) : "#" + std::to_string(r.id);
}

} // namespace

std::string describe(const op_desc& op) {
  std::string s = to_string(op.kind) + " -> " + ref(op.out);
  if ((op.kind == op_kind::copy || op.kind == op_kind::fill || op.kind == op_kind::peer_copy)
      && op.n != 0)
    s += " [piece " + std::to_string(op.m) + "+" + std::to_string(op.count) + " of "
         + std::to_string(op.n) + "]";
  switch (op.kind) {
    case op_kind::fill:
    case op_kind::upload: return s;
    case op_kind::relu:
    case op_kind::sum:
    case op_kind::copy: return s + " (a=" + ref(op.a) + ")";
    case op_kind::peer_copy: return s + " (a=#" + std::to_string(op.a.id) + " of lane "
                                    + std::to_string(op.k) + ")";
    case op_kind::peer_sum: return s + " (" + std::to_string(op.k) + " peers from element "
                                   + std::to_string(op.m) + ", group at " + ref(op.a) + ")";
    case op_kind::peer_export: return s + " (a=" + ref(op.a) + ")";
    case op_kind::peer_forget: return s + " (lane " + std::to_string(op.k) + ")";
    case op_kind::await: return to_string(op.kind) + " operator " + std::to_string(op.m) + " of lane "
                                + std::to_string(op.k);
    default: return s + " (a=" + ref(op.a) + ", b=" + ref(op.b) + ")";
  }
}

namespace {

std::vector<store_range> copies(const batch& b, bool reads) {
  std::vector<store_range> out;
  for (const auto& op : b.ops) {
    if (op.kind != op_kind::copy)
      continue;
    const operand_ref& host = reads ? op.a : op.out;
    if (host.on_host())
      out.push_back({host.offset, op.count * sizeof(float)});
  }
  return out;
}

} // namespace

std::vector<store_range> host_reads(const batch& b) { return copies(b, true); }
std::vector<store_range> host_writes(const batch& b) { return copies(b, false); }

} // namespace ag
