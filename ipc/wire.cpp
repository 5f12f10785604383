#include "ipc/wire.hpp"

#include "graph/step_shape.hpp"

#include <cstring>

#include "actorgraph/error.hpp"
#include "ipc/serial.hpp"

namespace ag::wire {

std::string to_string(msg_type t) {
  switch (t) {
    case msg_type::hello: return "hello";
    case msg_type::execute: return "execute";
    case msg_type::destroy: return "destroy";
    case msg_type::data_in: return "data_in";
    case msg_type::data_sent: return "data_sent";
    case msg_type::ready: return "ready";
    case msg_type::done: return "done";
    case msg_type::failed: return "failed";
    case msg_type::received: return "received";
    case msg_type::data_out: return "data_out";
    case msg_type::data_done: return "data_done";
    case msg_type::pulse: return "pulse";
  }
  return "type#" + std::to_string(static_cast<int>(t));
}

namespace {

bool known(msg_type t) {
  switch (t) {
    case msg_type::hello:
    case msg_type::execute:
    case msg_type::destroy:
    case msg_type::data_in:
    case msg_type::data_sent:
    case msg_type::ready:
    case msg_type::done:
    case msg_type::failed:
    case msg_type::received:
    case msg_type::data_out:
    case msg_type::data_done:
    case msg_type::pulse: return true;
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

bool carries_lane(msg_type t) {
  return t == msg_type::data_in || t == msg_type::data_sent || t == msg_type::data_out
         || t == msg_type::data_done || t == msg_type::pulse;
}

// Big-endian, whatever this machine's order.
void put_be(unsigned char* p, uint64_t x, int bytes) noexcept {
  for (int i = bytes - 1; i >= 0; --i, x >>= 8)
    p[i] = static_cast<unsigned char>(x & 0xff);
}

uint64_t get_be(const unsigned char* p, int bytes) noexcept {
  uint64_t x = 0;
  for (int i = 0; i < bytes; ++i)
    x = (x << 8) | p[i];
  return x;
}

} // namespace

bytes encode_header(const header& h) {
  bytes out(header_size, 0);
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  p[0] = static_cast<unsigned char>(magic[0]);
  p[1] = static_cast<unsigned char>(magic[1]);
  p[2] = version;
  p[3] = static_cast<unsigned char>(h.type);
  put_be(p + 4, h.lane, 4);
  put_be(p + 8, h.id, 8);
  return out;
}

header decode_header(const void* data, std::size_t size) {
  if (size != header_size)
    throw error("wire: header frame of " + std::to_string(size) + " bytes, expected "
                + std::to_string(header_size));
  const auto* p = static_cast<const unsigned char*>(data);
  if (p[0] != static_cast<unsigned char>(magic[0]) || p[1] != static_cast<unsigned char>(magic[1]))
    throw error("wire: bad magic in header frame");
  if (p[2] != version)
    throw error("wire: protocol version " + std::to_string(p[2]) + ", this build speaks "
                + std::to_string(version));
  header h;
  h.type = static_cast<msg_type>(p[3]);
  if (!known(h.type))
    throw error("wire: unknown message " + to_string(h.type));
  h.lane = static_cast<uint32_t>(get_be(p + 4, 4));
  if (carries_lane(h.type) ? h.lane == 0 : h.lane != 0)
    throw error(carries_lane(h.type)
                  ? "wire: " + to_string(h.type) + " header names lane 0 (the controller's cpu)"
                  : "wire: header bytes 4-7 (the lane) are not zero in a "
                      + to_string(h.type) + " message");
  h.id = get_be(p + 8, 8);
  return h;
}

bool carries_data(msg_type t) noexcept {
  return t == msg_type::data_in || t == msg_type::data_out;
}

uint64_t decode_data_offset(const void* frame, std::size_t size) {
  if (size != data_offset_bytes)
    throw error("wire: malformed data message: an offset frame of " + std::to_string(size)
                + " bytes, expected 8");
  return get_be(static_cast<const unsigned char*>(frame), 8);
}

void encode_data_offset(void* frame, uint64_t offset) noexcept {
  put_be(static_cast<unsigned char*>(frame), offset, 8);
}

namespace {

bytes encode_word(uint64_t x) {
  bytes b(data_offset_bytes);
  put_be(reinterpret_cast<unsigned char*>(b.data()), x, 8);
  return b;
}

uint64_t decode_word(const void* body, std::size_t size, const char* name) {
  if (size != data_offset_bytes)
    throw error(std::string{"wire: malformed "} + name + " message: a body of "
                + std::to_string(size) + " bytes, expected 8");
  return get_be(static_cast<const unsigned char*>(body), 8);
}

} // namespace

bytes encode_data_done(uint64_t last_piece) { return encode_word(last_piece); }

uint64_t decode_data_done(const void* body, std::size_t size) {
  return decode_word(body, size, "data_done");
}

bytes encode_pulse(uint64_t running) { return encode_word(running); }

uint64_t decode_pulse(const void* body, std::size_t size) {
  return decode_word(body, size, "pulse");
}

std::size_t encoded_size(const op_desc& op) noexcept {
  const auto& l = op.layout;
  return op_desc_bytes - 2 * length_bytes(0) + length_bytes(l.shape.size())
         + sizeof(int64_t) * l.shape.size() + length_bytes(l.strides.size())
         + sizeof(int64_t) * l.strides.size();
}

std::size_t encoded_size(const batch& x) noexcept {
  const std::size_t ops = x.op_count();
  const std::size_t values = split_on_wire(x) ? ops * value_words : x.values.size();
  std::size_t n = sizeof(x.lane) + sizeof(x.ops_before) + sizeof(x.step) + length_bytes(ops)
                  + length_bytes(x.no_hold.size()) + no_hold_bytes * x.no_hold.size()
                  + length_bytes(values) + sizeof(uint64_t) * values;
  for (std::size_t i = 0; i < ops; ++i)
    n += encoded_size(x.shape ? x.shape->ops[i] : x.ops[i]);
  return n;
}

std::size_t encoded_size(const execute_msg& x) noexcept {
  std::size_t n = length_bytes(x.batches.size());
  for (const auto& b : x.batches)
    n += encoded_size(b);
  return n;
}

bytes encode(startup_args& x) { return encode_any(x); }
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
