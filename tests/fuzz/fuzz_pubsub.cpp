// libFuzzer target: one controller -> child message as the subscriber (actors/subscriber.cpp)
// receives it: a 16-byte header frame and a body frame, the body decoded per the header's type.
#include <cstddef>
#include <cstdint>

#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/wire.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

namespace wire = ag::wire;
namespace fuzz = ag::fuzz;

namespace {

void check(const wire::execute_msg& m, std::size_t body_size) {
  uint64_t touched = m.batches.size();
  for (const auto& b : m.batches) {
    touched += b.lane + b.ops_before + b.ops.size() + b.no_hold.size();
    for (const auto& op : b.ops) {
      // What wire::decode(execute_msg) promises: every kind is one a runner executes.
      fuzz::require(static_cast<std::size_t>(op.kind) < ag::op_kind_count,
                    "execute: operator kind outside op_kind");
      fuzz::require(op.kind != ag::op_kind::upload, "execute: upload operator on the wire");
      touched += op.count + op.out.id + op.a.offset;
    }
  }
  fuzz::sink = fuzz::sink + touched;
  fuzz::check_round_trip(m, body_size, "execute");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::two_frames(data, size, [](const wire::header& h, const uint8_t* body,
                                         std::size_t body_size) {
    switch (h.type) {
      case wire::msg_type::execute: {
        wire::execute_msg m;
        wire::decode(body, body_size, m);
        check(m, body_size);
        break;
      }
      case wire::msg_type::hello:
      case wire::msg_type::destroy:
        // The subscriber does not look at these bodies.
        fuzz::sink = fuzz::sink + h.id;
        break;
      default:
        // A type only children send: the subscriber's protocol error, decided by the header alone.
        break;
    }
  });
}
