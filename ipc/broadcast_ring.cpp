#include "ipc/broadcast_ring.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <string>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

constexpr uint32_t ring_magic = 0x41475247; // "AGRG"
constexpr uint32_t ring_version = 1;
constexpr std::size_t record_header = 8;    // u32 payload bytes, u32 the same, inverted
constexpr uint32_t max_readers = 1024;

constexpr std::size_t padded(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }

// A record's length is 32 bits: a ring holds at most 2 GiB.
bool valid_capacity(uint64_t c) noexcept {
  return c >= 4096 && c <= (uint64_t{1} << 31) && (c & (c - 1)) == 0;
}

} // namespace

struct broadcast_ring::header {
  std::atomic<uint32_t> magic; // written last by format()
  uint32_t version;
  uint64_t capacity;
  uint32_t readers;
  uint32_t reserved;
  alignas(64) std::atomic<uint64_t> write_pos; // bytes published
  std::atomic<uint64_t> messages;              // messages published
  wake_word data;  // readers sleep here: a record was published
  wake_word space; // the writer sleeps here: a reader moved on
};

struct alignas(64) broadcast_ring::reader_slot {
  std::atomic<uint64_t> read_pos;
  std::atomic<uint64_t> read_messages;
  std::atomic<uint32_t> dropped;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring positions are shared");
static_assert(sizeof(broadcast_ring::header) % 64 == 0);

std::size_t broadcast_ring::bytes_for(std::size_t capacity, uint32_t readers) {
  return sizeof(header) + sizeof(reader_slot) * readers + capacity;
}

broadcast_ring broadcast_ring::format(void* memory, std::size_t bytes, std::size_t capacity,
                                      uint32_t readers) {
  if (!valid_capacity(capacity))
    throw error("broadcast ring: capacity " + std::to_string(capacity)
                + " is not a power of two from 4096 bytes to 2 GiB");
  if (readers == 0 || readers > max_readers)
    throw error("broadcast ring: " + std::to_string(readers) + " readers (1 to "
                + std::to_string(max_readers) + ")");
  if (bytes < bytes_for(capacity, readers))
    throw error("broadcast ring: " + std::to_string(bytes) + " bytes of memory for a ring that needs "
                + std::to_string(bytes_for(capacity, readers)));
  if (reinterpret_cast<std::uintptr_t>(memory) % 64 != 0)
    throw error("broadcast ring: memory not aligned to 64 bytes");
  auto* h = new (memory) header{};
  h->capacity = capacity;
  h->readers = readers;
  h->version = ring_version;
  auto* r = reinterpret_cast<reader_slot*>(static_cast<std::byte*>(memory) + sizeof(header));
  for (uint32_t i = 0; i < readers; ++i)
    new (r + i) reader_slot{};
  h->magic.store(ring_magic, std::memory_order_release);
  return {h, r, reinterpret_cast<std::byte*>(r + readers)};
}

broadcast_ring broadcast_ring::attach(void* memory, std::size_t bytes) {
  if (bytes < sizeof(header))
    throw error("broadcast ring: " + std::to_string(bytes) + " bytes hold no ring");
  auto* h = static_cast<header*>(memory);
  const auto magic = h->magic.load(std::memory_order_acquire);
  if (magic != ring_magic || h->version != ring_version)
    throw error("broadcast ring: not a ring of version " + std::to_string(ring_version)
                + " (magic " + std::to_string(magic) + ", version " + std::to_string(h->version)
                + ")");
  if (!valid_capacity(h->capacity) || h->readers == 0 || h->readers > max_readers
      || bytes < bytes_for(h->capacity, h->readers))
    throw error("broadcast ring: a capacity of " + std::to_string(h->capacity) + " bytes for "
                + std::to_string(h->readers) + " readers does not fit in "
                + std::to_string(bytes) + " bytes");
  auto* r = reinterpret_cast<reader_slot*>(static_cast<std::byte*>(memory) + sizeof(header));
  return {h, r, reinterpret_cast<std::byte*>(r + h->readers)};
}

std::size_t broadcast_ring::capacity() const noexcept { return h_->capacity; }
uint32_t broadcast_ring::readers() const noexcept { return h_->readers; }
std::size_t broadcast_ring::max_message() const noexcept {
  return h_->capacity / 2 - record_header;
}
uint64_t broadcast_ring::messages() const noexcept {
  return h_->messages.load(std::memory_order_acquire);
}
wake_word& broadcast_ring::data_word() noexcept { return h_->data; }
wake_word& broadcast_ring::space_word() noexcept { return h_->space; }

void broadcast_ring::drop(uint32_t r) noexcept {
  if (r >= h_->readers)
    return;
  readers_[r].dropped.store(1, std::memory_order_release);
  notify_all(h_->space); // a writer waiting for r looks again
  notify_all(h_->data);  // and r, if it waits, finds out
}

void broadcast_ring::rejoin(uint32_t r) noexcept {
  if (r >= h_->readers)
    return;
  auto& me = readers_[r];
  me.read_pos.store(h_->write_pos.load(std::memory_order_relaxed), std::memory_order_relaxed);
  me.read_messages.store(h_->messages.load(std::memory_order_relaxed), std::memory_order_relaxed);
  me.dropped.store(0, std::memory_order_release);
}

bool broadcast_ring::dropped(uint32_t r) const noexcept {
  return r < h_->readers && readers_[r].dropped.load(std::memory_order_acquire) != 0;
}

uint64_t broadcast_ring::unread(uint32_t r) const noexcept {
  if (r >= h_->readers)
    return 0;
  return h_->write_pos.load(std::memory_order_acquire)
         - readers_[r].read_pos.load(std::memory_order_acquire);
}

uint64_t broadcast_ring::write_position() const noexcept {
  return h_->write_pos.load(std::memory_order_acquire);
}

uint64_t broadcast_ring::read_position(uint32_t r) const noexcept {
  return r < h_->readers ? readers_[r].read_pos.load(std::memory_order_acquire) : 0;
}

uint64_t broadcast_ring::read_messages(uint32_t r) const noexcept {
  if (r >= h_->readers)
    return 0;
  return readers_[r].read_messages.load(std::memory_order_acquire);
}

uint64_t broadcast_ring::min_read_pos() const noexcept {
  uint64_t least = h_->write_pos.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < h_->readers; ++i)
    if (readers_[i].dropped.load(std::memory_order_acquire) == 0)
      least = std::min(least, readers_[i].read_pos.load(std::memory_order_acquire));
  return least;
}

