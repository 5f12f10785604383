// Statistics of ag-bench's repeated measurements, one definition for every figure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ag::bench {

// The median (the mean of the middle two for an even count); NaN when nothing was measured.
inline double median(std::vector<double> v) {
  if (v.empty())
    return NAN;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1)
    return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

} // namespace ag::bench
