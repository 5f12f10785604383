#include "actors/step_cache.hpp"

#include <algorithm>
#include <cstring>

namespace ag {

namespace {

// How many shapes a cache remembers: steps that never repeat must not grow it.
std::size_t max_steps(const step_policy& p) noexcept { return 4 * std::max<std::size_t>(p.max_graphs, 16); }

operand_ref shape_of(const operand_ref& r) noexcept {
  return {r.id != 0 ? 1u : 0u, r.on_host() ? 0 : operand_ref::no_offset};
}

// op without what its binding holds (naive_runner::bind_into): ids, offsets, scalars, and the
// seed and first element of a random operator.
op_desc shape_of(const op_desc& op) {
  op_desc s = op;
  s.out = shape_of(op.out);
  s.a = shape_of(op.a);
  s.b = shape_of(op.b);
  s.c = shape_of(op.c);
  s.scalar = 0;
  s.scalar2 = 0;
  if (op.kind == op_kind::random)
    s.m = s.n = 0;
  return s;
}

// Whether op has the shape s (a shape_of): compared field by field, op not copied.
bool same_ref(const operand_ref& s, const operand_ref& r) noexcept {
  return s.id == (r.id != 0 ? 1u : 0u) && (s.offset == operand_ref::no_offset) != r.on_host();
}

bool has_shape(const op_desc& s, const op_desc& op) noexcept {
  const bool random = op.kind == op_kind::random;
  return s.kind == op.kind && same_ref(s.out, op.out) && same_ref(s.a, op.a)
         && same_ref(s.b, op.b) && same_ref(s.c, op.c) && s.count == op.count
         && s.m == (random ? 0 : op.m) && s.k == op.k && s.n == (random ? 0 : op.n)
         && s.type == op.type && s.in_type == op.in_type && s.layout.shape == op.layout.shape
         && s.layout.strides == op.layout.strides && s.layout.a_offset == op.layout.a_offset
         && s.layout.b_offset == op.layout.b_offset && s.layout.c_offset == op.layout.c_offset;
}

// The fields has_shape compares, mixed a word at a time (it runs over every operator of a step).
struct hasher {
  uint64_t h = 14695981039346656037ull;
  void add(uint64_t v) noexcept {
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  // op's shape (shape_of), op not copied.
  void add(const op_desc& s) noexcept {
    const bool random = s.kind == op_kind::random;
    add(static_cast<uint64_t>(s.kind) | uint64_t(s.type) << 8 | uint64_t(s.in_type) << 16);
    for (const auto* r : {&s.out, &s.a, &s.b, &s.c})
      add((r->id != 0 ? 2 : 0) + (r->on_host() ? 1 : 0));
    add(s.count), add(random ? 0 : s.m), add(s.k), add(random ? 0 : s.n);
    for (auto v : s.layout.shape)
      add(static_cast<uint64_t>(v));
    for (auto v : s.layout.strides)
      add(static_cast<uint64_t>(v));
    add(static_cast<uint64_t>(s.layout.a_offset)), add(static_cast<uint64_t>(s.layout.b_offset)),
      add(static_cast<uint64_t>(s.layout.c_offset));
  }
};

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
  if (!policy_.enabled || b.step == 0 || b.ops.size() < std::max<std::size_t>(policy_.min_operators, 1))
    return nullptr;
  hasher h;
  for (const auto& op : b.ops) {
    if (!keepable(op.kind))
      return nullptr;
    h.add(op);
  }
  h.add(b.ops.size());
  ++clock_;
  auto [from, to] = by_hash_.equal_range(h.h);
  for (auto it = from; it != to; ++it) {
    auto& e = *it->second;
    if (e.shape.size() != b.ops.size())
      continue;
    bool same = true;
    for (std::size_t i = 0; i < b.ops.size() && same; ++i)
      same = has_shape(e.shape[i], b.ops[i]);
    if (!same)
      continue;
    ++e.seen;
    entries_.splice(entries_.end(), entries_, it->second); // most recent last
    return &e;
  }
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
  e.shape.reserve(b.ops.size());
  for (const auto& op : b.ops)
    e.shape.push_back(shape_of(op));
  e.hash = h.h;
  e.seen = 1;
  entries_.push_back(std::move(e));
  by_hash_.emplace(h.h, std::prev(entries_.end()));
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
