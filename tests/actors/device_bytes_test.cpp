// tensor::device_bytes: a device tensor's memory where its lane holds it, for another library to
// use without a copy (DLPack), in thread mode; refused, with why, for the cpu, for a child's
// device and for failed work. On sim devices the memory is the lane's host memory, so its values
// are read here directly; tests/cuda covers a CUDA stream's wait.
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
std::vector<T> copied(const std::shared_ptr<void>& p, std::size_t n) {
  std::vector<T> out(n);
  std::memcpy(out.data(), p.get(), n * sizeof(T));
  return out;
}

} // namespace

TEST_CASE("device_bytes gives a sim tensor's memory in place once its writer ran",
          "[process]") {
  ag::runtime rt{ag::test::sim_options(false, "sim:0,sim:1")};
  const auto a = rt.from_vector({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}, ag::device::sim(0));
  const auto b = a * 2.0f; // written by the lane, not uploaded
  const auto p = b.device_bytes(-1);
  CHECK(copied<float>(p, 6) == std::vector<float>{2, 4, 6, 8, 10, 12});
  CHECK(b.device_bytes(-1).get() == p.get()); // exported once, the same memory
  // A view is made contiguous first; another device's tensor is its own lane's.
  CHECK(copied<float>(b.transpose(0, 1).device_bytes(-1), 6)
        == std::vector<float>{2, 8, 4, 10, 6, 12});
  const auto c = b.to(ag::device::sim(1));
  CHECK(copied<float>(c.device_bytes(1), 6) == std::vector<float>{2, 4, 6, 8, 10, 12});
  // The pointer keeps the tensor: its memory is not reused while it lives.
  std::shared_ptr<void> kept;
  {
    const auto d = rt.full({1024}, 7.0, ag::device::sim(0));
    kept = d.device_bytes(-1);
  }
  for (int i = 0; i < 8; ++i)
    (void)rt.full({1024}, 1.0, ag::device::sim(0)).to_vector();
  CHECK(copied<float>(kept, 1024) == std::vector<float>(1024, 7.0f));
  rt.sync();
}

TEST_CASE("device_bytes keeps the memory past the runtime's end", "[process]") {
  std::shared_ptr<void> kept;
  {
    ag::runtime rt{ag::test::sim_options(false, "sim:0")};
    const auto t = rt.uniform({3, 1000}, -1.0, 1.0, 5, ag::device::sim(0));
    const auto want = t.to_vector();
    kept = t.device_bytes(-1);
    REQUIRE(copied<float>(kept, 3000) == want);
  } // the runtime stops; the lane's stream, and the memory, stay with `kept`
  ag::runtime again{ag::test::sim_options(false, "sim:0")};
  const auto u = again.uniform({3, 1000}, -1.0, 1.0, 5, ag::device::sim(0));
  CHECK(copied<float>(kept, 3000) == u.to_vector()); // the same seed, the same values
  kept.reset(); // frees it
}

TEST_CASE("device_bytes names what it cannot share", "[process]") {
  SECTION("a cpu tensor, a bad stream") {
    ag::runtime rt{ag::test::sim_options(false, "sim:0")};
    const auto t = rt.full({4}, 1.0, ag::device::cpu());
    CHECK_THROWS_WITH(t.device_bytes(-1), Contains("is on the cpu (use host_bytes)"));
    const auto d = rt.full({4}, 1.0, ag::device::sim(0));
    CHECK_THROWS_WITH(d.device_bytes(0), Contains("stream 0 is not a stream"));
    CHECK_THROWS_WITH(d.device_bytes(-5), Contains("stream -5 is not a stream"));
  }
  SECTION("a device of a child process") {
    ag::runtime rt{ag::test::sim_options(true, "sim:0")};
    const auto d = rt.full({4}, 1.0, ag::device::sim(0));
    CHECK_THROWS_WITH(d.device_bytes(-1),
                      Contains("sim:0 runs in a process of its own")
                        && Contains("device_bytes of tensor #"));
    CHECK(d.to_vector() == std::vector<float>(4, 1.0f)); // the runtime goes on
  }
  SECTION("work that failed") {
    ag::runtime rt{ag::test::sim_options(false, "sim:0")};
    const auto table = rt.full({4, 2}, 1.0, ag::device::sim(0));
    const auto idx = rt.from_vector({1}, std::vector<int64_t>{9}, ag::device::sim(0));
    const auto bad = ag::embedding(table, idx); // row 9 of 4: fails on the lane
    CHECK_THROWS_WITH(bad.device_bytes(-1), Contains("index 9") && Contains("out of range"));
  }
  SECTION("a runtime that is gone") {
    std::optional<ag::tensor> t;
    {
      ag::runtime rt{ag::test::sim_options(false, "sim:0")};
      t = rt.full({4}, 1.0, ag::device::sim(0));
    }
    CHECK_THROWS_WITH(t->device_bytes(-1), Contains("device_bytes"));
  }
}
