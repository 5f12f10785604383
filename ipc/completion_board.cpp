#include "ipc/completion_board.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <new>
#include <string>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

constexpr uint32_t board_magic = 0x41474342; // "AGCB"
// 2: running and beat in the lane slot; 3: stopped; 4: the spin census and each lane's seats
constexpr uint32_t board_version = 4;
constexpr uint32_t max_lanes = 1025;

} // namespace

struct completion_board::header {
  std::atomic<uint32_t> magic; // written last by format()
  uint32_t version;
  uint32_t lanes;
  std::atomic<uint32_t> stopped; // the runtime stops: awaits end
  alignas(64) std::atomic<uint64_t> faults;
  wake_word word;   // waiters sleep here: a count moved, a lane failed, a fault
  wake_word awaits; // runners inside an await sleep here: a count moved, a lane failed, the stop
  spin_census census; // the threads spinning now, controller and children, and the CPUs
};

struct alignas(64) completion_board::lane_slot {
  std::atomic<uint64_t> ops;
  std::atomic<uint64_t> entries;
  std::atomic<uint64_t> failed_at;
  std::atomic<uint64_t> running;
  std::atomic<uint64_t> beat;
  std::atomic<int64_t> seats; // of the census, held by this lane's threads now
};

static_assert(sizeof(completion_board::header) % 64 == 0);
static_assert(sizeof(completion_board::lane_slot) == 64); // a cache line each (docs/PROTOCOL.md)

std::size_t completion_board::bytes_for(uint32_t lanes) {
  return sizeof(header) + sizeof(lane_slot) * lanes;
}

completion_board completion_board::format(void* memory, std::size_t bytes, uint32_t lanes) {
  if (lanes == 0 || lanes > max_lanes)
    throw error("completion board: " + std::to_string(lanes) + " lanes (1 to "
                + std::to_string(max_lanes) + ")");
  if (bytes < bytes_for(lanes))
    throw error("completion board: " + std::to_string(bytes) + " bytes for a board that needs "
                + std::to_string(bytes_for(lanes)));
  if (reinterpret_cast<std::uintptr_t>(memory) % 64 != 0)
    throw error("completion board: memory not aligned to 64 bytes");
  auto* h = new (memory) header{};
  h->version = board_version;
  h->lanes = lanes;
  auto* l = reinterpret_cast<lane_slot*>(static_cast<std::byte*>(memory) + sizeof(header));
  for (uint32_t i = 0; i < lanes; ++i)
    new (l + i) lane_slot{};
  h->magic.store(board_magic, std::memory_order_release);
  return {h, l};
}

completion_board completion_board::attach(void* memory, std::size_t bytes) {
  if (bytes < sizeof(header))
    throw error("completion board: " + std::to_string(bytes) + " bytes hold no board");
  auto* h = static_cast<header*>(memory);
  const auto magic = h->magic.load(std::memory_order_acquire);
  if (magic != board_magic || h->version != board_version)
    throw error("completion board: not a board of version " + std::to_string(board_version)
                + " (magic " + std::to_string(magic) + ")");
  if (h->lanes == 0 || h->lanes > max_lanes || bytes < bytes_for(h->lanes))
    throw error("completion board: " + std::to_string(h->lanes) + " lanes do not fit in "
                + std::to_string(bytes) + " bytes");
  return {h, reinterpret_cast<lane_slot*>(static_cast<std::byte*>(memory) + sizeof(header))};
}

uint32_t completion_board::lanes() const noexcept { return h_->lanes; }

void completion_board::completed(uint32_t lane, uint64_t ops, uint64_t entries) noexcept {
  if (lane >= h_->lanes)
    return;
  lanes_[lane].entries.store(entries, std::memory_order_release);
  lanes_[lane].ops.store(ops, std::memory_order_release);
}

void completion_board::restarted(uint32_t lane, uint64_t ops, uint64_t entries) noexcept {
  if (lane >= h_->lanes)
    return;
  auto& slot = lanes_[lane];
  slot.running.store(0, std::memory_order_relaxed);
  slot.entries.store(entries, std::memory_order_release);
  slot.ops.store(ops, std::memory_order_release);
  slot.failed_at.store(0, std::memory_order_seq_cst);
  notify();
}

void completion_board::failed(uint32_t lane, uint64_t index) noexcept {
  if (lane >= h_->lanes)
    return;
  uint64_t none = 0;
  const uint64_t mark = index == UINT64_MAX ? index : index + 1; // never 0, "healthy"
  lanes_[lane].failed_at.compare_exchange_strong(none, mark, std::memory_order_seq_cst);
  notify();
}

void completion_board::notify() noexcept {
  notify_all(h_->word);
  notify_all(h_->awaits);
}

void completion_board::notify_awaits() noexcept { notify_all(h_->awaits); }

// Relaxed: the watchdog reads these as signs of life, never as the order of anything else.
void completion_board::running(uint32_t lane, uint64_t index) noexcept {
  if (lane < h_->lanes)
    lanes_[lane].running.store(index, std::memory_order_relaxed);
}

void completion_board::beat(uint32_t lane) noexcept {
  if (lane < h_->lanes)
    lanes_[lane].beat.fetch_add(1, std::memory_order_relaxed);
}

