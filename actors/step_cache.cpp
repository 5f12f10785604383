#include "actors/step_cache.hpp"

#include <algorithm>

#include "graph/step_shape.hpp"

namespace ag {

namespace {

// How many shapes a cache remembers: steps that never repeat must not grow it.
std::size_t max_steps(const step_policy& p) noexcept { return 4 * std::max<std::size_t>(p.max_graphs, 16); }

// Whether op has the shape s (a shape_of): compared field by field, op not copied.
bool same_ref(const operand_ref& s, const operand_ref& r) noexcept {
  const operand_ref rs = shape_of(r);
  return s.id == rs.id && s.offset == rs.offset;
}

bool has_shape(const op_desc& s, const op_desc& op) noexcept {
  const bool random = seeded(op.kind);
  return s.kind == op.kind && same_ref(s.out, op.out) && same_ref(s.a, op.a)
         && same_ref(s.b, op.b) && same_ref(s.c, op.c) && s.count == op.count
         && s.m == (random ? 0 : op.m) && s.k == op.k && s.n == (random ? 0 : op.n)
         && s.type == op.type && s.in_type == op.in_type && s.layout.shape == op.layout.shape
         && s.layout.strides == op.layout.strides && s.layout.a_offset == op.layout.a_offset
         && s.layout.b_offset == op.layout.b_offset && s.layout.c_offset == op.layout.c_offset;
}

bool keepable(op_kind k) noexcept {
  switch (k) {
    case op_kind::await:
    case op_kind::peer_copy:
    case op_kind::peer_sum:
    case op_kind::peer_export:
    case op_kind::peer_forget:
    case op_kind::upload:
      return false;
    default:
      return true;
  }
}

} // namespace

step_cache::entry* step_cache::see(const batch& b) {
  const std::size_t ops = b.op_count();
  if (!policy_.enabled || b.step == 0 || ops < std::max<std::size_t>(policy_.min_operators, 1))
    return nullptr;
  const uint64_t hash = b.shape ? b.shape->hash : shape_hash(b.ops.data(), ops);
  ++clock_;
  auto [from, to] = by_hash_.equal_range(hash);
  for (auto it = from; it != to; ++it) {
    auto& e = *it->second;
    if (e.shape.size() != ops)
      continue;
    // A shape a child decoded once is the same object run after run.
    bool same = b.shape && e.decoded == b.shape;
    if (!same) {
      same = true;
      for (std::size_t i = 0; i < ops && same; ++i)
        same = has_shape(e.shape[i], op_at(b, i));
      if (same && b.shape)
        e.decoded = b.shape;
    }
    if (!same)
      continue;
    ++e.seen;
    entries_.splice(entries_.end(), entries_, it->second); // most recent last
    return &e;
  }
  // A step kept before was keepable: its kinds are these.
  for (std::size_t i = 0; i < ops; ++i)
    if (!keepable(op_at(b, i).kind))
      return nullptr;
  if (entries_.size() >= max_steps(policy_)) { // the least recently seen step goes
    auto& old = entries_.front();
    graphs_ -= old.graphs.size();
    auto [f, t] = by_hash_.equal_range(old.hash);
    for (auto it = f; it != t; ++it)
      if (&*it->second == &old) {
        by_hash_.erase(it);
        break;
      }
    entries_.pop_front();
  }
  entry e;
  e.shape.reserve(ops);
  for (std::size_t i = 0; i < ops; ++i)
    e.shape.push_back(shape_of(op_at(b, i)));
  e.hash = hash;
  e.seen = 1;
  e.decoded = b.shape;
  entries_.push_back(std::move(e));
  by_hash_.emplace(hash, std::prev(entries_.end()));
  return &entries_.back();
}

step_cache::graph_slot* step_cache::match(entry& e, const std::vector<uint64_t>& binding,
                                          const std::vector<std::size_t>* cuts) {
  for (auto& g : e.graphs)
    if (g.ready && g.binding == binding && (!cuts || g.cuts == *cuts)) {
      g.used = ++clock_;
      return &g;
    }
  return nullptr;
}

step_cache::graph_slot& step_cache::slot_for(entry& e) {
  if (e.graphs.size() >= step_policy::graphs_per_step) {
    auto lru = std::min_element(e.graphs.begin(), e.graphs.end(),
                                [](const auto& x, const auto& y) { return x.used < y.used; });
    lru->used = ++clock_;
    return *lru;
  }
  if (graphs_ >= std::max<std::size_t>(policy_.max_graphs, 1))
    evict_one_graph(&e);
  if (graphs_ >= std::max<std::size_t>(policy_.max_graphs, 1) && !e.graphs.empty()) {
    auto lru = std::min_element(e.graphs.begin(), e.graphs.end(),
                                [](const auto& x, const auto& y) { return x.used < y.used; });
    lru->used = ++clock_;
    return *lru; // the bound is met by e's own graphs: one of them is updated
  }
  e.graphs.emplace_back();
  ++graphs_;
  e.graphs.back().used = ++clock_;
  return e.graphs.back();
}

// The least recently used graph of another step than `keep` goes.
void step_cache::evict_one_graph(const entry* keep) {
  entry* owner = nullptr;
  std::size_t at = 0;
  uint64_t oldest = UINT64_MAX;
  for (auto& e : entries_) {
    if (&e == keep)
      continue;
    for (std::size_t i = 0; i < e.graphs.size(); ++i)
      if (e.graphs[i].used < oldest) {
        oldest = e.graphs[i].used;
        owner = &e;
        at = i;
      }
  }
  if (!owner)
    return;
  owner->graphs.erase(owner->graphs.begin() + static_cast<std::ptrdiff_t>(at));
  --graphs_;
}

} // namespace ag
