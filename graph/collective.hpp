// A collective as the user's thread submits it to the executor (the seed's tensor-communication
// layer: one operator over a group of devices): its kind, its inputs and its results, already
// validated (include/actorgraph/collectives.hpp). The planner turns it into per-lane operators
// (actors/planner_collective.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actorgraph/device.hpp"
#include "graph/op.hpp"

namespace ag {

enum class collective_kind : uint8_t {
  all_reduce = 0,     // every result is the elementwise sum of the parts
  broadcast = 1,      // every result is a copy of the one part
  all_gather = 2,     // every result is the parts concatenated, in order
  reduce_scatter = 3, // result r is block r of the sum (the sum cut into parts.size() blocks)
};

// "all_reduce", ...; "collective#N" outside the enumeration.
std::string to_string(collective_kind k);

struct collective_request {
  collective_kind kind = collective_kind::all_reduce;
  std::vector<operand_id> parts; // the inputs, in order
  std::vector<device> from;      // where each input lives
  std::vector<operand_id> outs;  // the results, in order
  std::vector<device> to;        // where each result lives
  uint64_t count = 0;            // elements of each input
  // Elements of each result: count (all_reduce, broadcast), count * parts (all_gather),
  // count / parts (reduce_scatter).
  uint64_t out_count() const noexcept;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, collective_request& x) {
  return f(caf::meta::type_name("collective_request"), x.kind, x.parts, x.from, x.outs, x.to,
           x.count);
}

// "all_reduce of #3,#4 (2 x 1024 elements)" for error messages and timelines.
std::string describe(const collective_request& c);

} // namespace ag
