// Message traces (docs/TRACE.md): what a controller sent its runners and what they answered,
// recorded so that apps/ag-replay can run it again against fresh runners and compare. A trace is a
// file header and a sequence of records, each with its own CRC-32; payloads are the CAF binary
// serialization of the record's schema, like the wire format's bodies.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "actorgraph/device.hpp"
#include "graph/collective.hpp"
#include "graph/op.hpp"
#include "ipc/wire.hpp"

namespace ag::trace {

constexpr char magic[8] = {'A', 'G', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr uint32_t format_version = 2;
constexpr std::size_t file_header_size = 16;
constexpr std::size_t record_header_size = 16;
constexpr std::size_t record_trailer_size = 4; // CRC-32 of record header and payload
// The largest store (and live operand) a trace may name: 256 TiB, far beyond any machine, and far
// from wrapping the arithmetic of a replay that adds scratch space to it.
constexpr uint64_t max_store_bytes = uint64_t{1} << 48;
// The largest payload: what the record header's 32-bit length can say.
constexpr uint64_t max_payload_bytes = UINT32_MAX;
// The largest trace file read_file() takes (4 GiB): it reads the whole file into memory.
constexpr uint64_t max_file_bytes = uint64_t{1} << 32;

enum class record_type : uint8_t {
  begin = 1,       // the runtime: mode, devices by lane, store size, wire version
  startup = 2,     // a child's start-up arguments (process mode)
  store_write = 3, // the controller wrote user data into the host store
  local = 4,       // a batch sent to a runner inside the controller (the cpu lane; thread mode)
  frame = 5,       // a message the publisher sent (hello, execute, destroy)
  ack = 6,         // a runner's answer as the executor received it (ready, done, failed, received)
  read = 7,        // the user's thread read a cpu tensor: its bytes
  live = 8,        // the operands the user still held when the runtime stopped
  end = 9,         // the trace was closed in order: how many records came before
  collective = 10, // a collective the executor began placing: its kind, inputs and results
};

std::string to_string(record_type t);

struct begin_rec {
  uint32_t wire_version = wire::version;
  bool process = false;             // recorded in process mode
  std::vector<device> lanes;        // lane i runs on lanes[i]; lane 0 is the cpu
  uint64_t store_bytes = 0;
};

struct startup_rec {
  uint32_t lane = 0;
  wire::startup_args args;
};

struct store_write_rec {
  operand_id id = 0; // the operand uploaded (a cpu tensor, or the staging of a device upload)
  uint64_t offset = 0;
  std::vector<char> data;
};

struct local_rec {
  batch b;
};

struct frame_rec {
  uint64_t id = 0;
  wire::msg_type type = wire::msg_type::hello;
  std::vector<char> body;
};

struct ack_rec {
  uint32_t lane = 0;
  wire::msg_type type = wire::msg_type::done;
  std::vector<char> body; // the wire encoding of the message (ready_msg, done_msg, ...)
};

struct read_rec {
  operand_id id = 0;
  uint64_t offset = 0;
  std::vector<char> data;
};

struct live_operand {
  operand_id id = 0;
  uint32_t lane = 0;
  uint64_t offset = operand_ref::no_offset; // cpu tensors: where in the store
  uint64_t bytes = 0;
};

struct live_rec {
  std::vector<live_operand> operands;
};

struct end_rec {
  uint64_t records = 0; // records before this one, begin included
};

// The operators that carry it out follow in the batches (local and frame records).
struct collective_rec {
  collective_request c;
};

using payload = std::variant<begin_rec, startup_rec, store_write_rec, local_rec, frame_rec, ack_rec,
                             read_rec, live_rec, end_rec, collective_rec>;

struct record {
  uint64_t index = 0;   // 0, 1, ... in the file
  uint64_t at_byte = 0; // where it starts in the file
  int64_t time_ns = 0;  // steady_clock when it was written
  payload body;

  record_type type() const noexcept { return static_cast<record_type>(body.index() + 1); }
};

// A whole trace, read and checked: it begins with begin and ends with end, every lane and store
// range it names exists, every frame and ack decodes.
struct file {
  begin_rec begin;
  std::vector<record> records; // begin and end included
};

// Throws ag::error "trace NAME: record I at byte B: what was wrong" for anything that is not a
// whole, valid trace: a bad checksum, a truncated record, an unknown type, a lane or store range
// out of bounds, a missing end. Never allocates more than the input's size.
file parse(const void* data, std::size_t size, const std::string& name);
// Reads and parses the regular file `path`, at most max_file_bytes of it; a directory, device,
// FIFO or socket is refused (ag::error naming the path) without reading, and without waiting for
// a FIFO's writer.
file read_file(const std::string& path);

// The trace file's bytes of each record, for tools and tests that write traces.
std::vector<char> file_header();
std::vector<char> encode_record(const payload& body, int64_t time_ns);

// Records a trace while a runtime runs; every member is safe to call from any thread (the
// executor, the publisher and the user's thread all record). Encoding holds the lock, so records
// are in the order their writers got it. The first failure to write is kept and reported by
// close(); recording stops there, so the trace then has no end record.
class writer {
public:
  // Creates (truncates) path; throws ag::error naming it when it cannot.
  explicit writer(const std::string& path);
  ~writer();
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  void write(const payload& body);
  // Writes the end record and closes the file. Empty, or why the trace is incomplete.
  std::string close();

  const std::string& path() const noexcept { return path_; }

private:
  void append(const payload& body); // mu_ held

  std::mutex mu_;
  std::string path_;
  std::FILE* out_ = nullptr;
  uint64_t records_ = 0;
  std::string failure_;
};

// 64-bit FNV-1a of bytes: the digest ag-replay prints for an operand.
uint64_t digest(const void* data, std::size_t size) noexcept;

} // namespace ag::trace
