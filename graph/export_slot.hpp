// export_slot: an operand exported by its lane for other device lanes to read, as peer_export
// writes it into a store range the planner took for it (graph/op.hpp). It carries the exporter's
// stream event, recorded right after the operand's writer: a reader's stream waits for that event
// before it reads, so the order between lanes is kept by the GPUs, not by a round trip through the
// controller. Between children, the event is an interprocess one and the slot also holds the memory
// handle of the allocation that holds the operand (CUDA IPC); between lanes of one process
// (thread mode), the event is the exporter's own cudaEvent_t, and readers find the operand in the
// peer directory. The readers may be sent in the same broadcast as the export; they watch `state`,
// which the exporter sets last and the controller clears when it takes the slot.
//
// The store is shared memory: `state` is read and written with atomic builtins (the slot itself is
// a plain record, copied whole by the tests and the replayer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "graph/op.hpp"

namespace ag {

enum class export_state : uint32_t {
  pending = 0, // the controller cleared the slot; its exporter has not written it yet
  ready = 1,   // written: the handles can be opened, the event waited for
  gone = 2,    // the exporter's lane failed: its memory must not be mapped (set by the controller)
};

struct export_slot {
  uint32_t state = 0;  // an export_state, written last by the exporter
  uint32_t lane = 0;   // the exporting lane
  int32_t pid = 0;     // the exporting process
  int32_t index = 0;   // its device, cuda:index
  uint64_t bytes = 0;  // of the operand
  uint64_t offset = 0; // of the operand in the allocation the handle maps (CUDA packs small ones);
                       // between lanes of one process: the operand's address
  char handle[64] = {}; // cudaIpcMemHandle_t of that allocation (children only)
  char event[64] = {};  // the exporter's stream event: cudaIpcEventHandle_t, or cudaEvent_t
};
static_assert(sizeof(export_slot) == 160);
static_assert(offsetof(export_slot, state) == 0);

namespace export_slots {

inline uint32_t* state_word(std::byte* slot) noexcept { return reinterpret_cast<uint32_t*>(slot); }

// What a reader sees, with acquire ordering: once ready, every other field is written.
inline export_state load(const std::byte* slot) noexcept {
  return static_cast<export_state>(
    __atomic_load_n(reinterpret_cast<const uint32_t*>(slot), __ATOMIC_ACQUIRE));
}

// The exporter: every field of x but state, then state = ready (release).
inline void publish(std::byte* slot, const export_slot& x) noexcept {
  constexpr std::size_t head = sizeof(x.state);
  std::memcpy(slot + head, reinterpret_cast<const std::byte*>(&x) + head, sizeof x - head);
  __atomic_store_n(state_word(slot), static_cast<uint32_t>(export_state::ready), __ATOMIC_RELEASE);
}

// A reader, once load() said ready: the fields, copied around `state` (which the controller may
// still change), and the state as it is read now.
inline export_slot read(const std::byte* slot) noexcept {
  export_slot x;
  constexpr std::size_t head = sizeof(x.state);
  std::memcpy(reinterpret_cast<std::byte*>(&x) + head, slot + head, sizeof x - head);
  x.state = static_cast<uint32_t>(load(slot));
  return x;
}

// The controller, when it takes the slot for an export, before that export is sent (ag-replay:
// before each recorded batch that exports into it): a slot used before (freed once its readers
// ran) must not read as ready to the new export's readers.
inline void clear(std::byte* slot) noexcept {
  __atomic_store_n(state_word(slot), static_cast<uint32_t>(export_state::pending),
                   __ATOMIC_RELEASE);
}

// The controller, once the exporting lane failed: a slot still pending never will be written, and
// its readers stop waiting; one already written names memory of a child that is going, which a
// reader that has not looked yet must not map. Either way it reads as gone from now on (a reader
// that already looked goes on; the controller taints what it writes). Returns what it was.
inline export_state mark_gone(std::byte* slot) noexcept {
  return static_cast<export_state>(__atomic_exchange_n(
    state_word(slot), static_cast<uint32_t>(export_state::gone), __ATOMIC_ACQ_REL));
}

// Clears the slot of every peer_export of b that lies inside the store (one that does not fails
// in its runner, which checks every range).
inline void clear_all(const batch& b, std::byte* store_base, std::size_t store_size) noexcept {
  for (const auto& op : b.ops)
    if (op.kind == op_kind::peer_export && op.out.on_host() && op.out.offset <= store_size
        && sizeof(export_slot) <= store_size - op.out.offset)
      clear(store_base + op.out.offset);
}

} // namespace export_slots

} // namespace ag
