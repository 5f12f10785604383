// flat_json: one JSON object of numbers, strings and booleans, no nesting: what a scenario process
// of ag-soak writes as its one line of output, and what the parent reads back from it.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ipc/json_text.hpp"

namespace ag::soak {

class flat_json {
public:
  void add(const std::string& key, const std::string& value) { put(key, quote(value)); }
  void add(const std::string& key, const char* value) { put(key, quote(value)); }
  void add(const std::string& key, bool value) { put(key, value ? "true" : "false"); }
  void add(const std::string& key, double value) {
    if (!std::isfinite(value))
      return put(key, "null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    put(key, buf);
  }
  void add(const std::string& key, long long value) { put(key, std::to_string(value)); }
  void add(const std::string& key, int value) { add(key, static_cast<long long>(value)); }
  void add(const std::string& key, long value) { add(key, static_cast<long long>(value)); }
  void add(const std::string& key, unsigned long value) { put(key, std::to_string(value)); }
  void add(const std::string& key, unsigned long long value) { put(key, std::to_string(value)); }

  // {"key": value, ...} on one line, in the order added.
  std::string str() const {
    std::string out = "{";
    for (std::size_t i = 0; i < fields_.size(); ++i)
      out += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
    return out + "}";
  }

  // Reads a line that str() wrote (any flat object of numbers, strings, booleans and nulls);
  // nothing when it is not one.
  static std::optional<flat_json> parse(const std::string& line) {
    flat_json out;
    std::size_t i = 0;
    auto skip = [&] {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        ++i;
    };
    skip();
    if (i >= line.size() || line[i++] != '{')
      return std::nullopt;
    skip();
    if (i < line.size() && line[i] == '}')
      return out;
    for (;;) {
      skip();
      auto key = read_string(line, i);
      if (!key)
        return std::nullopt;
      skip();
      if (i >= line.size() || line[i++] != ':')
        return std::nullopt;
      skip();
      std::string raw;
      if (i < line.size() && line[i] == '"') {
        const std::size_t from = i;
        if (!read_string(line, i))
          return std::nullopt;
        raw = line.substr(from, i - from);
      } else {
        const std::size_t from = i;
        while (i < line.size() && line[i] != ',' && line[i] != '}' && line[i] != ' ')
          ++i;
        raw = line.substr(from, i - from);
        if (raw.empty())
          return std::nullopt;
      }
      out.put(*key, raw);
      skip();
      if (i >= line.size())
        return std::nullopt;
      if (line[i] == '}')
        return out;
      if (line[i++] != ',')
        return std::nullopt;
    }
  }

  bool has(const std::string& key) const { return find(key) != nullptr; }

  // A number (NaN when absent, null or not a number).
  double num(const std::string& key) const {
    const std::string* raw = find(key);
    if (raw == nullptr || raw->empty() || (*raw)[0] == '"' || *raw == "null")
      return NAN;
    char* end = nullptr;
    const double v = std::strtod(raw->c_str(), &end);
    return end == raw->c_str() + raw->size() ? v : NAN;
  }

  // A string, without quotes (empty when absent or not a string).
  std::string text(const std::string& key) const {
    const std::string* raw = find(key);
    if (raw == nullptr || raw->empty() || (*raw)[0] != '"')
      return {};
    std::size_t i = 0;
    return read_string(*raw, i).value_or(std::string{});
  }

  bool flag(const std::string& key) const {
    const std::string* raw = find(key);
    return raw != nullptr && *raw == "true";
  }

private:
  void put(const std::string& key, std::string raw) {
    for (auto& f : fields_)
      if (f.first == key) {
        f.second = std::move(raw);
        return;
      }
    fields_.emplace_back(key, std::move(raw));
  }

  const std::string* find(const std::string& key) const {
    for (const auto& f : fields_)
      if (f.first == key)
        return &f.second;
    return nullptr;
  }

  static std::string quote(const std::string& s) {
    std::string out;
    append_json_string(out, s);
    return out;
  }

  // The string that begins at line[i] (a '"'); i moves past its closing quote.
  static std::optional<std::string> read_string(const std::string& line, std::size_t& i) {
    if (i >= line.size() || line[i] != '"')
      return std::nullopt;
    std::string out;
    for (++i; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"') {
        ++i;
        return out;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++i >= line.size())
        return std::nullopt;
      switch (line[i]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'u':
          if (i + 4 >= line.size())
            return std::nullopt;
          out += static_cast<char>(std::strtol(line.substr(i + 1, 4).c_str(), nullptr, 16));
          i += 4;
          break;
        default: out += line[i];
      }
    }
    return std::nullopt;
  }

  std::vector<std::pair<std::string, std::string>> fields_;
};

} // namespace ag::soak
