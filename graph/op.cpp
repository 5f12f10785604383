#include "graph/op.hpp"
#include "graph/step_shape.hpp"

#include "actorgraph/error.hpp"
#include "graph/op_table.hpp"

namespace ag {

std::string to_string(op_kind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < op_kind_count ? info(k).name : "op#" + std::to_string(i);
}

uint64_t bytes_of(dtype t, uint64_t count, const char* what) {
  const uint64_t size = size_of(t);
  if (size == 0)
    throw error(std::string{what} + ": dtype #" + std::to_string(static_cast<int>(t))
                + " does not exist");
  if (count > (uint64_t{1} << 62) / size)
    throw error(std::string{what} + ": " + std::to_string(count) + " elements of " + to_string(t)
                + " are too many");
  return count * size;
}

std::string malformed(const op_desc& op) {
  if (static_cast<std::size_t>(op.kind) >= op_kind_count || op.kind == op_kind::upload)
    return "an operator of kind " + std::to_string(static_cast<int>(op.kind));
  for (dtype t : {op.type, op.in_type})
    if (!is_valid(t))
      return to_string(op.kind) + " with dtype #" + std::to_string(static_cast<int>(t));
  const auto& l = op.layout;
  if (l.shape.size() > 8 || l.strides.size() != 3 * l.shape.size())
    return to_string(op.kind) + " with a layout of " + std::to_string(l.shape.size())
           + " dimensions and " + std::to_string(l.strides.size()) + " strides";
  return {};
}

uint64_t op_request::bytes() const { return bytes_of(type, out_elements(), info(kind).name); }

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
  if (op.type != dtype::float32)
    s += " " + std::string{to_string(op.type)};
  if (op.kind == op_kind::where)
    return s + " (mask=" + ref(op.a) + ", a=" + ref(op.b) + ", b=" + ref(op.c) + ")";
  if (is_elementwise(op.kind) && info(op.kind).family != op_family::unary
      && info(op.kind).family != op_family::convert && op.b.id == 0 && !op.b.on_host())
    return s + " (a=" + ref(op.a) + ", scalar)";
  switch (info(op.kind).family) {
    case op_family::unary:
    case op_family::convert: return s + " (a=" + ref(op.a) + ")";
    default: break;
  }
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
  for (std::size_t i = 0; i < b.op_count(); ++i) {
    const auto& op = op_at(b, i);
    if (op.kind != op_kind::copy)
      continue;
    const operand_ref host = operand_at(b, i, reads ? 1 : 0);
    if (host.on_host())
      out.push_back({host.offset, op.count * size_of(op.type)});
  }
  return out;
}

} // namespace

std::vector<store_range> host_reads(const batch& b) { return copies(b, true); }
std::vector<store_range> host_writes(const batch& b) { return copies(b, false); }

} // namespace ag
