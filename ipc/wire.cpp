#include "ipc/wire.hpp"

#include <cstring>

#include "actorgraph/error.hpp"
#include "ipc/serial.hpp"

namespace ag::wire {

std::string to_string(msg_type t) {
  switch (t) {
    case msg_type::hello: return "hello";
    case msg_type::execute: return "execute";
    case msg_type::destroy: return "destroy";
    case msg_type::ready: return "ready";
    case msg_type::done: return "done";
    case msg_type::failed: return "failed";
    case msg_type::received: return "received";
  }
  return "type#" + std::to_string(static_cast<int>(t));
}

namespace {

bool known(msg_type t) {
  switch (t) {
    case msg_type::hello:
    case msg_type::execute:
    case msg_type::destroy:
    case msg_type::ready:
    case msg_type::done:
    case msg_type::failed:
    case msg_type::received: return true;
  }
  return false;
}

template <class T>
bytes encode_any(T& x) {
  return serial::encode(x, "wire");
}

template <class T>
void decode_any(const void* data, std::size_t size, T& x, const char* name) {
  if (auto why = serial::decode(data, size, x); !why.empty())
    throw error(std::string{"wire: malformed "} + name + " message: " + why);
}

void check_device(const device& d, const char* name) {
  if (static_cast<uint8_t>(d.type) > static_cast<uint8_t>(device::kind::sim) || d.index < 0)
    throw error(std::string{"wire: malformed "} + name + " message: bad device (kind "
                + std::to_string(static_cast<int>(d.type)) + ", index " + std::to_string(d.index)
                + ")");
}

} // namespace

bytes encode_header(const header& h) {
  bytes out(header_size, 0);
  const uint16_t m = magic;
  std::memcpy(out.data(), &m, 2);
  out[2] = static_cast<char>(version);
  out[3] = static_cast<char>(h.type);
  std::memcpy(out.data() + 8, &h.id, 8);
  return out;
}

header decode_header(const void* data, std::size_t size) {
  if (size != header_size)
    throw error("wire: header frame of " + std::to_string(size) + " bytes, expected "
                + std::to_string(header_size));
  const auto* p = static_cast<const unsigned char*>(data);
  uint16_t m = 0;
  std::memcpy(&m, p, 2);
  if (m != magic)
    throw error("wire: bad magic in header frame");
  if (p[2] != version)
    throw error("wire: protocol version " + std::to_string(p[2]) + ", this build speaks "
                + std::to_string(version));
  if (p[4] != 0 || p[5] != 0 || p[6] != 0 || p[7] != 0)
    throw error("wire: reserved header bytes 4-7 are not zero");
  header h;
  h.type = static_cast<msg_type>(p[3]);
  if (!known(h.type))
    throw error("wire: unknown message " + to_string(h.type));
  std::memcpy(&h.id, p + 8, 8);
  return h;
}

std::size_t encoded_size(const batch& x) noexcept {
  return sizeof(x.lane) + sizeof(x.ops_before) + length_bytes(x.ops.size())
         + op_desc_bytes * x.ops.size() + length_bytes(x.no_hold.size())
         + no_hold_bytes * x.no_hold.size();
}

std::size_t encoded_size(const execute_msg& x) noexcept {
  std::size_t n = length_bytes(x.batches.size());
  for (const auto& b : x.batches)
    n += encoded_size(b);
  return n;
}

bytes encode(startup_args& x) { return encode_any(x); }
bytes encode(execute_msg& x) { return encode_any(x); }
bytes encode(ready_msg& x) { return encode_any(x); }
bytes encode(done_msg& x) { return encode_any(x); }
bytes encode(failed_msg& x) { return encode_any(x); }
bytes encode(received_msg& x) { return encode_any(x); }

void decode(const void* data, std::size_t size, startup_args& x) {
  decode_any(data, size, x, "startup_args");
  if (x.version != version)
    throw error("wire: start-up arguments of version " + std::to_string(x.version)
                + ", this build speaks " + std::to_string(version));
  check_device(x.where, "startup_args");
}

void decode(const void* data, std::size_t size, execute_msg& x) {
  decode_any(data, size, x, "execute");
  for (const auto& b : x.batches)
    for (const auto& op : b.ops)
      if (static_cast<std::size_t>(op.kind) >= op_kind_count || op.kind == op_kind::upload)
        throw error("wire: malformed execute message: lane " + std::to_string(b.lane)
                    + " has an operator of kind " + std::to_string(static_cast<int>(op.kind)));
}

void decode(const void* data, std::size_t size, ready_msg& x) {
  decode_any(data, size, x, "ready");
  check_device(x.where, "ready");
}

void decode(const void* data, std::size_t size, done_msg& x) { decode_any(data, size, x, "done"); }

void decode(const void* data, std::size_t size, failed_msg& x) {
  decode_any(data, size, x, "failed");
}

void decode(const void* data, std::size_t size, received_msg& x) {
  decode_any(data, size, x, "received");
}

} // namespace ag::wire
