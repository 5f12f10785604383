// shm_channel: the memory of the shared-memory path between a controller and its local children,
// one shared-memory object that every process maps: the completion board (how far each lane got)
// and then the broadcast ring (what the children run). The controller creates it before it
// starts a child and removes its name at once; a child maps the descriptor it inherits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ipc/broadcast_ring.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/tensor_store.hpp"

namespace ag {

class shm_channel {
public:
  // Bytes of the object for `lanes` lanes (the cpu's included), `readers` children and a ring of
  // `ring_bytes` (a power of two, at least 4 KiB).
  static std::size_t bytes_for(uint32_t lanes, uint32_t readers, std::size_t ring_bytes);
  // Controller side: creates the object `name` ("/ag-...", must not exist) and lays both out;
  // the object is unlinked when the channel is destroyed.
  static shm_channel create(const std::string& name, uint32_t lanes, uint32_t readers,
                            std::size_t ring_bytes);
  // Child side: maps the object `name` of `bytes` bytes and finds both in it.
  static shm_channel open(const std::string& name, std::size_t bytes);
  // Child side: the same, for the object it inherited as descriptor `fd` (closed once mapped).
  static shm_channel open_inherited(int fd, std::size_t bytes);

  shm_channel() = default;
  completion_board& board() noexcept { return board_; }
  broadcast_ring& ring() noexcept { return ring_; }
  const std::string& name() const noexcept { return memory_.name(); }
  std::size_t size() const noexcept { return memory_.size(); }
  // The creator's descriptor, for its children to inherit (tensor_store::fd).
  int fd() const noexcept { return memory_.fd(); }
  // Removes the object's name: what maps it, or holds fd(), keeps it.
  void unlink() noexcept { memory_.unlink(); }

private:
  static shm_channel attach(tensor_store memory);

  tensor_store memory_;
  completion_board board_;
  broadcast_ring ring_;
};

} // namespace ag
