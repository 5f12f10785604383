#include "apps/ag-bench/ops_bench.hpp"

#include <chrono>
#include <cmath>
#include <functional>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/train_step.hpp"
#include "cuda/floors.hpp"

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Seconds per call of op, `repeats` calls streamed and one sync, after as many of warm-up (the
// caching allocator then holds what the calls need). Each result goes as the next comes, as a
// loop's temporaries do.
double per_call(runtime& rt, int repeats, const std::function<tensor()>& op) {
  for (int i = 0; i < repeats; ++i)
    op();
  rt.sync();
  const auto t0 = clock_type::now();
  for (int i = 0; i < repeats; ++i)
    op();
  rt.sync();
  return seconds_since(t0) / repeats;
}

} // namespace

std::vector<ops_row> measure_ops(const ag::device& where, const ops_sizes& n) {
  graph_option opt;
  if (!where.is_cpu())
    opt.devices = {where};
  runtime rt{opt};
  std::vector<ops_row> rows;
  const bool gpu = where.type == device::kind::cuda;
  const double copy_gbps =
    gpu ? floors::d2d_copy_gbps(where.index, n.tensor_bytes, n.repeats).value_or(0) : 0;
  const int64_t width = 4096;
  for (dtype t : {dtype::float32, dtype::bfloat16}) {
    const auto elems = static_cast<int64_t>(n.tensor_bytes / size_of(t));
    const int64_t height = std::max<int64_t>(1, elems / width);
    const std::string type = to_string(t);
    const auto a = rt.uniform({height, width}, -1, 1, 1, where, t);
    const auto b = rt.uniform({height, width}, -1, 1, 2, where, t);
    const auto bias = rt.uniform({width}, -1, 1, 3, where, t);
    const auto w = rt.uniform({width}, 0.5, 1.5, 4, where, t);
    const double bytes = double(height * width) * double(size_of(t));
    const std::string shape = " [" + std::to_string(height) + " x 4096]";
    auto add_row = [&](const std::string& what, double moved, const std::function<tensor()>& f) {
      const double s = per_call(rt, n.repeats, f);
      rows.push_back({what + " " + type + shape, "GB/s", moved / s * 1e-9, copy_gbps,
                      "device-to-device copy"});
    };
    add_row("add", 3 * bytes, [&] { return a + b; });
    add_row("bias add", 2 * bytes, [&] { return a + bias; });
    add_row("softmax", 2 * bytes, [&] { return ag::softmax(a, -1); });
    add_row("layer_norm", 2 * bytes, [&] { return ag::layer_norm(a, w, bias); });
  }
  for (dtype t : {dtype::float32, dtype::bfloat16}) {
    const int64_t m = n.matmul_n;
    const auto x = rt.uniform({m, m}, -1, 1, 5, where, t);
    const auto y = rt.uniform({m, m}, -1, 1, 6, where, t);
    const double s = per_call(rt, n.matmul_repeats, [&] { return ag::matmul(x, y); });
    double floor = 0;
    if (gpu)
      floor = (t == dtype::float32 ? floors::sgemm_tflops(where.index, n.matmul_n, n.matmul_repeats)
                                   : floors::bf16_gemm_tflops(where.index, n.matmul_n,
                                                              n.matmul_repeats))
                .value_or(0);
    rows.push_back({"matmul " + std::string{to_string(t)} + " " + std::to_string(m) + "^3",
                    "TFLOP/s", 2.0 * double(m) * m * m / s * 1e-12, floor, "cuBLAS called directly"});
  }
  // ag-train's step on this one device: a batch of 128 uploaded, forward, backward, update.
  train_step step{rt, where};
  step();
  rt.sync();
  auto t0 = clock_type::now();
  for (int i = 0; i < n.train_steps; ++i)
    step();
  rt.sync();
  rows.push_back({"ag-train step, streamed", "us", seconds_since(t0) / n.train_steps * 1e6, 0, ""});
  t0 = clock_type::now();
  for (int i = 0; i < n.train_steps; ++i)
    step().to_vector(); // the loss read every step, as a training loop that prints it does
  rows.push_back(
    {"ag-train step, loss read", "us", seconds_since(t0) / n.train_steps * 1e6, 0, ""});
  return rows;
}

} // namespace ag::bench
