// Devices an operator can run on: the controller's cpu, a real GPU (cuda:N) or a stand-in GPU
// (sim:N, a CPU worker with a GPU stream's in-order semantics). The seed's DeviceKey.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ag {

struct device {
  enum class kind : uint8_t { cpu = 0, cuda = 1, sim = 2 };

  kind type = kind::cpu;
  int32_t index = 0;

  static constexpr device cpu() noexcept { return {kind::cpu, 0}; }
  static constexpr device cuda(int32_t i) noexcept { return {kind::cuda, i}; }
  static constexpr device sim(int32_t i) noexcept { return {kind::sim, i}; }

  bool is_cpu() const noexcept { return type == kind::cpu; }

  // "cpu", "cuda:0", "sim:1".
  std::string str() const;

  friend bool operator==(const device& x, const device& y) noexcept {
    return x.type == y.type && x.index == y.index;
  }
  friend bool operator!=(const device& x, const device& y) noexcept { return !(x == y); }
  friend bool operator<(const device& x, const device& y) noexcept {
    return x.type != y.type ? x.type < y.type : x.index < y.index;
  }
};

std::ostream& operator<<(std::ostream& out, const device& d);

// Parses one device: "cpu", "cuda:N" or "sim:N". Throws ag::error naming the bad text.
device parse_device(const std::string& text);

// Parses "auto" (returns an empty list: every visible CUDA GPU, else sim:0,sim:1, decided when the
// runtime starts) or a comma list of devices such as "sim:0,sim:1". Spaces around names are ignored;
// an empty entry, a duplicate or an unknown name throws ag::error naming it.
std::vector<device> parse_devices(const std::string& text);

// "sim:0,sim:1".
std::string to_string(const std::vector<device>& devices);

} // namespace ag
