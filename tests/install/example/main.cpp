// An application outside the project: the public API as documented, against the installed package.
#include <actorgraph/actorgraph.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  std::vector<float> values(4096);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = 1.0f + static_cast<float>(i % 7);
  std::vector<float> xs(8 * 16, 0.5f), ws(16 * 4, -0.25f);

  ag::graph_option opt;                                   // devices empty = "auto"
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = false;
  ag::runtime rt{opt};                                    // every runner ready when this returns
  ag::tensor a = rt.full({4096}, 1.0f, ag::device::sim(0));
  ag::tensor b = rt.from_vector({4096}, values, ag::device::sim(0));
  ag::tensor c = (a + b) * a - b / a;                     // elementwise, same shape and device
  ag::tensor x = rt.from_vector({8, 16}, xs, ag::device::sim(1));
  ag::tensor w = rt.from_vector({16, 4}, ws, ag::device::sim(1));
  ag::tensor m = x.matmul(w).relu();                      // 2-D float32 matmul, relu
  ag::tensor s = c.sum();                                 // shape {}
  ag::tensor d = c.to(ag::device::cpu());                 // explicit moves
  std::vector<float> v = d.to_vector();                   // waits for the result
  rt.sync();                                              // waits for all submitted work

  // (1 + b) * 1 - b / 1 == 1 for every element.
  for (float e : v)
    if (e != 1.0f) {
      std::printf("c = %f, expected 1\n", e);
      return 1;
    }
  const float sum = s.to_vector().at(0);
  const auto mv = m.to_vector(); // x w = 16 * 0.5 * -0.25 = -2 -> relu 0
  if (sum != 4096.0f || mv.size() != 32 || mv[0] != 0.0f || !s.shape().empty()) {
    std::printf("sum %f (expected 4096), m[0] %f (expected 0)\n", sum, mv.empty() ? -1.0f : mv[0]);
    return 1;
  }
  try {
    auto bad = a + x; // different shapes and devices
    (void)bad;
    std::printf("mismatched operands were accepted\n");
    return 1;
  } catch (const ag::error& e) {
    std::printf("rejected as expected: %s\n", e.what());
  }
  std::printf("example: c[0] = %g, sum = %g, m = [%zu] on %s\n", v[0], sum, mv.size(),
              m.device().str().c_str());
  return 0;
}