void broadcast_ring::copy_in(uint64_t pos, const void* src, std::size_t n) noexcept {
  if (n == 0) // an empty part may have no address
    return;
  const std::size_t at = pos & (h_->capacity - 1);
  const std::size_t first = std::min(n, h_->capacity - at);
  std::memcpy(data_ + at, src, first);
  if (first < n)
    std::memcpy(data_, static_cast<const std::byte*>(src) + first, n - first);
}

void broadcast_ring::copy_out(uint64_t pos, void* dst, std::size_t n) const noexcept {
  if (n == 0)
    return;
  const std::size_t at = pos & (h_->capacity - 1);
  const std::size_t first = std::min(n, h_->capacity - at);
  std::memcpy(dst, data_ + at, first);
  if (first < n)
    std::memcpy(static_cast<std::byte*>(dst) + first, data_, n - first);
}

// The ring bytes the message takes; `total`: its payload.
std::size_t broadcast_ring::record_bytes(const part* parts, std::size_t count,
                                         std::size_t& total) const {
  total = 0;
  for (std::size_t i = 0; i < count; ++i)
    total += parts[i].bytes;
  if (total > max_message())
    throw error("broadcast ring: a message of " + std::to_string(total)
                + " bytes is larger than the ring's largest (" + std::to_string(max_message())
                + ")");
  return record_header + padded(total);
}

