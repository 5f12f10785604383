// ops_bench: ag-bench --mode=ops (docs/BENCHMARKS.md), the operators of real networks on one
// device in thread mode against floors measured in the same run: elementwise add, a bias add,
// softmax and layer_norm over rows of 4096 (float32 and bfloat16, 64 MiB tensors) against the
// device-to-device copy bandwidth; matmul 4096^3 (float32, bfloat16) against cuBLAS called
// directly; and ag-train's step (64 -> 256 -> 10, batch 128, SGD) on that device.
#pragma once

#include <string>
#include <vector>

#include <actorgraph/device.hpp>

namespace ag::bench {

struct ops_row {
  std::string what;    // "softmax bfloat16 [4096 x 8192]"
  std::string unit;    // "GB/s", "TFLOP/s", "us"
  double value = 0;    // actorgraph
  double floor = 0;    // the floor it is set against (0: none)
  std::string against; // what the floor is
};

struct ops_sizes {
  std::size_t tensor_bytes; // of every elementwise and row operator's input
  int repeats;              // of each operator
  int matmul_n;
  int matmul_repeats;
  int train_steps;
};

constexpr ops_sizes full_ops_sizes{std::size_t{64} << 20, 50, 4096, 50, 200};
constexpr ops_sizes quick_ops_sizes{std::size_t{1} << 20, 3, 128, 2, 5};

// Measures on `where` (cuda:N, or sim:N for the figures without floors); throws ag::error when
// the runtime cannot start.
std::vector<ops_row> measure_ops(const ag::device& where, const ops_sizes& n);

} // namespace ag::bench
