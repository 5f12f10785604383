// libFuzzer target: one child -> controller message as the puller (actors/puller.cpp) receives it:
// a 16-byte header frame and a body frame, the body decoded per the header's type.
#include <cstddef>
#include <cstdint>

#include "actorgraph/error.hpp"
#include "ipc/wire.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

namespace wire = ag::wire;
namespace fuzz = ag::fuzz;

namespace {

template <class T>
T decode(const uint8_t* body, std::size_t size, const char* name) {
  T m;
  wire::decode(body, size, m);
  fuzz::check_round_trip(m, size, name);
  return m;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::two_frames(data, size, [](const wire::header& h, const uint8_t* body,
                                         std::size_t body_size) {
    switch (h.type) {
      case wire::msg_type::ready: {
        const auto m = decode<wire::ready_msg>(body, body_size, "ready");
        // What wire::decode(ready_msg) promises.
        fuzz::require(fuzz::valid(m.where), "ready: bad device accepted");
        fuzz::sink = fuzz::sink + m.lane + static_cast<uint32_t>(m.where.index)
                    + static_cast<uint32_t>(m.pid);
        break;
      }
      case wire::msg_type::done: {
        const auto m = decode<wire::done_msg>(body, body_size, "done");
        fuzz::sink = fuzz::sink + m.lane + m.ops_done + m.device_bytes;
        break;
      }
      case wire::msg_type::failed: {
        const auto m = decode<wire::failed_msg>(body, body_size, "failed");
        fuzz::require(m.what.size() <= body_size, "failed: text longer than the frame");
        fuzz::sink = fuzz::sink + m.lane + m.index + m.what.size();
        break;
      }
      case wire::msg_type::received: {
        const auto m = decode<wire::received_msg>(body, body_size, "received");
        fuzz::sink = fuzz::sink + m.lane + m.count;
        break;
      }
      default:
        // A type only the controller sends: the puller's protocol error, decided by the header.
        break;
    }
  });
}
