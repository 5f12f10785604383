// sub_process_sync: the shared-memory segment between the controller and one child (the seed's
// SubProcessSync): the serialized start-up arguments, the started handshake (with the child's
// start-up error, if any) and the exit flag. Boost.Interprocess 1.74 has no robust mutexes: the
// started and exit flags are atomics that waits poll (a peer stopped or killed while holding the
// mutex cannot block them), the mutex guards only the arguments and the error, every lock has a
// deadline, and waits re-check that the peer lives.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ag {

class sub_process_sync {
public:
  // Largest serialized start-up arguments a segment holds.
  static constexpr std::size_t max_args_bytes = 64 * 1024;

  // Controller: creates segment `name` (mode 0600; must not exist) holding `args`. The segment is
  // removed when this object is destroyed, or at unlink_name(): a child started with the
  // descriptor fd() (sub_process::spawn's `inherit`) needs no name.
  static sub_process_sync create(const std::string& name, const std::vector<char>& args);
  // The controller's descriptor of the segment (close-on-exec), for its child to inherit.
  int fd() const noexcept;
  // Bytes of one segment in /dev/shm (its pages are reserved when it is created).
  static std::size_t segment_bytes() noexcept;

  // Child: opens segment `name`. Throws ag::error naming it when it is missing or not a segment of
  // this version.
  static sub_process_sync open(const std::string& name);
  // Child: maps the segment it inherited as descriptor `fd` (closed with this object, and never
  // passed to a child of its own). Throws ag::error when it is not a segment of this version.
  static sub_process_sync open_inherited(int fd);

  sub_process_sync() noexcept;
  sub_process_sync(sub_process_sync&&) noexcept;
  sub_process_sync& operator=(sub_process_sync&&) noexcept;
  ~sub_process_sync();

  const std::string& name() const noexcept;

  // -- child side ------------------------------------------------------------------------------

  // A copy of the start-up arguments (bounds-checked against the segment).
  std::vector<char> args() const;
  void notify_started();
  // Leaves a start-up error for the controller to report; truncated to fit.
  void report_error(const std::string& what) noexcept;
  // The names of the files in /dev/shm the CUDA driver made for this child's interprocess events
  // and handles (replacing those recorded before; at most 1 KiB of them), for its proxy to
  // remove once it is gone, however it ends.
  void record_driver_files(const std::vector<std::string>& names) noexcept;
  // Waits up to `slice` for the exit flag; true once it is set.
  bool wait_for_exit(std::chrono::milliseconds slice);

  // -- controller side -------------------------------------------------------------------------

  // Waits until the child called notify_started (true), `alive()` returned false or the deadline
  // passed (false).
  bool wait_started(std::chrono::steady_clock::time_point deadline,
                    const std::function<bool()>& alive);
  void notify_exit() noexcept;
  // The child's start-up error, empty if it left none.
  std::string child_error() const;
  // What the child recorded with record_driver_files.
  std::vector<std::string> driver_files() const;
  // Once the child has it open, or inherited fd(): removes the segment's name (both sides keep
  // their mappings), so that nothing is left of it in /dev/shm whatever kills them. Never throws.
  void unlink_name() noexcept;

private:
  struct impl;
  explicit sub_process_sync(std::unique_ptr<impl> p) noexcept;
  std::unique_ptr<impl> impl_;
};

} // namespace ag
