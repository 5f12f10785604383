#include "actorgraph/device.hpp"

#include <algorithm>
#include <cctype>
#include <ostream>

#include "actorgraph/error.hpp"

namespace ag {

std::string device::str() const {
  switch (type) {
    case kind::cpu: return "cpu";
    case kind::cuda: return "cuda:" + std::to_string(index);
    case kind::sim: return "sim:" + std::to_string(index);
  }
  return "device?" + std::to_string(static_cast<int>(type));
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
  const std::string text = trim(raw);
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
  throw error("unknown device \"" + raw
              + "\": expected cpu, cuda:N or sim:N (N a non-negative integer), or auto");
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
      throw error("device list \"" + text + "\" has an empty entry");
    const device d = parse_device(item);
    if (std::find(result.begin(), result.end(), d) != result.end())
      throw error("device list \"" + text + "\" names " + d.str() + " twice");
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
