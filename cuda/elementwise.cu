// The CUDA kernels of fill and of every elementwise operator: the functors of elementwise_math.hpp
// over the operands' dtypes, the GPU twin of cpu_elementwise.cpp, along a contiguous run or a
// strided walk of the call's dimensions (each thread works out its operands' offsets).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "cuda/cuda_error.hpp"
#include "cuda/cuda_kernels.cuh"
#include "cuda/device_values.cuh"
#include "cuda/elementwise_math.hpp"
#include "graph/op_table.hpp"

namespace ag::cuda {

namespace {

constexpr unsigned block_threads = 256;
// As cuda_kernels.cu: more than four waves of resident blocks on an H200; grid-stride loops cover
// the rest.
constexpr std::size_t max_blocks = 4096;

unsigned grid_for(std::size_t count) {
  return static_cast<unsigned>(
    std::min<std::size_t>((count + block_threads - 1) / block_threads, max_blocks));
}

__device__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Calls below 2^31 elements work out their operands' offsets in 32-bit integers, whose division
// costs a fraction of a 64-bit one.
constexpr uint64_t narrow_below = uint64_t{1} << 31;

template <class T>
__global__ void fill_kernel(T* out, int64_t count, T value) {
  for (int64_t i = first_index(); i < count; i += grid_stride())
    out[i] = value;
}

// body(out index, a's, b's, c's) for every element; Index: uint32_t below narrow_below elements.
template <class Index, class Body>
__global__ void walk_kernel(elementwise_call c, Body body) {
  const auto n = static_cast<Index>(c.count);
  const auto stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const auto e = static_cast<int64_t>(i);
    if (c.rank == 0) {
      body(c, e, e, e, e);
      continue;
    }
    Index rest = i;
    int64_t off[3] = {0, 0, 0};
    for (int d = c.rank - 1; d >= 0; --d) {
      const auto size = static_cast<Index>(c.shape[d]);
      const auto at = static_cast<int64_t>(rest % size);
      rest /= size;
      for (int o = 0; o < 3; ++o)
        off[o] += at * c.strides[o][d];
    }
    body(c, e, off[0], off[1], off[2]);
  }
}

template <class Body>
void launch(const elementwise_call& c, Body body, cudaStream_t stream) {
  if (c.count == 0)
    return;
  if (c.count < narrow_below)
    walk_kernel<uint32_t><<<grid_for(c.count), block_threads, 0, stream>>>(c, body);
  else
    walk_kernel<uint64_t><<<grid_for(c.count), block_threads, 0, stream>>>(c, body);
  AG_CUDA_TRY(cudaGetLastError());
}

template <dtype Out, class F>
struct unary_body {
  F f;
  __device__ void operator()(const elementwise_call& c, int64_t i, int64_t a, int64_t,
                             int64_t) const {
    store<Out>(c.out, i, f(load<Out>(c.in[0], a)));
  }
  // One element of the vector path: its operands loaded, its result as stored.
  __device__ typename storage<Out>::type one(const elementwise_call&, math::compute_t<Out> x,
                                             math::compute_t<Out>) const {
    return storage<Out>::store(f(x));
  }
};

// mode 0: a op b; 1: a op scalar; 2: scalar op a.
template <dtype In, class F, int mode>
struct binary_body {
  F f;
  __device__ void operator()(const elementwise_call& c, int64_t i, int64_t a, int64_t b,
                             int64_t) const {
    using C = math::compute_t<In>;
    const C s = static_cast<C>(c.scalar);
    const C x = mode == 2 ? s : load<In>(c.in[0], a);
    const C y = mode == 0 ? load<In>(c.in[1], b) : mode == 1 ? s : load<In>(c.in[0], a);
    if constexpr (math::is_comparison<F::kind>)
      store<dtype::uint8>(c.out, i, f(x, y));
    else
      store<In>(c.out, i, f(x, y));
  }
  __device__ typename storage<In>::type one(const elementwise_call& c, math::compute_t<In> a,
                                            math::compute_t<In> b) const {
    using C = math::compute_t<In>;
    const C s = static_cast<C>(c.scalar);
    const C x = mode == 2 ? s : a;
    const C y = mode == 0 ? b : mode == 1 ? s : a;
    return storage<In>::store(static_cast<C>(f(x, y)));
  }
};

template <dtype Out>
struct select_body {
  __device__ void operator()(const elementwise_call& c, int64_t i, int64_t a, int64_t b,
                             int64_t d) const {
    store<Out>(c.out, i,
               load<dtype::uint8>(c.in[0], a) != 0 ? load<Out>(c.in[1], b) : load<Out>(c.in[2], d));
  }
};

template <dtype Out, dtype In>
struct convert_body {
  __device__ void operator()(const elementwise_call& c, int64_t i, int64_t a, int64_t,
                             int64_t) const {
    store<Out>(c.out, i, math::convert<Out>(load<In>(c.in[0], a)));
  }
};

// An operator whose operands and result share a dtype, 16 bytes of each at a time (the widest
// load a thread issues): contiguous (rank 0; the tail element by element), or rows (rank 2) that
// every operand reads contiguously along, each row starting 16-byte aligned (a bias add: b's rows
// all the same row). body as walk_kernel's; vector_ready says when.
template <dtype T, class Body>
__global__ void vector_kernel(elementwise_call c, Body body) {
  using S = typename storage<T>::type;
  constexpr int lanes = 16 / sizeof(S);
  const auto n = static_cast<int64_t>(c.count);
  const int64_t chunks = n / lanes;
  const int64_t per_row = c.rank == 2 ? c.shape[1] / lanes : 1;
  for (int64_t j = first_index(); j < chunks; j += grid_stride()) {
    int64_t at[2] = {j * lanes, j * lanes};
    if (c.rank == 2) {
      const int64_t row = j / per_row, col = (j % per_row) * lanes;
      at[0] = row * c.strides[0][0] + col;
      at[1] = row * c.strides[1][0] + col;
    }
    const uint4 a = *reinterpret_cast<const uint4*>(static_cast<const S*>(c.in[0]) + at[0]);
    const uint4 b =
      c.in[1] ? *reinterpret_cast<const uint4*>(static_cast<const S*>(c.in[1]) + at[1]) : uint4{};
    uint4 out;
    const S* av = reinterpret_cast<const S*>(&a);
    const S* bv = reinterpret_cast<const S*>(&b);
    S* ov = reinterpret_cast<S*>(&out);
#pragma unroll
    for (int l = 0; l < lanes; ++l)
      ov[l] = body.one(c, storage<T>::load(av[l]), storage<T>::load(bv[l]));
    reinterpret_cast<uint4*>(c.out)[j] = out;
  }
  if (c.rank == 0)
    for (int64_t i = chunks * lanes + first_index(); i < n; i += grid_stride())
      body(c, i, i, i, i);
}

// Whether vector_kernel can run c, whose elements are `size` bytes.
bool vector_ready(const elementwise_call& c, std::size_t size) {
  const int64_t lanes = static_cast<int64_t>(16 / size);
  auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!aligned(c.out) || !aligned(c.in[0]) || (c.in[1] != nullptr && !aligned(c.in[1])))
    return false;
  if (c.rank == 0)
    return true;
  if (c.rank != 2 || c.shape[1] % lanes != 0)
    return false;
  for (int o = 0; o < 2; ++o)
    if ((o == 0 || c.in[1] != nullptr) && (c.strides[o][1] != 1 || c.strides[o][0] % lanes != 0))
      return false;
  return true;
}

