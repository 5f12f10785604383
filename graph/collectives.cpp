// Collectives on the caller's thread: validate the group (shapes, dtypes, devices, runtime), name
// the results, send one request to the executor.
#include "actorgraph/collectives.hpp"

#include "actorgraph/error.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

namespace {

using detail::tensor_node;

// The checked inputs of a collective: their nodes, their runtime, their element count.
struct group {
  std::vector<tensor> held; // the parts, views made tensors of their own
  std::vector<const tensor_node*> nodes;
  std::shared_ptr<detail::runtime_core> rt;
  uint64_t count = 0;
};

std::string part_name(std::size_t i, const tensor& t) {
  return "part " + std::to_string(i) + " (" + t.str() + ")";
}

group check_parts(const char* name, const std::vector<tensor>& parts) {
  if (parts.empty())
    throw error(std::string{name} + ": no parts (one tensor per device is needed)");
  group g;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& n = tensor_node::of(parts[i], name);
    if (n.type != dtype::float32)
      throw error(std::string{name} + ": takes float32 tensors (for now), got "
                  + part_name(i, parts[i]));
    if (i > 0) {
      const auto& first = tensor_node::of(parts[0], name);
      auto mismatch = [&](const char* what) {
        return error(std::string{name} + ": " + what + " mismatch: " + part_name(0, parts[0])
                     + ", " + part_name(i, parts[i]));
      };
      if (n.shape != first.shape)
        throw mismatch("shape");
      if (n.runtime.lock() != first.runtime.lock())
        throw mismatch("runtime");
      for (std::size_t j = 0; j < i; ++j)
        if (tensor_node::of(parts[j], name).where == n.where)
          throw error(std::string{name} + ": device mismatch: " + part_name(j, parts[j]) + " and "
                      + part_name(i, parts[i]) + " are on the same device; one part per device");
    }
  }
  for (const auto& t : parts) {
    g.held.push_back(detail::materialized(t, name));
    g.nodes.push_back(&tensor_node::of(g.held.back(), name));
  }
  g.rt = g.nodes.front()->live(name);
  g.count = detail::element_count(g.nodes.front()->shape, name);
  return g;
}

// Names the results, submits the request and returns the results' handles.
std::vector<tensor> submit(const group& g, collective_request&& req, const shape_t& out_shape) {
  for (std::size_t i = 0; i < req.to.size(); ++i)
    req.outs.push_back(g.rt->next_id());
  const auto outs = req.outs;
  const auto to = req.to;
  g.rt->submit(std::move(req));
  std::vector<tensor> results;
  for (std::size_t i = 0; i < outs.size(); ++i)
    results.push_back(tensor_node::make(g.rt, outs[i], out_shape, to[i], dtype::float32));
  return results;
}

collective_request request(collective_kind kind, const group& g) {
  collective_request req;
  req.kind = kind;
  req.count = g.count;
  for (const auto* n : g.nodes) {
    req.parts.push_back(n->id);
    req.from.push_back(n->where);
  }
  req.to = req.from;
  return req;
}

// Collectives that cut or join along dim 0 need one.
void check_has_dim0(const char* name, const std::vector<tensor>& parts) {
  if (parts.front().shape().empty())
    throw error(std::string{name} + ": parts must have at least one dimension, got "
                + parts.front().str());
}

} // namespace

std::vector<tensor> all_reduce(const std::vector<tensor>& parts) {
  const auto g = check_parts("all_reduce", parts);
  return submit(g, request(collective_kind::all_reduce, g), g.nodes.front()->shape);
}

std::vector<tensor> all_gather(const std::vector<tensor>& parts) {
  const auto g = check_parts("all_gather", parts);
  check_has_dim0("all_gather", parts);
  shape_t shape = g.nodes.front()->shape;
  shape[0] = detail::checked_product(shape[0], static_cast<int64_t>(parts.size()),
                                     "all_gather: dim 0 of " + parts.front().str() + " times "
                                       + std::to_string(parts.size()) + " parts");
  detail::element_count(shape, "all_gather");
  return submit(g, request(collective_kind::all_gather, g), shape);
}

std::vector<tensor> reduce_scatter(const std::vector<tensor>& parts) {
  const auto g = check_parts("reduce_scatter", parts);
  check_has_dim0("reduce_scatter", parts);
  shape_t shape = g.nodes.front()->shape;
  const auto w = static_cast<int64_t>(parts.size());
  if (shape[0] % w != 0)
    throw error("reduce_scatter: dim 0 of " + parts.front().str() + " (" + std::to_string(shape[0])
                + ") is not divisible by the " + std::to_string(w) + " parts");
  shape[0] /= w;
  return submit(g, request(collective_kind::reduce_scatter, g), shape);
}

std::vector<tensor> broadcast(const tensor& t, const std::vector<device>& to) {
  const auto g = check_parts("broadcast", {t});
  if (to.empty())
    throw error("broadcast: no devices to broadcast " + t.str() + " to");
  for (std::size_t i = 0; i < to.size(); ++i) {
    if (!g.rt->has_device(to[i]))
      throw error("broadcast: " + to[i].str() + " is not a device of this runtime (broadcasting "
                  + t.str() + ")");
    for (std::size_t j = 0; j < i; ++j)
      if (to[j] == to[i])
        throw error("broadcast: " + to[i].str() + " is named twice (to[" + std::to_string(j)
                    + "] and to[" + std::to_string(i) + "])");
  }
  // Where t already lives, the result is t itself; the others come from the collective.
  collective_request req = request(collective_kind::broadcast, g);
  req.to.clear();
  for (const auto& d : to)
    if (d != t.device())
      req.to.push_back(d);
  std::vector<tensor> copies;
  if (!req.to.empty())
    copies = submit(g, std::move(req), g.nodes.front()->shape);
  std::vector<tensor> results;
  std::size_t next = 0;
  for (const auto& d : to)
    results.push_back(d == t.device() ? t : copies[next++]);
  return results;
}

} // namespace ag
