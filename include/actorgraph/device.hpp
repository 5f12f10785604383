// Devices an operator can run on: the controller's cpu, a real GPU (cuda:N) or a stand-in GPU
// (sim:N, a CPU worker with a GPU stream's in-order semantics), on this machine or on a node (a
// machine running ag-node, named in graph_option::nodes: "n1/cuda:0"). The seed's DeviceKey.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ag {

struct device {
  enum class kind : uint8_t { cpu = 0, cuda = 1, sim = 2 };

  // The longest node name: node names are 1 to 15 letters, digits, '-' or '_', the first a letter.
  static constexpr std::size_t max_node_name = 15;

  kind type = kind::cpu;
  int32_t index = 0;
  // The node it is on, NUL-padded: all zero for this machine.
  std::array<char, max_node_name + 1> node{};

  static constexpr device cpu() noexcept { return {kind::cpu, 0}; }
  static constexpr device cuda(int32_t i) noexcept { return {kind::cuda, i}; }
  static constexpr device sim(int32_t i) noexcept { return {kind::sim, i}; }

  bool is_cpu() const noexcept { return type == kind::cpu; }
  // On this machine (no node).
  bool local() const noexcept { return node[0] == '\0'; }
  // The node's name; empty for this machine.
  std::string node_name() const;
  // The same device on node `name` (empty: this machine). Throws ag::error naming a bad name, or
  // a cpu, which no node lends (the cpu is the controller's).
  device on(const std::string& name) const;
  // The same device as its node sees it (no node).
  device on_its_node() const noexcept {
    device d = *this;
    d.node = {};
    return d;
  }

  // "cpu", "cuda:0", "sim:1", "n1/cuda:0".
  std::string str() const;

  friend bool operator==(const device& x, const device& y) noexcept {
    return x.type == y.type && x.index == y.index && x.node == y.node;
  }
  friend bool operator!=(const device& x, const device& y) noexcept { return !(x == y); }
  friend bool operator<(const device& x, const device& y) noexcept {
    if (x.node != y.node)
      return x.node < y.node;
    return x.type != y.type ? x.type < y.type : x.index < y.index;
  }
};

// Throws ag::error naming `name` (and `what` it names) unless it is a valid node name.
void check_node_name(const std::string& name, const std::string& what);

std::ostream& operator<<(std::ostream& out, const device& d);

// Parses one device: "cpu", "cuda:N" or "sim:N", on this machine, or "NAME/cuda:N", "NAME/sim:N"
// on node NAME. Throws ag::error naming the bad text.
device parse_device(const std::string& text);

// Parses "auto" (returns an empty list: every visible CUDA GPU, else sim:0,sim:1, decided when the
// runtime starts) or a comma list of devices such as "sim:0,sim:1" or "cuda:0,n1/cuda:0". Spaces around names are ignored;
// an empty entry, a duplicate or an unknown name throws ag::error naming it.
std::vector<device> parse_devices(const std::string& text);

// "sim:0,sim:1".
std::string to_string(const std::vector<device>& devices);

// The CUDA ordinal (cudaSetDevice's) that d, a cuda device of this machine, runs on in this
// process: its index, unless AG_CUDA_ORDINALS maps it to another GPU. ag::error for any other
// device.
int cuda_ordinal(const device& d);

} // namespace ag
