// The wire format between the controller and its children (docs/PROTOCOL.md): every message is two
// ZMQ frames, a fixed 16-byte header and a body that is the CAF binary serialization of the
// message's one schema (its inspect overload); the store bytes that travel to and from a node's
// children (Data-in, Data-out) are three: the header, the 8-byte offset, the bytes (sent from the
// store as they are, without a copy). Every integer is big-endian (network order), so
// machines of either byte order talk. Decoding is bounds-checked: a malformed frame is an
// error naming what was wrong, never a crash and never an allocation larger than the frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actorgraph/device.hpp"
#include "graph/op.hpp"

namespace ag::wire {

constexpr char magic[2] = {'A', 'G'};
constexpr uint8_t version = 9;
constexpr std::size_t header_size = 16;
// ZMQ_MAXMSGSIZE of every receiving socket: the largest frame a peer may send.
constexpr int64_t max_frame_bytes = int64_t{1} << 30;

enum class msg_type : uint8_t {
  // controller -> children (PUB/SUB)
  hello = 1,   // start-up probe: a child that receives one knows its SUB connection is up
  execute = 2, // batches for every child: each runs those of its lane
  destroy = 3, // every child exits
  // controller -> a node's child (its own PUB over TCP, filtered by lane): bytes of the store
  // that the lane's next batches read, for the child's store (which is its node's own)
  data_in = 4,
  // controller -> a node's child, on the broadcast connection right before an Execute whose batch
  // for that lane reads store bytes: the id of the last Data-in piece it needs (lane-filtered).
  // With data streams the pieces come on other connections: the child waits for them here.
  data_sent = 5,
  // child -> controller (PUSH/PULL)
  ready = 16,  // devicesReady: the child's stream exists and its SUB connection is up
  done = 17,   // a batch ran: the lane's operator count and its device bytes
  failed = 18, // an operator failed, or the child saw a protocol error
  received = 19, // how many Execute messages the child has read (for the controller's bound)
  // a node's child -> controller: bytes its batch wrote to its store, before the batch's Done
  // (on the reports connection, or with return streams on those)
  data_out = 20,
  // a node's child with return streams -> controller, on the reports connection right before a
  // Done whose batches wrote store bytes: the id of the last Data-out piece sent on the return
  // streams; the controller takes the lane's messages after it once those pieces are in its store
  data_done = 21,
  // a child on the sockets -> controller, from its main thread on a PUSH of its own, every 50 ms
  // while its runner is inside one operator (or a synchronize), and once more when it is out: the
  // operator's index (0: out). The watchdog's sign that a child reading nothing is busy, not
  // stopped. Ids are the pulses' own; they carry no order.
  pulse = 22,
};

// "execute", "ready", ...; "type#N" otherwise.
std::string to_string(msg_type t);

struct header {
  msg_type type = msg_type::hello;
  uint64_t id = 0; // per sender, +1 per message; data_in, and data_out on return streams: per
                   // lane, +1 per piece; data_sent: the last data_in id sent to the lane. A
                   // child's reports: from first_report_id(its generation) on

