#include "actorgraph/device.hpp"

#include <algorithm>
#include <cctype>
#include <ostream>

#include "actorgraph/error.hpp"
#include "graph/printable.hpp"

namespace ag {

std::string device::node_name() const { return std::string{node.data()}; }

void check_node_name(const std::string& name, const std::string& what) {
  const bool ok = !name.empty() && name.size() <= device::max_node_name
                  && std::isalpha(static_cast<unsigned char>(name[0]))
                  && std::all_of(name.begin(), name.end(), [](unsigned char c) {
                       return std::isalnum(c) || c == '-' || c == '_';
                     });
  if (!ok)
    throw error(what + ": node name \"" + printable(name) + "\" is not 1 to "
                + std::to_string(device::max_node_name)
                + " letters, digits, '-' or '_' starting with a letter");
}

device device::on(const std::string& name) const {
  device d = *this;
  d.node = {};
  if (name.empty())
    return d;
  check_node_name(name, "device " + printable(name) + "/" + on_its_node().str());
  if (is_cpu())
    throw error("device " + printable(name) + "/cpu: a node lends its cuda:N and sim:N devices; the cpu is "
                "the controller's");
  std::copy(name.begin(), name.end(), d.node.begin());
  return d;
}

std::string device::str() const {
  std::string prefix = local() ? std::string{} : node_name() + "/";
  switch (type) {
    case kind::cpu: return prefix + "cpu";
    case kind::cuda: return prefix + "cuda:" + std::to_string(index);
    case kind::sim: return prefix + "sim:" + std::to_string(index);
  }
  return prefix + "device?" + std::to_string(static_cast<int>(type));
}

std::ostream& operator<<(std::ostream& out, const device& d) { return out << d.str(); }

namespace {

std::string trim(const std::string& s) {
  auto first = std::find_if_not(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
  auto last = std::find_if_not(s.rbegin(), s.rend(), [](unsigned char c) { return std::isspace(c); });
  return first < last.base() ? std::string(first, last.base()) : std::string{};
}

} // namespace

device parse_device(const std::string& raw) {
  std::string text = trim(raw);
  if (const auto slash = text.find('/'); slash != std::string::npos) {
    const std::string node = trim(text.substr(0, slash));
    if (node.empty() || text.find('/', slash + 1) != std::string::npos)
      throw error("unknown device \"" + printable(raw)
                  + "\": expected NAME/cuda:N or NAME/sim:N on a node");
    return parse_device(text.substr(slash + 1)).on(node);
  }
  if (text == "cpu")
    return device::cpu();
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (colon != std::string::npos && (name == "cuda" || name == "sim")) {
    const std::string num = text.substr(colon + 1);
    const bool digits = !num.empty() && num.size() <= 6
                        && std::all_of(num.begin(), num.end(),
                                       [](unsigned char c) { return std::isdigit(c); });
    if (digits) {
      const int32_t index = std::stoi(num);
      return name == "cuda" ? device::cuda(index) : device::sim(index);
    }
  }
  if (text == "auto")
    throw error("unknown device \"auto\": auto names a whole device list (every visible CUDA GPU, "
                "else sim:0,sim:1), not one device; expected cpu, cuda:N or sim:N");
  throw error("unknown device \"" + printable(raw)
              + "\": expected cpu, cuda:N or sim:N (N a non-negative integer), or NAME/cuda:N or "
              "NAME/sim:N on node NAME");
}

std::vector<device> parse_devices(const std::string& text) {
  if (trim(text) == "auto")
    return {};
  std::vector<device> result;
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                           : comma - start);
    if (trim(item).empty())
      throw error("device list \"" + printable(text) + "\" has an empty entry");
    if (trim(item) == "auto")
      throw error("device list \"" + printable(text) + "\": auto stands alone (every visible CUDA "
                  "GPU, else sim:0,sim:1); write auto by itself, or list the devices without it");
    const device d = parse_device(item);
    if (std::find(result.begin(), result.end(), d) != result.end())
      throw error("device list \"" + printable(text) + "\" names " + d.str() + " twice");
    result.push_back(d);
    if (comma == std::string::npos)
      return result;
    start = comma + 1;
  }
}

std::string to_string(const std::vector<device>& devices) {
  std::string out;
  for (const auto& d : devices)
    out += (out.empty() ? "" : ",") + d.str();
  return out;
}

} // namespace ag
