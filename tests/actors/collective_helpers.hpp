// Helpers of the collectives tests (collectives_test.cpp, collectives_failures_test.cpp,
// collectives_trace_test.cpp): runtime options over sim devices, the planner's chunk, parts of
// deterministic values of widely different magnitudes and their host sum in the cpu lane's order.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace ag::test::collective {

using floats = std::vector<float>;

// sim:0 .. sim:(sims - 1), thread or process mode; the wait deadline is only a hang guard.
inline ag::graph_option option(int sims, bool process,
                               std::size_t store_bytes = std::size_t{1} << 20,
                               std::chrono::milliseconds wait = std::chrono::seconds{30}) {
  ag::graph_option opt;
  for (int i = 0; i < sims; ++i)
    opt.devices.push_back(ag::device::sim(i));
  opt.per_device_per_process = process;
  opt.store_bytes = store_bytes;
  // Hang guards, stretched where ThreadSanitizer slows every process many times over.
  opt.wait_timeout = wait * ag::test::tsan_slow;
  opt.progress_timeout = std::chrono::milliseconds{10000} * ag::test::tsan_slow;
  opt.transport = transport_under_test();
  return opt;
}

// The planner's chunk (elements) for a collective of `parts` parts over a store of `store` bytes.
inline int64_t chunk_of(std::size_t store, std::size_t parts) {
  return std::max<int64_t>(1, static_cast<int64_t>(store / 4 / (parts + 1) / 4));
}

inline int64_t numel(const ag::shape_t& s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

// Deterministic values of widely different magnitudes (2^-18 .. 2^16, both signs), so that adding
// them in another order than the parts' would round differently.
inline floats values(std::size_t n, uint32_t seed) {
  floats v(n);
  uint64_t s = (uint64_t{seed} + 1) * 0x9E3779B97F4A7C15ull;
  for (auto& x : v) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t h = s * 2685821657736338717ull;
    const int mant = static_cast<int>((h >> 40) & 0xFFFFF) - (1 << 19); // +-2^19
    const int e = static_cast<int>((h >> 20) & 15) - 22;                // 2^-22 .. 2^-7
    x = std::ldexp(static_cast<float>(mant), e);
  }
  return v;
}

// ((p0 + p1) + p2) + ... in float32, as the cpu lane adds them.
inline floats host_sum(const std::vector<floats>& parts) {
  floats acc = parts.front();
  for (std::size_t r = 1; r < parts.size(); ++r)
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = acc[i] + parts[r][i];
  return acc;
}

struct group {
  std::vector<floats> host;
  std::vector<ag::tensor> parts;
};

inline group make_group(ag::runtime& rt, const std::vector<ag::device>& places,
                        const ag::shape_t& shape, uint32_t seed) {
  group g;
  for (std::size_t i = 0; i < places.size(); ++i) {
    g.host.push_back(values(static_cast<std::size_t>(numel(shape)), seed * 131 + uint32_t(i)));
    g.parts.push_back(rt.from_vector(shape, g.host.back(), places[i]));
  }
  return g;
}

} // namespace ag::test::collective
