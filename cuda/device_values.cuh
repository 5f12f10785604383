// How device code loads and stores the values of each dtype, as their compute type (float for the
// floating dtypes, int64_t for the integer ones): float16 and bfloat16 through CUDA's conversions,
// to nearest even. For the .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/elementwise_math.hpp"

namespace ag::cuda {

template <dtype T>
struct storage;
template <>
struct storage<dtype::float32> {
  using type = float;
  __device__ static float load(float x) { return x; }
  __device__ static float store(float x) { return x; }
};
template <>
struct storage<dtype::float16> {
  using type = unsigned short;
  __device__ static float load(unsigned short x) { return __half2float(__ushort_as_half(x)); }
  __device__ static unsigned short store(float x) { return __half_as_ushort(__float2half_rn(x)); }
};
template <>
struct storage<dtype::bfloat16> {
  using type = unsigned short;
  __device__ static float load(unsigned short x) {
    return __uint_as_float(static_cast<unsigned>(x) << 16);
  }
  __device__ static unsigned short store(float x) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  }
};
template <>
struct storage<dtype::int32> {
  using type = int32_t;
  __device__ static int64_t load(int32_t x) { return x; }
  __device__ static int32_t store(int64_t x) { return static_cast<int32_t>(x); }
};
template <>
struct storage<dtype::int64> {
  using type = int64_t;
  __device__ static int64_t load(int64_t x) { return x; }
  __device__ static int64_t store(int64_t x) { return x; }
};
template <>
struct storage<dtype::uint8> {
  using type = uint8_t;
  __device__ static int64_t load(uint8_t x) { return x; }
  __device__ static uint8_t store(int64_t x) { return static_cast<uint8_t>(x); }
};

template <dtype T>
__device__ inline math::compute_t<T> load(const void* p, int64_t i) {
  return storage<T>::load(static_cast<const typename storage<T>::type*>(p)[i]);
}

template <dtype T>
__device__ inline void store(void* p, int64_t i, math::compute_t<T> x) {
  static_cast<typename storage<T>::type*>(p)[i] = storage<T>::store(x);
}

} // namespace ag::cuda
