#include "ipc/shm_channel.hpp"

#include "actorgraph/error.hpp"

namespace ag {

namespace {

constexpr std::size_t aligned(std::size_t n) noexcept { return (n + 63) & ~std::size_t{63}; }

} // namespace

std::size_t shm_channel::bytes_for(uint32_t lanes, uint32_t readers, std::size_t ring_bytes) {
  return aligned(completion_board::bytes_for(lanes))
         + broadcast_ring::bytes_for(ring_bytes, readers);
}

shm_channel shm_channel::create(const std::string& name, uint32_t lanes, uint32_t readers,
                                std::size_t ring_bytes) {
  shm_channel c;
  const std::size_t bytes = bytes_for(lanes, readers, ring_bytes);
  c.memory_ = tensor_store::create_shared(name, bytes, tensor_store::pages::all); // used whole
  const std::size_t board_bytes = aligned(completion_board::bytes_for(lanes));
  c.board_ = completion_board::format(c.memory_.base(), board_bytes, lanes);
  c.ring_ = broadcast_ring::format(c.memory_.base() + board_bytes, bytes - board_bytes,
                                   ring_bytes, readers);
  return c;
}

shm_channel shm_channel::open(const std::string& name, std::size_t bytes) {
  return attach(tensor_store::open_shared(name, bytes));
}

shm_channel shm_channel::open_inherited(int fd, std::size_t bytes) {
  return attach(tensor_store::open_inherited(fd, bytes, "shared-memory channel"));
}

shm_channel shm_channel::attach(tensor_store memory) {
  shm_channel c;
  c.memory_ = std::move(memory);
  const std::size_t bytes = c.memory_.size();
  c.board_ = completion_board::attach(c.memory_.base(), bytes);
  const std::size_t board_bytes = aligned(completion_board::bytes_for(c.board_.lanes()));
  if (board_bytes >= bytes)
    throw error("shared-memory channel " + c.memory_.name() + ": " + std::to_string(bytes)
                + " bytes hold no ring after the board");
  c.ring_ = broadcast_ring::attach(c.memory_.base() + board_bytes, bytes - board_bytes);
  return c;
}

} // namespace ag
