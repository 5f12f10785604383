// Shape arithmetic at its limits: an empty tensor whatever its other dimensions, a count too large
// for the element type, and collectives whose result shape would not fit a dimension. Each is
// decided on the caller's thread and names what overflowed; nothing reaches a runner.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using Catch::Contains;
using ag::device;

TEST_CASE("a dimension of 0 makes an empty tensor however large the other dimensions are",
          "[graph]") {
  ag::runtime rt{ag::test::sim_options(false)};
  for (const ag::shape_t& shape : {ag::shape_t{int64_t{1} << 62, 0}, ag::shape_t{0, INT64_MAX},
                                   ag::shape_t{INT64_MAX, INT64_MAX, 0}}) {
    INFO("shape of " << shape.size() << " dimensions, first " << shape.front());
    const auto t = rt.full(shape, 1.0f, device::sim(0));
    CHECK(t.numel() == 0);
    CHECK(t.to_vector().empty());
  }
  rt.sync();
}

TEST_CASE("a shape with more elements than a byte count can hold is refused, naming it",
          "[graph]") {
  ag::runtime rt{ag::test::sim_options(false)};
  CHECK_THROWS_WITH(rt.full({int64_t{1} << 40, int64_t{1} << 30}, 1.0f, device::sim(0)),
                    Contains("full: shape [1099511627776,1073741824] has more elements than"));
  CHECK_THROWS_WITH(rt.full({INT64_MAX, 2}, 1.0f, device::cpu()), Contains("has more elements"));
  // The runtime is as it was.
  CHECK(rt.full({2}, 3.0f, device::sim(0)).to_vector() == std::vector<float>{3.0f, 3.0f});
}

TEST_CASE("all_gather whose dim 0 times its parts does not fit is refused, naming both", "[graph]") {
  std::string sixteen_sims;
  for (int i = 0; i < 16; ++i)
    sixteen_sims += (i ? ",sim:" : "sim:") + std::to_string(i);
  ag::runtime rt{ag::test::sim_options(false, sixteen_sims.c_str())};
  std::vector<ag::tensor> parts;
  for (const auto& d : rt.devices())
    parts.push_back(rt.full({int64_t{1} << 60, 0}, 1.0f, d));
  // 16 * 2^60 = 2^64, which wrapped to 0 before and gave shape [0,0] without a word.
  CHECK_THROWS_WITH(ag::all_gather(parts),
                    Contains("all_gather: dim 0 of float32[1152921504606846976,0] on sim:0 times 16 "
                             "parts")
                      && Contains("does not fit a dimension"));
  // 8 * 2^60 = 2^63, one past the largest dimension: a "negative dimension" the user never wrote.
  const std::vector<ag::tensor> eight(parts.begin(), parts.begin() + 8);
  CHECK_THROWS_WITH(ag::all_gather(eight),
                    Contains("times 8 parts") && Contains("does not fit a dimension")
                      && !Contains("negative"));
  // Within range it still works: 8 parts of [2, 0] give [16, 0].
  std::vector<ag::tensor> small;
  for (int i = 0; i < 8; ++i)
    small.push_back(rt.full({2, 0}, 1.0f, rt.devices()[i]));
  const auto gathered = ag::all_gather(small);
  CHECK(gathered.front().shape() == ag::shape_t{16, 0});
  CHECK(gathered.front().to_vector().empty());
  rt.sync();
}
