#include "apps/ag-train/digits.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <zlib.h>

namespace ag::train {

std::vector<std::string> default_digits_paths() {
  return {"/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
          "/usr/local/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"};
}

namespace {

std::string read_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw std::runtime_error(path + ": cannot open it (" + std::strerror(errno)
                             + "; python3-sklearn ships it)");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{64} << 20)) {
      gzclose(f);
      throw std::runtime_error(path + ": more than 64 MiB uncompressed; not the digits");
    }
  }
  int code = 0;
  const char* why = gzerror(f, &code);
  const std::string reason = why ? why : "";
  gzclose(f);
  if (n < 0 || code < 0)
    throw std::runtime_error(path + ": not a readable gzip file (" + reason + ")");
  return text;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

dataset read_digits(const std::string& path) {
  const std::string text = read_gzip(path);
  dataset d;
  std::size_t line = 0, at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    ++line;
    std::string row = text.substr(at, end - at);
    at = end + 1;
    if (row.empty() || row == "\r")
      continue;
    const char* p = row.c_str();
    std::vector<double> fields;
    while (*p) {
      char* stop = nullptr;
      const double v = std::strtod(p, &stop);
      if (stop == p)
        throw std::runtime_error(path + ": line " + std::to_string(line) + ": not a number at \""
                                 + std::string{p}.substr(0, 10) + "\"");
      fields.push_back(v);
      p = stop;
      while (*p == ',' || *p == ' ' || *p == '\r')
        ++p;
    }
    if (fields.size() != 65)
      throw std::runtime_error(path + ": line " + std::to_string(line) + ": "
                               + std::to_string(fields.size())
                               + " fields, expected 64 pixels and a digit");
    for (std::size_t i = 0; i < 64; ++i) {
      if (fields[i] < 0 || fields[i] > 16)
        throw std::runtime_error(path + ": line " + std::to_string(line) + ": pixel "
                                 + std::to_string(i) + " is " + std::to_string(fields[i])
                                 + ", outside 0 to 16");
      d.pixels.push_back(static_cast<float>(fields[i] / 16.0));
    }
    if (fields[64] < 0 || fields[64] > 9 || fields[64] != static_cast<int>(fields[64]))
      throw std::runtime_error(path + ": line " + std::to_string(line) + ": the digit is "
                               + std::to_string(fields[64]));
    d.labels.push_back(static_cast<int32_t>(fields[64]));
  }
  if (d.labels.empty())
    throw std::runtime_error(path + ": no images");
  return d;
}

void split(const dataset& all, uint64_t seed, std::size_t test, dataset& train_set,
           dataset& test_set) {
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  uint64_t state = seed;
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[splitmix64(state) % i]);
  train_set = {};
  test_set = {};
  for (std::size_t j = 0; j < order.size(); ++j) {
    dataset& to = j < test ? test_set : train_set;
    const std::size_t i = order[j];
    to.pixels.insert(to.pixels.end(), all.pixels.begin() + static_cast<std::ptrdiff_t>(i * 64),
                     all.pixels.begin() + static_cast<std::ptrdiff_t>(i * 64 + 64));
    to.labels.push_back(all.labels[i]);
  }
}

} // namespace ag::train