template <dtype T, class Body>
void launch_vector(const elementwise_call& c, Body body, cudaStream_t stream) {
  if (c.count == 0)
    return;
  using S = typename storage<T>::type;
  const std::size_t chunks = std::max<std::size_t>(1, c.count / (16 / sizeof(S)));
  vector_kernel<T><<<grid_for(chunks), block_threads, 0, stream>>>(c, body);
  AG_CUDA_TRY(cudaGetLastError());
}

template <dtype In, class F>
void math_launch(const elementwise_call& c, F f, bool unary, cudaStream_t stream) {
  using C = math::compute_t<In>;
  constexpr bool typed = std::is_same_v<C, float> || math::takes_integers<F::kind>;
  const bool vector = vector_ready(c, sizeof(typename storage<In>::type));
  if constexpr (typed && std::is_invocable_v<F, C>) {
    if (unary)
      return vector ? launch_vector<In>(c, unary_body<In, F>{f}, stream)
                    : launch(c, unary_body<In, F>{f}, stream);
  }
  if constexpr (typed && std::is_invocable_v<F, C, C>) {
    if constexpr (!math::is_comparison<F::kind>) {
      if (vector && c.in[1] != nullptr)
        return launch_vector<In>(c, binary_body<In, F, 0>{f}, stream);
      if (vector && c.k == 1)
        return launch_vector<In>(c, binary_body<In, F, 2>{f}, stream);
      if (vector)
        return launch_vector<In>(c, binary_body<In, F, 1>{f}, stream);
    }
    if (c.in[1] != nullptr)
      return launch(c, binary_body<In, F, 0>{f}, stream);
    if (c.k == 1)
      return launch(c, binary_body<In, F, 2>{f}, stream);
    return launch(c, binary_body<In, F, 1>{f}, stream);
  }
  throw error(std::string{"cuda elementwise: "} + info(c.kind).name + " does not take "
              + to_string(In));
}

} // namespace

void fill(dtype t, void* out, std::size_t count, uint64_t bits, cudaStream_t stream) {
  if (count == 0)
    return; // a launch of zero blocks is an error, and there is nothing to do
  const auto n = static_cast<int64_t>(count);
  switch (size_of(t)) {
    case 1:
      fill_kernel<<<grid_for(count), block_threads, 0, stream>>>(static_cast<uint8_t*>(out), n,
                                                                  static_cast<uint8_t>(bits));
      break;
    case 2:
      fill_kernel<<<grid_for(count), block_threads, 0, stream>>>(
        static_cast<unsigned short*>(out), n, static_cast<unsigned short>(bits));
      break;
    case 4:
      fill_kernel<<<grid_for(count), block_threads, 0, stream>>>(static_cast<uint32_t*>(out), n,
                                                                  static_cast<uint32_t>(bits));
      break;
    default:
      fill_kernel<<<grid_for(count), block_threads, 0, stream>>>(
        static_cast<unsigned long long*>(out), n, static_cast<unsigned long long>(bits));
      break;
  }
  AG_CUDA_TRY(cudaGetLastError());
}

void elementwise(const elementwise_call& c, cudaStream_t stream) {
  const op_family family = info(c.kind).family;
  if (family == op_family::select)
    return math::visit_dtype(c.out_type, [&](auto out) {
      launch(c, select_body<decltype(out)::value>{}, stream);
    });
  if (family == op_family::convert)
    return math::visit_dtype(c.out_type, [&](auto out) {
      math::visit_dtype(c.in_type, [&](auto in) {
        launch(c, convert_body<decltype(out)::value, decltype(in)::value>{}, stream);
      });
    });
  math::visit_dtype(c.in_type, [&](auto in) {
    const bool known = math::visit_math(c.kind, c.k, [&](auto f) {
      math_launch<decltype(in)::value>(c, f, family == op_family::unary, stream);
    });
    if (!known)
      throw error(std::string{"cuda elementwise: "} + to_string(c.kind)
                  + " is not an elementwise operator");
  });
}

} // namespace ag::cuda
