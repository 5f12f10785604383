#include "ipc/timeline.hpp"

#include "ipc/json_text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include <sys/stat.h>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

// Microseconds with 3 decimals, from integer nanoseconds: no rounding through a double.
void append_micros(std::string& out, std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  out += buf;
}

std::string metadata(const char* kind, int pid, int tid, const std::string& name) {
  std::string e = "{\"name\":\"";
  e += kind;
  e += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
  e += ",\"args\":{\"name\":";
  append_json_string(e, name);
  e += "}}";
  return e;
}

// Validates one JSON value (RFC 8259 grammar) so that a corrupt part cannot corrupt the merged
// file. Nesting is bounded so that arbitrary bytes cannot exhaust the stack.
class json_checker {
public:
  explicit json_checker(const std::string& s) : s_(s) {
  }

  // One object, surrounded by nothing but whitespace.
  bool one_object() {
    skip_ws();
    if (peek() != '{' || !value(0))
      return false;
    skip_ws();
    return i_ == s_.size();
  }

private:
  static constexpr int max_depth = 64;

  char peek() const {
    return i_ < s_.size() ? s_[i_] : '\0';
  }

  bool eat(char c) {
    if (i_ == s_.size() || s_[i_] != c)
      return false;
    ++i_;
    return true;
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  bool digits() {
    std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9')
      ++i_;
    return i_ > start;
  }

  bool value(int depth) {
    if (depth > max_depth)
      return false;
    skip_ws();
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  bool object(int depth) {
    ++i_;
    skip_ws();
    if (eat('}'))
      return true;
    do {
      skip_ws();
      if (!string())
        return false;
      skip_ws();
      if (!eat(':') || !value(depth + 1))
        return false;
      skip_ws();
    } while (eat(','));
    return eat('}');
  }

  bool array(int depth) {
    ++i_;
    skip_ws();
    if (eat(']'))
      return true;
    do {
      if (!value(depth + 1))
        return false;
      skip_ws();
    } while (eat(','));
    return eat(']');
  }

  bool string() {
    if (!eat('"'))
      return false;
    while (i_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"')
        return true;
      if (c < 0x20)
        return false;
      if (c != '\\')
        continue;
      if (i_ == s_.size())
        return false;
      char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k, ++i_)
          if (i_ == s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_])))
            return false;
      } else if (std::strchr("\"\\/bfnrt", e) == nullptr || e == '\0') {
        return false;
      }
    }
    return false;
  }

  bool number() {
    eat('-');
    if (!eat('0') && !digits())
      return false;
    if (eat('.') && !digits())
      return false;
    if (eat('e') || eat('E')) {
      if (!eat('+'))
        eat('-');
      if (!digits())
        return false;
    }
    return true;
  }

  bool literal(const char* word) {
    std::size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0)
      return false;
    i_ += n;
    return true;
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

[[noreturn]] void cannot_write(const std::string& path, int err) {
  throw error("timeline: cannot write " + path + ": " + std::strerror(err));
}

void write_file(const std::string& path, const std::string& head,
                const std::vector<std::string>& events, const char* sep, const std::string& tail) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    cannot_write(path, errno ? errno : EIO);
  out << head;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i > 0)
      out << sep;
    out << events[i];
  }
  out << tail;
  out.close();
  if (!out)
    cannot_write(path, errno ? errno : EIO);
}

} // namespace

void timeline::add(std::string event) {
  std::lock_guard<std::mutex> guard(mtx_);
  events_.push_back(std::move(event));
}

void timeline::name_process(int pid, const std::string& name) {
  add(metadata("process_name", pid, 0, name));
}

void timeline::name_track(int pid, int tid, const std::string& name) {
  add(metadata("thread_name", pid, tid, name));
}

void timeline::span(int pid, int tid, const std::string& name, const std::string& category,
                    clock::time_point begin, clock::time_point end, std::vector<arg> args) {
  std::string e = "{\"name\":";
  append_json_string(e, name);
  e += ",\"cat\":";
  append_json_string(e, category);
  e += ",\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
  e += ",\"ts\":";
  append_micros(e, begin.time_since_epoch());
  e += ",\"dur\":";
  append_micros(e, end < begin ? clock::duration::zero() : end - begin);
  if (!args.empty()) {
    e += ",\"args\":{";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i > 0)
        e += ',';
      append_json_string(e, args[i].key);
      e += ':';
      if (args[i].number)
        e += args[i].value;
      else
        append_json_string(e, args[i].value);
    }
    e += '}';
  }
  e += '}';
  add(std::move(e));
}

std::size_t timeline::size() const {
  std::lock_guard<std::mutex> guard(mtx_);
  return events_.size();
}

void timeline::write(const std::string& path) const {
  std::lock_guard<std::mutex> guard(mtx_);
  write_file(path, "{\"traceEvents\":[\n", events_, ",\n", "\n],\"displayTimeUnit\":\"ms\"}\n");
}

void timeline::write_part(const std::string& path) const {
  std::lock_guard<std::mutex> guard(mtx_);
  write_file(path, "", events_, "\n", events_.empty() ? "" : "\n");
}

bool timeline::merge_part(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return false;
    throw error("timeline: cannot read part " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    throw error("timeline: part " + path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_part_bytes)
    throw error("timeline: part " + path + " is larger than 256 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw error("timeline: cannot read part " + path + ": " + std::strerror(errno));
  // Read in bounded chunks: the file may have grown since stat.
  std::string data;
  std::vector<char> chunk(std::size_t{1} << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    data.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (data.size() > max_part_bytes)
      throw error("timeline: part " + path + " is larger than 256 MiB");
  }
  if (in.bad())
    throw error("timeline: cannot read part " + path);

  // Parsed whole before anything is appended, so that a bad part adds no events.
  std::vector<std::string> parsed;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < data.size();) {
    std::size_t end = std::min(data.find('\n', pos), data.size());
    ++line_no;
    std::string line = data.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty())
      continue;
    if (!json_checker(line).one_object())
      throw error("timeline: part " + path + " line " + std::to_string(line_no) +
                  " is not one JSON object");
    parsed.push_back(std::move(line));
  }

  std::lock_guard<std::mutex> guard(mtx_);
  events_.insert(events_.end(), std::make_move_iterator(parsed.begin()),
                 std::make_move_iterator(parsed.end()));
  return true;
}

} // namespace ag
