// What every wire fuzz target checks after a decode succeeded, beyond "no crash": the value
// survives a second encode/decode unchanged, and its canonical encoding is no longer than the frame
// it came from. A failed check aborts, which libFuzzer (and the corpus replay) reports as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "actorgraph/error.hpp"
#include "ipc/wire.hpp"

namespace ag::fuzz {

// Written after every successful decode, so that the decoded values are used and the decode cannot
// be optimized away.
inline volatile uint64_t sink = 0;

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok)
    fail(what);
}

// Encodings are canonical (shortest varbytes, fixed-size fields, the float as its bits), so two
// values are equal exactly when their encodings are. An ag::error here is a bug, not bad input:
// the value came out of the decoder, so the encoder must take it and the decoder take it back.
template <class T>
void check_round_trip(const T& decoded, std::size_t frame_size, const char* name) {
  try {
    T copy = decoded;
    const wire::bytes once = wire::encode(copy);
    if (once.size() > frame_size)
      fail(std::string{name} + ": re-encoding is " + std::to_string(once.size())
           + " bytes, longer than the " + std::to_string(frame_size) + "-byte frame it came from");
    T again;
    wire::decode(once.data(), once.size(), again);
    if (wire::encode(again) != once)
      fail(std::string{name} + ": encode/decode/encode changed the value");
  } catch (const ag::error& e) {
    fail(std::string{name} + ": a decoded value does not round-trip: " + e.what());
  }
}

inline bool valid(const device& d) {
  return d.type <= device::kind::sim && d.index >= 0;
}

// Treats the input as one two-frame message: the first 16 bytes are the header frame (all of the
// input when it is shorter, which must be refused) and the rest the body. Decodes the header and
// hands it and the body to `on_message`; malformed input (an ag::error) is refused as the decoders
// promise, and anything else escapes and crashes the fuzzer.
template <class F>
int two_frames(const uint8_t* data, std::size_t size, F on_message) {
  const std::size_t head_size = size < wire::header_size ? size : wire::header_size;
  try {
    const wire::header h = wire::decode_header(data, head_size);
    require(head_size == wire::header_size, "decode_header took a short header frame");
    on_message(h, data + head_size, size - head_size);
  } catch (const ag::error&) {
  }
  return 0;
}

} // namespace ag::fuzz
