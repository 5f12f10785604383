// Statistics of ag-bench's repeated measurements and how a figure prints, one definition for
// every figure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
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

// A figure as the tables print it: `precision` decimals, "n/a" for NaN (not measured).
inline std::string num(double x, int precision = 2) {
  if (std::isnan(x))
    return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

} // namespace ag::bench
