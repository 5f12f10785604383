// A random operator program over cpu and a runtime's devices: new tensors, elementwise ops (with
// moves to bring operands together), relu, matmul, sum, moves, collectives over a random group of
// places (all_reduce, reduce_scatter then all_gather, broadcast), a broadcast of a view, a trip
// through bfloat16, a comparison's where, a softmax, a batched matmul summed over a dimension,
// and drops, with the CPU reference
// of every live value computed beside it. The same seed gives the same program on any runtime with
// the same devices, so thread and process mode can be compared bit for bit.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "cuda/cpu_kernels.hpp"

namespace ag::test {

struct program_result {
  std::vector<std::vector<float>> values;    // to_vector() of every tensor live at the end
  std::vector<std::vector<float>> reference; // the CPU reference of each
};

inline bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// With `keep`, the tensors live at the end are also appended there (to outlive the runtime).
inline program_result run_random_program(runtime& rt, uint32_t seed, int steps,
                                         std::vector<tensor>* keep = nullptr) {
  std::vector<device> places{device::cpu()};
  places.insert(places.end(), rt.devices().begin(), rt.devices().end());
  std::mt19937 rng{seed};
  auto pick = [&](std::size_t size) {
    return std::uniform_int_distribution<std::size_t>(0, size - 1)(rng);
  };
  const std::size_t n = 16 + pick(300); // elements of every vector in this program
  struct value {
    tensor t;
    std::vector<float> ref;
  };
  std::vector<value> pool;
  for (int i = 0; i < steps; ++i) {
    const std::size_t action = pool.size() < 3 ? 0 : pick(17);
    if (action == 0) {
      std::vector<float> v(n);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      for (auto& x : v)
        x = dist(rng);
      const auto where = places[pick(places.size())];
      if (pick(4) == 0)
        pool.push_back({rt.full({int64_t(n)}, v[0], where), std::vector<float>(n, v[0])});
      else
        pool.push_back({rt.from_vector({int64_t(n)}, v, where), v});
    } else if (action <= 4) {
      auto x = pool[pick(pool.size())];
      auto y = pool[pick(pool.size())];
      const auto kind = static_cast<op_kind>(action); // add, sub, mul, div
      std::vector<float> ref(n);
      for (std::size_t i = 0; i < n; ++i)
        ref[i] = kind == op_kind::add   ? x.ref[i] + y.ref[i]
                 : kind == op_kind::sub ? x.ref[i] - y.ref[i]
                 : kind == op_kind::mul ? x.ref[i] * y.ref[i]
                                        : x.ref[i] / y.ref[i];
      const auto yt = y.t.to(x.t.device());
      tensor out = kind == op_kind::add   ? x.t + yt
                   : kind == op_kind::sub ? x.t - yt
                   : kind == op_kind::mul ? x.t * yt
                                          : x.t / yt;
      pool.push_back({out, std::move(ref)});
    } else if (action == 5) {
      auto& x = pool[pick(pool.size())];
      std::vector<float> ref(n);
      for (std::size_t i = 0; i < n; ++i) // NaN stays NaN; -0 becomes +0
        ref[i] = x.ref[i] > 0.0f || x.ref[i] != x.ref[i] ? x.ref[i] : 0.0f;
      pool.push_back({x.t.relu(), std::move(ref)});
    } else if (action == 6) { // a dot product through matmul: [1,n] x [n,1]
      auto& x = pool[pick(pool.size())];
      auto& y = pool[pick(pool.size())];
      std::vector<float> dot(1);
      cpu::matmul(x.ref.data(), y.ref.data(), dot.data(), 1, n, 1);
      const auto where = x.t.device();
      auto m = rt.from_vector({1, int64_t(n)}, x.ref, where)
                 .matmul(rt.from_vector({int64_t(n), 1}, y.ref, where));
      // The product becomes the program's next value (every vector has n elements).
      pool.push_back({rt.full({int64_t(n)}, m.to_vector().at(0), where),
                      std::vector<float>(n, dot[0])});
    } else if (action == 7) {
      auto& x = pool[pick(pool.size())];
      pool.push_back({x.t.to(places[pick(places.size())]), x.ref});
    } else if (action == 8) {
      auto& x = pool[pick(pool.size())];
      std::vector<float> s(1);
      cpu::sum(x.ref.data(), s.data(), n);
      const float total = x.t.sum().to_vector().at(0);
      // A sum becomes the next value, on the device it was computed on.
      pool.push_back({rt.full({int64_t(n)}, total, x.t.device()), std::vector<float>(n, s[0])});
    } else if (action == 10) { // a collective over 1 to every place, in a random order
      std::vector<device> group = places;
      for (std::size_t k = group.size(); k > 1; --k)
        std::swap(group[k - 1], group[pick(k)]);
      group.resize(1 + pick(group.size()));
      std::vector<tensor> parts;
      std::vector<float> sum(n, 0.0f);
      std::vector<float> first;
      for (std::size_t k = 0; k < group.size(); ++k) {
        const auto& x = pool[pick(pool.size())];
        parts.push_back(x.t.to(group[k]));
        if (k == 0)
          sum = first = x.ref;
        else
          for (std::size_t i = 0; i < n; ++i)
            sum[i] += x.ref[i];
      }
      const std::size_t kind = pick(3);
      if (kind == 0) {
        for (auto& r : all_reduce(parts))
          pool.push_back({r, sum});
      } else if (kind == 1 && n % parts.size() == 0) { // blocks of the sum, gathered again
        for (auto& r : all_gather(reduce_scatter(parts)))
          pool.push_back({r, sum});
      } else {
        for (auto& r : broadcast(parts.front(), group))
          pool.push_back({r, first});
      }
    } else if (action == 12) { // a broadcast add of a one-element view
      auto& x = pool[pick(pool.size())];
      auto& y = pool[pick(pool.size())];
      const std::size_t at = pick(n);
      std::vector<float> ref(n);
      for (std::size_t k = 0; k < n; ++k)
        ref[k] = x.ref[k] + y.ref[at];
      const auto b = y.t.to(x.t.device()).slice(0, int64_t(at), int64_t(at) + 1);
      pool.push_back({x.t + b, std::move(ref)});
    } else if (action == 13) { // through bfloat16 and back, with a scalar on the left
      auto& x = pool[pick(pool.size())];
      std::vector<float> ref(n);
      for (std::size_t k = 0; k < n; ++k)
        ref[k] = float(bfloat16(0.5f * float(bfloat16(x.ref[k]))));
      pool.push_back({(0.5 * x.t.astype(dtype::bfloat16)).astype(dtype::float32), std::move(ref)});
    } else if (action == 14) { // a comparison's mask picks one operand or the other's negation
      auto& x = pool[pick(pool.size())];
      auto& y = pool[pick(pool.size())];
      std::vector<float> ref(n);
      for (std::size_t k = 0; k < n; ++k)
        ref[k] = x.ref[k] > y.ref[k] ? x.ref[k] : -y.ref[k];
      const auto yt = y.t.to(x.t.device());
      pool.push_back({where(gt(x.t, yt), x.t, -yt), std::move(ref)});
    } else if (action == 15) { // a softmax over the whole vector, as a row
      auto& x = pool[pick(pool.size())];
      float top = -INFINITY;
      for (float e : x.ref)
        top = std::fmax(top, e);
      double total = 0.0;
      for (float e : x.ref)
        total += std::exp(static_cast<double>(e) - top);
      std::vector<float> ref(n);
      for (std::size_t k = 0; k < n; ++k)
        ref[k] = static_cast<float>(std::exp(static_cast<double>(x.ref[k]) - top) / total);
      pool.push_back({softmax(x.t.reshape({1, int64_t(n)}), -1).reshape({int64_t(n)}),
                      std::move(ref)});
    } else if (action == 16) { // an outer product as a batched matmul, summed over its rows
      auto& x = pool[pick(pool.size())];
      auto& y = pool[pick(pool.size())];
      std::vector<float> ref(n);
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::size_t i = 0; i < n; ++i)
          acc += x.ref[i] * y.ref[j];
        ref[j] = static_cast<float>(acc);
      }
      const auto yt = y.t.to(x.t.device());
      const auto outer = matmul(x.t.reshape({int64_t(n), 1, 1}), yt.reshape({1, 1, int64_t(n)}));
      pool.push_back({outer.reshape({int64_t(n), int64_t(n)}).sum({0}), std::move(ref)});
    } else {
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick(pool.size())));
    }
  }
  program_result r;
  for (auto& v : pool) {
    r.values.push_back(v.t.to_vector());
    r.reference.push_back(v.ref);
    if (keep)
      keep->push_back(v.t);
  }
  return r;
}

} // namespace ag::test
