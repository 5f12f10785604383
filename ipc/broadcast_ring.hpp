// broadcast_ring: messages from one writer to N readers through memory every process maps (the
// controller's broadcast to its children on the shared-memory path). Variable-length records in a
// circular byte buffer; positions are byte counts that only grow. The writer copies a record in,
// then publishes it by advancing write_pos (release); a reader reads only below write_pos
// (acquire), so it never sees a record half-written, and advances its own read_pos (release) once
// it has copied the record out. The writer never overwrites what a reader has not read: a write
// that finds no room fails (try_write) or waits for it with a deadline (write); a reader whose
// process is gone is dropped, and the writer no longer waits for it. A message is one record, at
// most max_message() bytes. Layout and ordering: docs/PROTOCOL.md, "The shared-memory path".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ipc/futex_wait.hpp"

namespace ag {

class broadcast_ring {
public:
  struct header;

  // Bytes of memory a ring of `capacity` data bytes (a power of two, at least 4 KiB) and
  // `readers` readers takes.
  static std::size_t bytes_for(std::size_t capacity, uint32_t readers);
  // Writer side: lays a ring out in `memory` (bytes_for(...) bytes, 64-byte aligned).
  static broadcast_ring format(void* memory, std::size_t bytes, std::size_t capacity,
                               uint32_t readers);
  // Reader side: the ring laid out in `memory`; throws ag::error when it is not a ring of this
  // version or does not fit in `bytes`.
  static broadcast_ring attach(void* memory, std::size_t bytes);

  broadcast_ring() = default;
  explicit operator bool() const noexcept { return h_ != nullptr; }

  std::size_t capacity() const noexcept;
  uint32_t readers() const noexcept;
  // The largest message: half the capacity, less a record's header.
  std::size_t max_message() const noexcept;

  // -- writer (one thread at a time) ----------------------------------------------------------

  // One message: `count` parts, concatenated.
  struct part {
    const void* data;
    std::size_t bytes;
  };
  // Publishes the message if every reader not dropped left room for it; false (nothing written)
  // otherwise. Throws ag::error for a message larger than max_message().
  bool try_write(const part* parts, std::size_t count);
  // True when try_write would publish the message now (and will, until the writer writes
  // something else: readers only make room).
  bool fits(const part* parts, std::size_t count) const;
  // Waits for room (spin, then futex) up to the deadline: false when it did not come.
  bool write(const part* parts, std::size_t count, std::chrono::steady_clock::time_point deadline,
             spin_policy spin = {});
  // The writer no longer waits for reader r (its process is gone); r's next read throws.
  void drop(uint32_t r) noexcept;
  bool dropped(uint32_t r) const noexcept;
  // Dropped reader r is read by a new process (its lane's child started again): it reads from
  // the next message written on, and the writer waits for it again. The writer's thread only.
  void rejoin(uint32_t r) noexcept;
  // Messages written so far, and their bytes (records and padding: the write position).
  uint64_t messages() const noexcept;
  uint64_t write_position() const noexcept;
  // Where reader r is (bytes it read past, as it published), and the least such position of the
  // readers not dropped (never past the write position).
  uint64_t read_position(uint32_t r) const noexcept;
  uint64_t least_read_position() const noexcept { return min_read_pos(); }
  // Bytes reader r has yet to read.
  uint64_t unread(uint32_t r) const noexcept;
  // Where the writer sleeps while it waits for room.
  wake_word& space_word() noexcept;

  // -- reader r (one thread per reader) -------------------------------------------------------

  // True when reader r has something to read.
  bool readable(uint32_t r) const noexcept;
  // The next message for reader r, into `out` (replaced): true; false when nothing came by the
  // deadline. Throws ag::error when r was dropped or the record is malformed.
  bool read(uint32_t r, std::vector<char>& out, std::chrono::steady_clock::time_point deadline,
            spin_policy spin = {});
  // Messages reader r has read.
  uint64_t read_messages(uint32_t r) const noexcept;
  // Where readers sleep while they wait.
  wake_word& data_word() noexcept;

private:
  struct reader_slot;
  broadcast_ring(header* h, reader_slot* r, std::byte* data) noexcept
    : h_(h), readers_(r), data_(data) {}
  uint64_t min_read_pos() const noexcept;
  std::size_t record_bytes(const part* parts, std::size_t count, std::size_t& total) const;
  void publish(const part* parts, std::size_t count, std::size_t total, std::size_t need) noexcept;
  void copy_in(uint64_t pos, const void* src, std::size_t n) noexcept;
  void copy_out(uint64_t pos, void* dst, std::size_t n) const noexcept;

  header* h_ = nullptr;
  reader_slot* readers_ = nullptr;
  std::byte* data_ = nullptr;
};

} // namespace ag
