// How the cpu kernels read and write the elements of the floating dtypes: as float, float16 and
// bfloat16 rounded to nearest even on the way out.
#pragma once

#include <cstdint>

#include "actorgraph/dtype.hpp"

namespace ag::cpu {

inline float load_float(dtype t, const void* p, uint64_t i) noexcept {
  switch (t) {
    case dtype::float16: return static_cast<const half*>(p)[i];
    case dtype::bfloat16: return static_cast<const bfloat16*>(p)[i];
    default: return static_cast<const float*>(p)[i];
  }
}

inline void store_float(dtype t, void* p, uint64_t i, float x) noexcept {
  switch (t) {
    case dtype::float16: static_cast<half*>(p)[i] = half(x); break;
    case dtype::bfloat16: static_cast<bfloat16*>(p)[i] = bfloat16(x); break;
    default: static_cast<float*>(p)[i] = x; break;
  }
}

} // namespace ag::cpu