spin_seat_ref completion_board::seat(uint32_t lane) noexcept {
  return lane < h_->lanes ? spin_seat_ref{&h_->census, &lanes_[lane].seats} : seat();
}

void completion_board::count_cpus(uint32_t cpus) noexcept {
  h_->census.cpus.store(static_cast<int32_t>(std::min<uint32_t>(cpus, INT32_MAX)),
                        std::memory_order_relaxed);
}

uint32_t completion_board::cpus() const noexcept {
  return static_cast<uint32_t>(std::max(h_->census.cpus.load(std::memory_order_relaxed), 0));
}

spin_seat_ref completion_board::seat() noexcept { return {&h_->census, nullptr}; }

int32_t completion_board::spinning() const noexcept {
  return h_->census.spinning.load(std::memory_order_relaxed);
}

void completion_board::forget_seats(uint32_t lane) noexcept {
  if (lane < h_->lanes)
    spin_seat::forget(h_->census, lanes_[lane].seats);
}

void completion_board::fault() noexcept {
  h_->faults.fetch_add(1, std::memory_order_seq_cst);
  notify_all(h_->word);
}

uint64_t completion_board::faults() const noexcept {
  return h_->faults.load(std::memory_order_acquire);
}

void completion_board::stop() noexcept {
  h_->stopped.store(1, std::memory_order_seq_cst);
  notify();
}

bool completion_board::stopped() const noexcept {
  return h_->stopped.load(std::memory_order_acquire) != 0;
}

uint64_t completion_board::ops(uint32_t lane) const noexcept {
  return lane < h_->lanes ? lanes_[lane].ops.load(std::memory_order_acquire) : 0;
}

uint64_t completion_board::entries(uint32_t lane) const noexcept {
  return lane < h_->lanes ? lanes_[lane].entries.load(std::memory_order_acquire) : 0;
}

uint64_t completion_board::failed_at(uint32_t lane) const noexcept {
  return lane < h_->lanes ? lanes_[lane].failed_at.load(std::memory_order_acquire) : 0;
}

uint64_t completion_board::running_at(uint32_t lane) const noexcept {
  return lane < h_->lanes ? lanes_[lane].running.load(std::memory_order_relaxed) : 0;
}

uint64_t completion_board::beats(uint32_t lane) const noexcept {
  return lane < h_->lanes ? lanes_[lane].beat.load(std::memory_order_relaxed) : 0;
}

template <class Reached>
completion_board::outcome completion_board::wait(Reached reached, uint64_t faults,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 spin_policy spin) noexcept {
  outcome result = outcome::timed_out;
  // The counts first (acquire), then the failure marks and the fault count: see the header.
  auto settled = [&] {
    const int r = reached();
    if (r < 0 || h_->faults.load(std::memory_order_acquire) != faults) {
      result = outcome::stale;
      return true;
    }
    if (r > 0) {
      result = outcome::done;
      return true;
    }
    return false;
  };
  wait_until(h_->word, settled, deadline, spin);
  return result;
}

completion_board::outcome
completion_board::wait_op(uint32_t lane, uint64_t index, uint64_t faults,
                          std::chrono::steady_clock::time_point deadline,
                          spin_policy spin) noexcept {
  if (lane >= h_->lanes)
    return outcome::stale;
  auto& slot = lanes_[lane];
  return wait(
    [&] {
      const bool there = slot.ops.load(std::memory_order_acquire) >= index;
      if (slot.failed_at.load(std::memory_order_acquire) != 0)
        return -1;
      return there ? 1 : 0;
    },
    faults, deadline, spin);
}

completion_board::outcome
completion_board::wait_entries(const std::vector<uint64_t>& entries, uint64_t faults,
                               std::chrono::steady_clock::time_point deadline,
                               spin_policy spin) noexcept {
  if (entries.size() > h_->lanes)
    return outcome::stale;
  return wait(
    [&] {
      bool all = true;
      for (std::size_t l = 0; l < entries.size(); ++l) {
        all = all && lanes_[l].entries.load(std::memory_order_acquire) >= entries[l];
        if (lanes_[l].failed_at.load(std::memory_order_acquire) != 0)
          return -1;
      }
      return all ? 1 : 0;
    },
    faults, deadline, spin);
}

completion_board::await_outcome
completion_board::await_op(uint32_t lane, uint64_t index,
                           std::chrono::steady_clock::time_point deadline,
                           spin_policy spin) noexcept {
  if (lane >= h_->lanes)
    return await_outcome::lane_failed;
  auto& slot = lanes_[lane];
  auto result = await_outcome::timed_out;
  wait_until(
    h_->awaits,
    [&] {
      if (slot.ops.load(std::memory_order_acquire) >= index)
        result = await_outcome::reached;
      else if (slot.failed_at.load(std::memory_order_acquire) != 0)
        result = await_outcome::lane_failed;
      else if (h_->stopped.load(std::memory_order_acquire) != 0)
        result = await_outcome::stopped;
      else
        return false;
      return true;
    },
    deadline, spin);
  return result;
}

local_board::local_board(uint32_t lanes)
  : memory_(completion_board::bytes_for(lanes) + 64) {
  void* p = memory_.data();
  std::size_t space = memory_.size();
  std::align(64, completion_board::bytes_for(lanes), p, space);
  board_ = completion_board::format(p, space, lanes);
}

} // namespace ag