  uint32_t lane = 0; // data_in, data_sent, data_out, data_done, pulse: whose they are; else 0
};

// data_in and data_out: the second frame is the store offset (8 bytes), the third the bytes. The
// largest piece one message carries; a larger range goes as several, in order.
constexpr std::size_t data_offset_bytes = 8;
constexpr std::size_t max_data_piece = std::size_t{4} << 20;

// Whether messages of type t are three frames (the data messages).
bool carries_data(msg_type t) noexcept;

// The offset frame of a data message; throws ag::error when it is not 8 bytes.
uint64_t decode_data_offset(const void* frame, std::size_t size);
// Writes the offset into data_offset_bytes at `frame`.
void encode_data_offset(void* frame, uint64_t offset) noexcept;

// The id of the first report of a lane's child of `generation` (0: the first child, n: its n-th
// restart): each generation's ids lie above the last one's, so the controller tells a report of
// a dead child, still on its way, from one of the child that took its place.
constexpr uint64_t generation_shift = 40;
constexpr uint64_t first_report_id(uint32_t generation) noexcept {
  return (uint64_t{generation} << generation_shift) + 1;
}
constexpr uint32_t report_generation(uint64_t id) noexcept {
  return static_cast<uint32_t>(id >> generation_shift);
}
// True for the message that begins a restarted child's run of ids: its Ready, with the first id
// of a generation after the first.
constexpr bool starts_generation(const header& h) noexcept {
  return h.type == msg_type::ready && report_generation(h.id) > 0
         && h.id == first_report_id(report_generation(h.id));
}

// Start-up arguments of a child, written by the controller into its SubProcessSync segment.
struct startup_args {
  uint32_t version = wire::version;
  std::string pub_endpoint;
  std::string pull_endpoint;
  device where;
  uint32_t lane = 0;
  std::string store_name;
  uint64_t store_bytes = 0;
  int32_t parent_pid = 0;
  std::string timeline_part; // where the child writes its timeline events at exit; empty: none
  // A node's child: it reaches its controller over TCP with CURVE, as its node (these keys, Z85),
  // and trades store bytes with it (Data-in, Data-out). Empty: a local child.
  std::string curve_server_key; // the controller's public key
  std::string curve_public;
  std::string curve_secret;
  // A node's child: where it subscribes to its lane's Data-in pieces, one connection each (piece
  // id i on endpoint (i - 1) % n). Empty: they come on pub_endpoint.
  std::vector<std::string> data_endpoints;
  // A node's child: where it pushes the Data-out pieces of its batches, one connection each
  // (piece id i on endpoint (i - 1) % n). Empty: they go on pull_endpoint, before each Done.
  std::vector<std::string> return_endpoints;
  // Steps as graphs (graph_option::cuda_graphs, max_cuda_graphs, cuda_graph_after).
  bool graphs = false;
  uint64_t max_graphs = 64;
  uint32_t graph_after = 2;
  // Which child of its lane this is (0: the first; n: started after the n-th death of one) and
  // the entries (operators and releases) its lane acknowledged before it: its count goes on.
  uint32_t generation = 0;
  uint64_t entries_before = 0;
  // The store as the descriptor the child inherits (its name gone); -1: open store_name.
  int32_t store_fd = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, startup_args& x) {
  return f(caf::meta::type_name("startup_args"), x.version, x.pub_endpoint, x.pull_endpoint,
           x.where, x.lane, x.store_name, x.store_bytes, x.parent_pid, x.timeline_part,
           x.curve_server_key, x.curve_public, x.curve_secret, x.data_endpoints,
           x.return_endpoints, x.graphs, x.max_graphs, x.graph_after, x.generation,
           x.entries_before, x.store_fd);
}

struct execute_msg {
  std::vector<batch> batches;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, execute_msg& x) {
  return f(caf::meta::type_name("execute_msg"), x.batches);
}

// A sequence length of n: base 128, of n truncated to 32 bits as the encoder does, so 1 to 5 bytes.
constexpr std::size_t length_bytes(std::size_t n) noexcept {
  std::size_t bytes = 1;
  for (auto x = static_cast<uint32_t>(n); x > 0x7f; x >>= 7)
    ++bytes;
  return bytes;
}
constexpr std::size_t max_length_bytes = length_bytes(UINT32_MAX);

// Encoded sizes, from the schemas' field types as the encoder writes them (docs/PROTOCOL.md,
// section 2): each field at its own width, the scalar as its 64 bits, a sequence as its length
// (a varbyte) and then its elements.
constexpr std::size_t operand_ref_bytes = sizeof(operand_ref::id) + sizeof(operand_ref::offset);
// An operator without a layout (op_layout::empty()).
constexpr std::size_t op_desc_bytes = sizeof(op_kind) + 4 * operand_ref_bytes
                                      + sizeof(op_desc::count) + sizeof(op_desc::m)
                                      + sizeof(op_desc::k) + sizeof(op_desc::n)
                                      + sizeof(op_desc::scalar) + sizeof(op_desc::scalar2)
                                      + 2 * sizeof(dtype)
                                      + 2 * length_bytes(0) + 3 * sizeof(int64_t);
constexpr std::size_t no_hold_bytes = sizeof(operand_id); // one entry of batch::no_hold

// Whether encode() splits batch x into shapes and values (graph/step_shape.hpp): a step's batch
// with its operators whole.
inline bool split_on_wire(const batch& x) noexcept {
  return x.step != 0 && !x.shape && x.values.empty() && !x.ops.empty();
}

// Exactly what op takes of an encoded batch: op_desc_bytes and its layout's dimensions.
std::size_t encoded_size(const op_desc& op) noexcept;
// Exactly encode(x).size(): the body of an Execute message (the header frame is header_size
// more), and the part of it that one batch takes.
std::size_t encoded_size(const batch& x) noexcept;
std::size_t encoded_size(const execute_msg& x) noexcept;

struct ready_msg {
  uint32_t lane = 0;
  device where;
  int32_t pid = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ready_msg& x) {
  return f(caf::meta::type_name("ready_msg"), x.lane, x.where, x.pid);
}

struct done_msg {
  uint32_t lane = 0;
  uint64_t ops_done = 0;
  uint64_t device_bytes = 0;
  uint64_t entries = 0; // operators and releases of every batch acknowledged (the board's count)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, done_msg& x) {
  return f(caf::meta::type_name("done_msg"), x.lane, x.ops_done, x.device_bytes, x.entries);
}

struct failed_msg {
  uint32_t lane = 0;
  uint64_t index = 0;
  std::string what;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, failed_msg& x) {
  return f(caf::meta::type_name("failed_msg"), x.lane, x.index, x.what);
}

struct received_msg {
  uint32_t lane = 0;
  uint64_t count = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, received_msg& x) {
  return f(caf::meta::type_name("received_msg"), x.lane, x.count);
}

using bytes = std::vector<char>;

// data_done's body: the id of the last Data-out piece sent on the return streams (8 bytes, as
// a data offset).
bytes encode_data_done(uint64_t last_piece);
uint64_t decode_data_done(const void* body, std::size_t size);
// pulse's body: the index of the operator the runner is inside (8 bytes, big-endian; 0: none).
bytes encode_pulse(uint64_t running);
uint64_t decode_pulse(const void* body, std::size_t size);

// The step shapes a child's decoder decoded, by their encoded bytes: the last `capacity` seen.
class shape_memo {
public:
  static constexpr std::size_t capacity = 64;
  // The shape encoded as [p, p + n), or null.
  std::shared_ptr<const step_shape> find(const char* p, std::size_t n) noexcept;
  void add(const char* p, std::size_t n, std::shared_ptr<const step_shape> shape);

private:
  struct entry {
    std::string bytes;
    std::shared_ptr<const step_shape> shape;
    uint64_t used = 0;
  };
  std::vector<entry> entries_;
  uint64_t clock_ = 0;
};

bytes encode_header(const header& h);
// Throws ag::error naming what is wrong: size, magic, version, unknown type, a lane where none
// belongs.
header decode_header(const void* data, std::size_t size);

bytes encode(startup_args& x);
bytes encode(execute_msg& x);
bytes encode(ready_msg& x);
bytes encode(done_msg& x);
bytes encode(failed_msg& x);
bytes encode(received_msg& x);

// Each throws ag::error naming the message and what was wrong (truncated, trailing bytes, a length
// larger than the frame, a bad enum value).
void decode(const void* data, std::size_t size, startup_args& x);
void decode(const void* data, std::size_t size, execute_msg& x);
// As decode(), for the child that runs lane `lane`: only that lane's batches are decoded (the
// others are passed over), and a step's batch whose shape `memo` holds (the same bytes) comes
// with that shape and its values, its operators not decoded again (batch::shape); a new shape is
// decoded, checked and kept.
void decode(const void* data, std::size_t size, execute_msg& x, shape_memo& memo, uint32_t lane);
void decode(const void* data, std::size_t size, ready_msg& x);
void decode(const void* data, std::size_t size, done_msg& x);
void decode(const void* data, std::size_t size, failed_msg& x);
void decode(const void* data, std::size_t size, received_msg& x);

} // namespace ag::wire
