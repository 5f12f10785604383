#include "ipc/wire.hpp"

#include <cstring>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>

#include "actorgraph/error.hpp"

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

// CAF's binary deserializer, with one more check: no sequence (vector, string) may claim more
// elements than bytes remain in the frame, since each element takes at least one byte. CAF resizes
// strings to the claimed length before reading them; this refuses first.
class bounded_deserializer final : public caf::deserializer {
public:
  bounded_deserializer(const char* data, std::size_t size)
    : caf::deserializer(static_cast<caf::execution_unit*>(nullptr)), inner_(nullptr, data, size) {}

  std::size_t remaining() const noexcept { return inner_.remaining(); }

  caf::error begin_object(uint16_t& nr, std::string& name) override {
    return inner_.begin_object(nr, name);
  }
  caf::error end_object() override { return inner_.end_object(); }
  // CAF writes lengths as a varbyte of at most 32 bits; its reader keeps the low 32 bits of a
  // longer one. This reader refuses it, and any length beyond the frame.
  caf::error begin_sequence(std::size_t& n) override {
    uint64_t x = 0;
    uint8_t byte = 0;
    int shift = 0;
    do {
      if (shift > 28)
        return caf::make_error(caf::sec::invalid_argument);
      if (auto err = inner_.apply_raw(1, &byte))
        return err;
      x |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
    } while (byte & 0x80);
    if (x > UINT32_MAX || x > inner_.remaining())
      return caf::make_error(caf::sec::end_of_stream);
    n = static_cast<std::size_t>(x);
    return caf::none;
  }
  caf::error end_sequence() override { return inner_.end_sequence(); }
  caf::error apply_raw(std::size_t n, void* data) override { return inner_.apply_raw(n, data); }

protected:
  caf::error apply_impl(int8_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(uint8_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(int16_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(uint16_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(int32_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(uint32_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(int64_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(uint64_t& x) override { return inner_.apply(x); }
  caf::error apply_impl(float& x) override { return inner_.apply(x); }
  caf::error apply_impl(double& x) override { return inner_.apply(x); }
  caf::error apply_impl(long double& x) override { return inner_.apply(x); }
  caf::error apply_impl(std::string& x) override {
    std::size_t n = 0;
    if (auto err = begin_sequence(n))
      return err;
    x.resize(n);
    if (n > 0)
      if (auto err = apply_raw(n, &x[0]))
        return err;
    return end_sequence();
  }
  caf::error apply_impl(std::u16string&) override {
    return caf::make_error(caf::sec::invalid_argument);
  }
  caf::error apply_impl(std::u32string&) override {
    return caf::make_error(caf::sec::invalid_argument);
  }

private:
  caf::binary_deserializer inner_;
};

template <class T>
bytes encode_any(T& x) {
  bytes out;
  caf::binary_serializer sink{nullptr, out};
  if (auto err = sink(x))
    throw error("wire: cannot encode " + std::string{caf::to_string(err)});
  return out;
}

template <class T>
void decode_any(const void* data, std::size_t size, T& x, const char* name) {
  bounded_deserializer source{static_cast<const char*>(data), size};
  if (auto err = source(x))
    throw error(std::string{"wire: malformed "} + name + " message (" + std::to_string(size)
                + " bytes): truncated or a length beyond the frame");
  if (source.remaining() != 0)
    throw error(std::string{"wire: malformed "} + name + " message: "
                + std::to_string(source.remaining()) + " trailing bytes");
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

} // namespace ag::wire

namespace ag::wire {

void decode(const void* data, std::size_t size, received_msg& x) {
  decode_any(data, size, x, "received");
}

} // namespace ag::wire
