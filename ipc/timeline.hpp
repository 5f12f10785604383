// A timeline of what the runtime did, as Chrome trace-event JSON that Perfetto and chrome://tracing
// open. Each child writes a part file at its exit; the controller merges the parts into one file.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
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

} // namespace ag
