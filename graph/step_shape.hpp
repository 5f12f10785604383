// A step's operators split in two (runtime::mark_step): their shape (kinds, dtypes, sizes,
// layouts, which operands there are and whether each lies in the store) and their values, what
// changes from one run of the step to the next (operand ids, store offsets, scalars, a random
// operator's seed and first element). The wire carries a step's batch so (docs/PROTOCOL.md): a
// child decodes a shape it saw before once, then reads only the values; a runner keeps steps by
// their shape (actors/step_cache.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/op.hpp"

namespace ag {

// An operand's shape: id 1 where there is one (else 0), offset 0 where it lies in the store
// (else none).
inline operand_ref shape_of(const operand_ref& r) noexcept {
  return {r.id != 0 ? 1u : 0u, r.on_host() ? 0 : operand_ref::no_offset};
}
// Whether an operator of kind k takes m and n as values (a random operator's seed and first
// element), not as its shape.
inline bool seeded(op_kind k) noexcept { return k == op_kind::random; }

// op's shape: its operands' shapes, scalars 0, and m and n 0 where they are values (seeded).
op_desc shape_of(const op_desc& op);

// The value_words words of an operator's values: out, a, b and c as id then offset, then the
// bits of scalar and scalar2, then m and n.
static_assert(value_words == 12);
void put_values(const op_desc& op, uint64_t* words) noexcept;
// The operator of shape s with these values.
void set_values(op_desc& s, const uint64_t* words) noexcept;

// A hash of the shapes of ops[0, n) (full operators or shapes alike), and of n.
uint64_t shape_hash(const op_desc* ops, std::size_t n) noexcept;

// The shape of a step's operators as a child decoded it once (wire::shape_memo).
struct step_shape {
  std::vector<op_desc> ops;
  uint64_t hash = 0;
};

// Operator i of b: its own, or its shape when b came as shape and values.
inline const op_desc& op_at(const batch& b, std::size_t i) noexcept {
  return b.shape ? b.shape->ops[i] : b.ops[i];
}
// Operand `field` (0 out, 1 a, 2 b, 3 c) of operator i of b.
inline operand_ref operand_at(const batch& b, std::size_t i, unsigned field) noexcept {
  if (b.shape)
    return {b.values[i * value_words + 2 * field], b.values[i * value_words + 2 * field + 1]};
  const auto& op = b.ops[i];
  return field == 0 ? op.out : field == 1 ? op.a : field == 2 ? op.b : op.c;
}
// Its scalar and scalar2 bits, m and n (the values' last four words).
void scalars_at(const batch& b, std::size_t i, uint64_t (&words)[4]) noexcept;

// b with its operators whole: a batch that came as shape and values is given its operators.
void materialize(batch& b);
// b itself when its operators are whole, else `storage` made b whole.
const batch& whole(const batch& b, batch& storage);

} // namespace ag
