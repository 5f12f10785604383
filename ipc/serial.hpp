// CAF binary serialization of the project's schemas (their inspect overloads), shared by the wire
// format (ipc/wire.cpp) and the trace format (ipc/trace.cpp). Decoding is bounds-checked: a
// malformed buffer is an error, never a crash and never an allocation larger than the buffer.
// Included by .cpp files only (it pulls in CAF's serializers).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>

#include "actorgraph/error.hpp"

namespace ag::serial {

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

// x's encoding; throws ag::error naming `what` when CAF refuses it.
template <class T>
std::vector<char> encode(T& x, const char* what) {
  std::vector<char> out;
  caf::binary_serializer sink{nullptr, out};
  if (auto err = sink(x))
    throw error(std::string{what} + ": cannot encode " + caf::to_string(err));
  return out;
}

// Reads x from exactly [data, data + size). Empty when it did; else what was wrong (truncated, a
// length beyond the buffer, trailing bytes).
template <class T>
std::string decode(const void* data, std::size_t size, T& x) {
  bounded_deserializer source{static_cast<const char*>(data), size};
  if (auto err = source(x))
    return "truncated or a length beyond the " + std::to_string(size) + "-byte buffer";
  if (source.remaining() != 0)
    return std::to_string(source.remaining()) + " trailing bytes";
  return {};
}

} // namespace ag::serial
