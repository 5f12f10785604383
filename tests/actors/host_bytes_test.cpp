// tensor::host_bytes: a cpu tensor's values where they lie in the host store, without a copy, in
// both modes; the pointer outlives the runtime (which removes its shared memory's name at once and
// its mapping with the last pointer), and every misuse is an ag::error naming it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace {

using Catch::Contains;

template <class T>
std::vector<T> copied(const std::shared_ptr<const void>& p, std::size_t n) {
  std::vector<T> out(n);
  std::memcpy(out.data(), p.get(), n * sizeof(T));
  return out;
}

} // namespace

TEST_CASE("host_bytes gives a cpu tensor's values in place and a view's made contiguous", "[process]") {
  for (bool process : {false, true}) {
    INFO((process ? "process" : "thread") << " mode");
    ag::runtime rt{ag::test::sim_options(process)};
    const std::vector<int32_t> v{1, 2, 3, 4, 5, 6};
    const auto t = rt.from_vector({2, 3}, v, ag::device::cpu());
    const auto p = t.host_bytes();
    CHECK(copied<int32_t>(p, 6) == v);
    CHECK(t.host_bytes().get() == p.get()); // the same bytes: no copy
    CHECK(copied<int32_t>(t.transpose(0, 1).host_bytes(), 6)
          == std::vector<int32_t>{1, 4, 2, 5, 3, 6});
    // A result computed on a device and moved back.
    const auto s = (rt.from_vector({3}, {1.0f, 2.0f, 3.0f}, ag::device::sim(1)) * 2.0)
                     .to(ag::device::cpu());
    CHECK(copied<float>(s.host_bytes(), 3) == std::vector<float>{2.0f, 4.0f, 6.0f});
    const auto e = rt.from_vector({0}, std::vector<float>{}, ag::device::cpu());
    CHECK(e.host_bytes() != nullptr);
  }
}

TEST_CASE("host_bytes outlive their runtime, whose shared memory has no name", "[process]") {
  std::shared_ptr<const void> kept;
  {
    ag::runtime rt{ag::test::sim_options(true)};
    const auto t = rt.from_vector({4}, {1.0f, 2.0f, 3.0f, 4.0f}, ag::device::cpu()) + 1.0;
    kept = t.host_bytes();
    CHECK(ag::test::my_shm().empty());
  }
  CHECK(ag::test::my_shm().empty()); // the mapping still there
  CHECK(copied<float>(kept, 4) == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f});
  kept.reset();
}

TEST_CASE("host_bytes of a device tensor or a failed one or after the runtime is an ag::error",
          "[process]") {
  std::optional<ag::tensor> later;
  {
    ag::runtime rt{ag::test::sim_options(false)};
    const auto d = rt.from_vector({2}, {1.0f, 2.0f}, ag::device::sim(0));
    CHECK_THROWS_WITH(d.host_bytes(), Contains("host_bytes") && Contains("float32[2] on sim:0")
                                        && Contains("not on the cpu"));
    const auto table = rt.from_vector({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}, ag::device::cpu());
    const auto bad = ag::embedding(table, rt.from_vector({1}, std::vector<int64_t>{7},
                                                         ag::device::cpu()));
    CHECK_THROWS_WITH(bad.host_bytes(), Contains("embedding"));
    later = rt.from_vector({1}, {1.0f}, ag::device::cpu());
  }
  CHECK_THROWS_WITH(later->host_bytes(), Contains("host_bytes") && Contains("runtime"));
}
