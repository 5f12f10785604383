#include "graph/step_shape.hpp"

#include <cstring>

namespace ag {

namespace {

uint64_t bits_of(double x) noexcept {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double double_of(uint64_t b) noexcept {
  double x = 0;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

} // namespace

op_desc shape_of(const op_desc& op) {
  op_desc s = op;
  s.out = shape_of(op.out);
  s.a = shape_of(op.a);
  s.b = shape_of(op.b);
  s.c = shape_of(op.c);
  s.scalar = 0;
  s.scalar2 = 0;
  if (seeded(op.kind))
    s.m = s.n = 0;
  return s;
}

void put_values(const op_desc& op, uint64_t* w) noexcept {
  const operand_ref* refs[] = {&op.out, &op.a, &op.b, &op.c};
  for (const auto* r : refs) {
    *w++ = r->id;
    *w++ = r->offset;
  }
  *w++ = bits_of(op.scalar);
  *w++ = bits_of(op.scalar2);
  *w++ = op.m;
  *w = op.n;
}

void set_values(op_desc& s, const uint64_t* w) noexcept {
  operand_ref* refs[] = {&s.out, &s.a, &s.b, &s.c};
  for (auto* r : refs) {
    r->id = *w++;
    r->offset = *w++;
  }
  s.scalar = double_of(*w++);
  s.scalar2 = double_of(*w++);
  s.m = *w++;
  s.n = *w;
}

uint64_t shape_hash(const op_desc* ops, std::size_t n) noexcept {
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](uint64_t v) noexcept {
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = ops[i];
    const bool random = seeded(s.kind);
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
  add(n);
  return h;
}

void scalars_at(const batch& b, std::size_t i, uint64_t (&w)[4]) noexcept {
  if (b.shape) {
    std::memcpy(w, &b.values[i * value_words + 8], sizeof w);
    return;
  }
  const auto& op = b.ops[i];
  w[0] = bits_of(op.scalar);
  w[1] = bits_of(op.scalar2);
  w[2] = op.m;
  w[3] = op.n;
}

void materialize(batch& b) {
  if (!b.shape)
    return;
  const auto& shape = b.shape->ops;
  b.ops.assign(shape.begin(), shape.end());
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    set_values(b.ops[i], &b.values[i * value_words]);
  b.shape.reset();
  b.values.clear();
}

const batch& whole(const batch& b, batch& storage) {
  if (!b.shape)
    return b;
  storage = b;
  materialize(storage);
  return storage;
}

} // namespace ag
