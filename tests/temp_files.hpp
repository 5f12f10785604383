// Scratch files for tests: a fresh directory under /tmp, removed with whatever is left in it, and
// whole-file reads and writes. Include after catch2/catch.hpp.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

namespace ag::test {

class temp_dir {
public:
  // /tmp/ag-<what>-<pid>-XXXXXX
  explicit temp_dir(const std::string& what) {
    std::string templ = "/tmp/ag-" + what + "-" + std::to_string(::getpid()) + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// Points $TMPDIR at a fresh directory for the test's lifetime, then restores it and removes the
// directory with whatever a failed test left in it (remove_all never follows a symlink).
struct scoped_tmpdir {
  std::optional<std::string> saved;
  std::string path;

  scoped_tmpdir() {
    if (const char* t = std::getenv("TMPDIR"))
      saved = t;
    std::string templ = "/tmp/ag-test-" + std::to_string(::getpid()) + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path = buf.data();
    ::setenv("TMPDIR", path.c_str(), 1);
  }
  ~scoped_tmpdir() {
    if (saved)
      ::setenv("TMPDIR", saved->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  scoped_tmpdir(const scoped_tmpdir&) = delete;
  scoped_tmpdir& operator=(const scoped_tmpdir&) = delete;
};

inline std::vector<char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const std::string& path, const char* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  REQUIRE(out.good());
}

inline void spit(const std::string& path, const std::vector<char>& bytes) {
  spit(path, bytes.data(), bytes.size());
}

inline void spit(const std::string& path, const std::string& text) {
  spit(path, text.data(), text.size());
}

} // namespace ag::test