void broadcast_ring::publish(const part* parts, std::size_t count, std::size_t total,
                             std::size_t need) noexcept {
  const uint64_t pos = h_->write_pos.load(std::memory_order_relaxed);
  const uint32_t rec[2] = {static_cast<uint32_t>(total), ~static_cast<uint32_t>(total)};
  copy_in(pos, rec, record_header);
  uint64_t at = pos + record_header;
  for (std::size_t i = 0; i < count; ++i) {
    copy_in(at, parts[i].data, parts[i].bytes);
    at += parts[i].bytes;
  }
  h_->messages.fetch_add(1, std::memory_order_relaxed);
  h_->write_pos.store(pos + need, std::memory_order_release);
  notify_all(h_->data);
}

bool broadcast_ring::fits(const part* parts, std::size_t count) const {
  std::size_t total = 0;
  const std::size_t need = record_bytes(parts, count, total);
  return h_->write_pos.load(std::memory_order_relaxed) + need - min_read_pos() <= h_->capacity;
}

bool broadcast_ring::try_write(const part* parts, std::size_t count) {
  std::size_t total = 0;
  const std::size_t need = record_bytes(parts, count, total);
  const uint64_t pos = h_->write_pos.load(std::memory_order_relaxed);
  if (pos + need - min_read_pos() > h_->capacity)
    return false;
  publish(parts, count, total, need);
  return true;
}

bool broadcast_ring::write(const part* parts, std::size_t count,
                           std::chrono::steady_clock::time_point deadline, spin_policy spin) {
  std::size_t total = 0;
  const std::size_t need = record_bytes(parts, count, total);
  const uint64_t pos = h_->write_pos.load(std::memory_order_relaxed);
  auto room = [&] { return pos + need - min_read_pos() <= h_->capacity; };
  if (!wait_until(h_->space, room, deadline, spin))
    return false;
  publish(parts, count, total, need);
  return true;
}

bool broadcast_ring::readable(uint32_t r) const noexcept {
  if (r >= h_->readers)
    return false;
  return h_->write_pos.load(std::memory_order_acquire)
         != readers_[r].read_pos.load(std::memory_order_relaxed);
}

bool broadcast_ring::read(uint32_t r, std::vector<char>& out,
                          std::chrono::steady_clock::time_point deadline, spin_policy spin) {
  if (r >= h_->readers)
    throw error("broadcast ring: reader " + std::to_string(r) + " of "
                + std::to_string(h_->readers));
  auto& me = readers_[r];
  const uint64_t pos = me.read_pos.load(std::memory_order_relaxed);
  auto ready = [&] {
    return h_->write_pos.load(std::memory_order_acquire) != pos
           || me.dropped.load(std::memory_order_acquire) != 0;
  };
  if (!wait_until(h_->data, ready, deadline, spin))
    return false;
  if (me.dropped.load(std::memory_order_acquire) != 0)
    throw error("broadcast ring: reader " + std::to_string(r)
                + " was dropped (its writer no longer waits for it)");
  const uint64_t published = h_->write_pos.load(std::memory_order_acquire);
  uint32_t rec[2];
  copy_out(pos, rec, record_header);
  if (rec[0] != ~rec[1] || rec[0] > max_message()
      || pos + record_header + padded(rec[0]) > published)
    throw error("broadcast ring: malformed record at byte " + std::to_string(pos) + " ("
                + std::to_string(rec[0]) + " bytes, check " + std::to_string(rec[1]) + ", "
                + std::to_string(published - pos) + " bytes published)");
  out.resize(rec[0]);
  copy_out(pos + record_header, out.data(), rec[0]);
  // A reader dropped while it copied may have copied bytes the writer wrote over since.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (me.dropped.load(std::memory_order_relaxed) != 0)
    throw error("broadcast ring: reader " + std::to_string(r)
                + " was dropped (its writer no longer waits for it)");
  me.read_messages.store(me.read_messages.load(std::memory_order_relaxed) + 1,
                         std::memory_order_release);
  me.read_pos.store(pos + record_header + padded(rec[0]), std::memory_order_release);
  notify_all(h_->space);
  return true;
}

} // namespace ag
