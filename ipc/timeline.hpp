// A timeline of what the runtime did, as Chrome trace-event JSON that Perfetto and chrome://tracing
// open. Each child writes a part file at its exit; the controller merges the parts into one file.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ag {

// Timestamps are steady_clock (CLOCK_MONOTONIC) microseconds since its epoch, shared by every
// process on the machine, so the parts of different processes line up without any clock exchange.
// Events are held already serialized so that writing the file is a join. Thread-safe.
class timeline {
public:
  using clock = std::chrono::steady_clock;

  struct arg {
    std::string key;
    std::string value;
    bool number = false; // emitted unquoted: the caller guarantees a valid JSON number
  };

  // Metadata events, so that tracks show "controller", "cuda:0", ... instead of bare ids.
  void name_process(int pid, const std::string& name);
  void name_track(int pid, int tid, const std::string& name);

  // A complete event on track (pid, tid); an end before begin is recorded as a zero duration.
  void span(int pid, int tid, const std::string& name, const std::string& category,
            clock::time_point begin, clock::time_point end, std::vector<arg> args = {});

  class scoped_span;

  // Events held, metadata included.
  std::size_t size() const;

  // The whole file, events in the order recorded (merged parts appended). Throws ag::error naming
  // the path when it cannot be written.
  void write(const std::string& path) const;

  // A part file for merge_part: one event JSON object per line, nothing else.
  void write_part(const std::string& path) const;

  // Appends the events of a part file, all or none. A missing part returns false (its child died
  // before writing it); a line that is not one JSON object, or a part over max_part_bytes, throws
  // ag::error naming the path (and the line).
  bool merge_part(const std::string& path);

  static constexpr std::size_t max_part_bytes = std::size_t{256} << 20;

private:
  void add(std::string event);

  mutable std::mutex mtx_;
  std::vector<std::string> events_;
};

// The span of a piece of work, timed from construction to close() (or to the end of its scope)
// and recorded then as one complete event; with a null timeline it reads no clock and records
// nothing. A scope left by an exception records nothing either: the work did not complete. Name
// and arguments may be set until it closes; `if (span)` guards work done only for them.
class timeline::scoped_span {
public:
  scoped_span(timeline* tl, int pid, int tid, std::string name, std::string category)
    : tl_(tl), pid_(pid), tid_(tid), exceptions_(tl ? std::uncaught_exceptions() : 0) {
    if (!tl_)
      return;
    name_ = std::move(name);
    category_ = std::move(category);
    begin_ = clock::now();
  }

  ~scoped_span() {
    if (!tl_ || std::uncaught_exceptions() > exceptions_)
      return;
    try {
      close();
    } catch (...) { // a timeline that cannot take one more event loses it
    }
  }

  scoped_span(const scoped_span&) = delete;
  scoped_span& operator=(const scoped_span&) = delete;

  // True until it closes, when there is a timeline.
  explicit operator bool() const noexcept { return tl_ != nullptr; }

  void rename(std::string name) {
    if (tl_)
      name_ = std::move(name);
  }

  // An argument shown as a number.
  void add(const char* key, uint64_t value) {
    if (tl_)
      args_.push_back({key, std::to_string(value), true});
  }

  // Records the span, ending now; the first call only.
  void close() {
    if (!tl_)
      return;
    auto* tl = std::exchange(tl_, nullptr);
    tl->span(pid_, tid_, name_, category_, begin_, clock::now(), std::move(args_));
  }

  // Records nothing, now or later.
  void drop() noexcept { tl_ = nullptr; }

private:
  timeline* tl_;
  int pid_;
  int tid_;
  int exceptions_;
  std::string name_;
  std::string category_;
  clock::time_point begin_{};
  std::vector<arg> args_;
};

} // namespace ag
