#include "ipc/trace.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/crc.hpp>

#include "actorgraph/error.hpp"
#include "ipc/serial.hpp"

namespace ag::trace {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, begin_rec& x) {
  return f(caf::meta::type_name("begin"), x.wire_version, x.process, x.lanes, x.store_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, startup_rec& x) {
  return f(caf::meta::type_name("startup"), x.lane, x.args);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, store_write_rec& x) {
  return f(caf::meta::type_name("store_write"), x.id, x.offset, x.data);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, local_rec& x) {
  return f(caf::meta::type_name("local"), x.b);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, frame_rec& x) {
  return f(caf::meta::type_name("frame"), x.id, x.type, x.body);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ack_rec& x) {
  return f(caf::meta::type_name("ack"), x.lane, x.type, x.body);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, read_rec& x) {
  return f(caf::meta::type_name("read"), x.id, x.offset, x.data);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, live_operand& x) {
  return f(caf::meta::type_name("live_operand"), x.id, x.lane, x.offset, x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, live_rec& x) {
  return f(caf::meta::type_name("live"), x.operands);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, end_rec& x) {
  return f(caf::meta::type_name("end"), x.records);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, collective_rec& x) {
  return f(caf::meta::type_name("collective"), x.c);
}

std::string to_string(record_type t) {
  switch (t) {
    case record_type::begin: return "begin";
    case record_type::startup: return "startup";
    case record_type::store_write: return "store_write";
    case record_type::local: return "local";
    case record_type::frame: return "frame";
    case record_type::ack: return "ack";
    case record_type::read: return "read";
    case record_type::live: return "live";
    case record_type::end: return "end";
    case record_type::collective: return "collective";
  }
  return "type#" + std::to_string(static_cast<int>(t));
}

namespace {

constexpr std::size_t record_kinds = std::variant_size_v<payload>;

uint32_t crc32(const char* a, std::size_t an, const char* b, std::size_t bn) {
  boost::crc_32_type crc;
  crc.process_bytes(a, an);
  if (bn > 0)
    crc.process_bytes(b, bn);
  return crc.checksum();
}

template <class T>
void put(std::vector<char>& out, std::size_t at, T x) {
  std::memcpy(out.data() + at, &x, sizeof x);
}

template <class T>
T get(const char* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

// Decodes the payload of a record of kind `index` into the matching alternative.
template <std::size_t I = 0>
std::string decode_payload(std::size_t index, const char* data, std::size_t size, payload& out) {
  if constexpr (I < record_kinds) {
    if (index != I)
      return decode_payload<I + 1>(index, data, size, out);
    std::variant_alternative_t<I, payload> x;
    auto why = serial::decode(data, size, x);
    out = std::move(x);
    return why;
  } else {
    return "unknown record type";
  }
}

class checker {
public:
  explicit checker(const begin_rec& b) : begin_(b) {}

  // Empty, or what is wrong with a record that decoded.
  std::string check(const payload& p) const {
    return std::visit([this](const auto& x) { return check_one(x); }, p);
  }

private:
  std::string lane(uint32_t l) const {
    if (l >= begin_.lanes.size())
      return "lane " + std::to_string(l) + " does not exist (the trace has "
             + std::to_string(begin_.lanes.size()) + " lanes)";
    return {};
  }

  std::string range(uint64_t offset, uint64_t bytes, const char* what) const {
    if (offset > begin_.store_bytes || bytes > begin_.store_bytes - offset)
      return std::string{what} + " [" + std::to_string(offset) + ", +" + std::to_string(bytes)
             + ") lies outside the " + std::to_string(begin_.store_bytes) + "-byte store";
    return {};
  }

  std::string check_batch(const batch& b) const {
    if (auto why = lane(b.lane); !why.empty())
      return why;
    for (const auto& op : b.ops)
      if (auto why = malformed(op); !why.empty())
        return why;
    return {};
  }

  std::string check_one(const begin_rec&) const { return "a second begin record"; }
  std::string check_one(const startup_rec& x) const {
    if (auto why = lane(x.lane); !why.empty())
      return why;
    if (x.lane == cpu_lane || !(x.args.where == begin_.lanes[x.lane]))
      return "start-up arguments of lane " + std::to_string(x.lane) + " name "
             + x.args.where.str();
    return {};
  }
  std::string check_one(const store_write_rec& x) const {
    return range(x.offset, x.data.size(), "store write");
  }
  std::string check_one(const local_rec& x) const { return check_batch(x.b); }
  std::string check_one(const frame_rec& x) const {
    try {
      switch (x.type) {
        case wire::msg_type::hello:
        case wire::msg_type::destroy:
          if (!x.body.empty())
            return wire::to_string(x.type) + " frame with a body";
          return {};
        case wire::msg_type::execute: {
          wire::execute_msg m;
          wire::decode(x.body.data(), x.body.size(), m);
          for (const auto& b : m.batches)
            if (auto why = check_batch(b); !why.empty())
              return "execute frame: " + why;
          return {};
        }
        default: return "a frame of type " + wire::to_string(x.type) + ", which children send";
      }
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  std::string check_one(const ack_rec& x) const {
    if (auto why = lane(x.lane); !why.empty())
      return why;
    try {
      switch (x.type) {
        case wire::msg_type::ready: {
          wire::ready_msg m;
          wire::decode(x.body.data(), x.body.size(), m);
          if (m.lane != x.lane)
            return "ready of lane " + std::to_string(m.lane);
          if (!(m.where == begin_.lanes[x.lane]))
            return "ready of " + m.where.str() + " on lane " + std::to_string(x.lane) + " ("
                   + begin_.lanes[x.lane].str() + ")";
          return {};
        }
        case wire::msg_type::done: {
          wire::done_msg m;
          wire::decode(x.body.data(), x.body.size(), m);
          return m.lane == x.lane ? "" : "done of lane " + std::to_string(m.lane);
        }
        case wire::msg_type::failed: {
          wire::failed_msg m;
          wire::decode(x.body.data(), x.body.size(), m);
          return m.lane == x.lane ? "" : "failed of lane " + std::to_string(m.lane);
        }
        case wire::msg_type::received: {
          wire::received_msg m;
          wire::decode(x.body.data(), x.body.size(), m);
          return m.lane == x.lane ? "" : "received of lane " + std::to_string(m.lane);
        }
        default: return "an acknowledgement of type " + wire::to_string(x.type);
      }
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  std::string check_one(const read_rec& x) const { return range(x.offset, x.data.size(), "read"); }
  std::string check_one(const live_rec& x) const {
    for (const auto& o : x.operands) {
      if (auto why = lane(o.lane); !why.empty())
        return "live operand #" + std::to_string(o.id) + ": " + why;
      if (o.bytes > max_store_bytes)
        return "live operand #" + std::to_string(o.id) + " of " + std::to_string(o.bytes)
               + " bytes";
      if (o.lane == cpu_lane)
        if (auto why = range(o.offset, o.bytes, "live cpu operand"); !why.empty())
          return why;
    }
    return {};
  }
  std::string check_one(const end_rec&) const { return {}; }
  std::string check_one(const collective_rec& x) const {
    const auto& c = x.c;
    if (static_cast<uint8_t>(c.kind) > static_cast<uint8_t>(collective_kind::reduce_scatter))
      return "a collective of kind " + std::to_string(static_cast<int>(c.kind));
    if (c.parts.empty() || c.parts.size() != c.from.size() || c.outs.empty()
        || c.outs.size() != c.to.size())
      return describe(c) + ": its inputs and results do not match their devices";
    for (const auto* devices : {&c.from, &c.to})
      for (const auto& d : *devices)
        if (std::find(begin_.lanes.begin(), begin_.lanes.end(), d) == begin_.lanes.end())
          return describe(c) + ": " + d.str() + " is not a lane of the trace";
    return {};
  }

  const begin_rec& begin_;
};

std::string check_begin(const begin_rec& b) {
  if (b.wire_version != wire::version)
    return "recorded with wire protocol version " + std::to_string(b.wire_version)
           + "; this build speaks " + std::to_string(wire::version);
  if (b.lanes.size() <= cpu_lane || !b.lanes[cpu_lane].is_cpu())
    return "lane 0 is not the cpu";
  if (b.store_bytes > max_store_bytes)
    return "a store of " + std::to_string(b.store_bytes) + " bytes (at most "
           + std::to_string(max_store_bytes) + ")";
  for (std::size_t i = 0; i < b.lanes.size(); ++i) {
    const auto& d = b.lanes[i];
    if (static_cast<uint8_t>(d.type) > static_cast<uint8_t>(device::kind::sim) || d.index < 0)
      return "lane " + std::to_string(i) + " has a bad device";
    if (i != cpu_lane && d.is_cpu())
      return "lane " + std::to_string(i) + " is a second cpu";
  }
  return {};
}

} // namespace

std::vector<char> file_header() {
  std::vector<char> out(file_header_size, 0);
  std::memcpy(out.data(), magic, sizeof magic);
  put(out, 8, format_version);
  return out;
}

std::vector<char> encode_record(const payload& body, int64_t time_ns) {
  auto bytes = std::visit(
    [](const auto& x) {
      auto copy = x; // CAF's inspectors take mutable references
      return serial::encode(copy, "trace");
    },
    body);
  if (bytes.size() > max_payload_bytes)
    throw error("trace: a record of " + std::to_string(bytes.size()) + " bytes is too large");
  std::vector<char> out(record_header_size + bytes.size() + record_trailer_size, 0);
  out[0] = static_cast<char>(body.index() + 1);
  put(out, 4, static_cast<uint32_t>(bytes.size()));
  put(out, 8, time_ns);
  if (!bytes.empty())
    std::memcpy(out.data() + record_header_size, bytes.data(), bytes.size());
  put(out, record_header_size + bytes.size(),
      crc32(out.data(), record_header_size, bytes.data(), bytes.size()));
  return out;
}

file parse(const void* data, std::size_t size, const std::string& name) {
  const char* p = static_cast<const char*>(data);
  auto fail = [&](uint64_t index, std::size_t at, const std::string& what) -> error {
    return error("trace " + name + ": record " + std::to_string(index) + " at byte "
                 + std::to_string(at) + ": " + what);
  };
  if (size < file_header_size || std::memcmp(p, magic, sizeof magic) != 0)
    throw error("trace " + name + ": not an actorgraph trace (no AGTRACE header)");
  if (auto v = get<uint32_t>(p + 8); v != format_version)
    throw error("trace " + name + ": format version " + std::to_string(v)
                + "; this build reads version " + std::to_string(format_version));
  if (get<uint32_t>(p + 12) != 0)
    throw error("trace " + name + ": reserved header bytes 12-15 are not zero");
  file out;
  std::optional<checker> check;
  bool ended = false;
  std::size_t at = file_header_size;
  while (at < size) {
    const uint64_t index = out.records.size();
    if (ended)
      throw fail(index, at, "data after the end record");
    if (size - at < record_header_size + record_trailer_size)
      throw fail(index, at, "truncated (" + std::to_string(size - at) + " bytes left)");
    const auto type = static_cast<uint8_t>(p[at]);
    if (p[at + 1] != 0 || p[at + 2] != 0 || p[at + 3] != 0)
      throw fail(index, at, "reserved bytes are not zero");
    const uint64_t length = get<uint32_t>(p + at + 4);
    if (length > size - at - record_header_size - record_trailer_size)
      throw fail(index, at, "a payload of " + std::to_string(length) + " bytes, but only "
                              + std::to_string(size - at - record_header_size - record_trailer_size)
                              + " are left (truncated)");
    const char* body = p + at + record_header_size;
    const auto stored = get<uint32_t>(body + length);
    if (stored != crc32(p + at, record_header_size, body, length))
      throw fail(index, at, "checksum mismatch (the record is damaged)");
    if (type == 0 || type > record_kinds)
      throw fail(index, at, "unknown record type " + std::to_string(type));
    record r;
    r.index = index;
    r.at_byte = at;
    r.time_ns = get<int64_t>(p + at + 8);
    const auto kind = static_cast<record_type>(type);
    if (auto why = decode_payload(type - 1u, body, length, r.body); !why.empty())
      throw fail(index, at, "malformed " + to_string(kind) + " record: " + why);
    if (index == 0) {
      if (kind != record_type::begin)
        throw fail(index, at, "the first record is " + to_string(kind) + ", not begin");
      out.begin = std::get<begin_rec>(r.body);
      if (auto why = check_begin(out.begin); !why.empty())
        throw fail(index, at, why);
      check.emplace(out.begin);
    } else if (kind == record_type::end) {
      if (std::get<end_rec>(r.body).records != index)
        throw fail(index, at, "the end record counts "
                                + std::to_string(std::get<end_rec>(r.body).records)
                                + " records before it, the file has " + std::to_string(index));
      ended = true;
    } else if (auto why = check->check(r.body); !why.empty()) {
      throw fail(index, at, to_string(kind) + ": " + why);
    }
    out.records.push_back(std::move(r));
    at += record_header_size + length + record_trailer_size;
  }
  if (out.records.empty())
    throw error("trace " + name + ": no records");
  if (!ended)
    throw fail(out.records.size(), at, "the trace ends without an end record (truncated, or its "
                                       "runtime did not stop in order)");
  return out;
}

file read_file(const std::string& path) {
  // Non-blocking, so that opening a FIFO with no writer returns at once; its type is checked next.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    throw error("trace " + path + ": cannot open it: " + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw error("trace " + path + ": cannot read it: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw error("trace " + path + ": is a directory, not a trace file");
  if (!S_ISREG(st.st_mode))
    throw error("trace " + path + ": not a regular file (a device, FIFO or socket); a trace is "
                "read from a file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_file_bytes)
    throw error("trace " + path + ": " + std::to_string(size) + " bytes, more than the "
                + std::to_string(max_file_bytes) + " a trace may have");
  // Reads what the file held when it was opened and no more, should it grow meanwhile.
  std::vector<char> bytes(static_cast<std::size_t>(size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const auto n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw error("trace " + path + ": cannot read it: " + std::strerror(errno));
    if (n == 0)
      break; // it shrank: parse() reports the truncated record
    got += static_cast<std::size_t>(n);
  }
  return parse(bytes.data(), got, path);
}

writer::writer(const std::string& path) : path_(path) {
  out_ = std::fopen(path.c_str(), "wb");
  if (out_ == nullptr)
    throw error("trace " + path + ": cannot create: " + std::strerror(errno));
  const auto head = file_header();
  if (std::fwrite(head.data(), 1, head.size(), out_) != head.size())
    failure_ = std::string{"cannot write: "} + std::strerror(errno);
}

writer::~writer() {
  if (out_ != nullptr)
    std::fclose(out_);
}

void writer::write(const payload& body) {
  std::lock_guard<std::mutex> guard{mu_};
  append(body);
}

void writer::append(const payload& body) {
  if (out_ == nullptr || !failure_.empty())
    return;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  try {
    const auto bytes =
      encode_record(body, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    if (std::fwrite(bytes.data(), 1, bytes.size(), out_) != bytes.size())
      failure_ = std::string{"cannot write: "} + std::strerror(errno);
    else
      ++records_;
  } catch (const std::exception& e) {
    failure_ = e.what();
  }
}

std::string writer::close() {
  std::lock_guard<std::mutex> guard{mu_};
  if (records_ > 0) // a trace without its begin stays one that no reader takes
    append(end_rec{records_});
  if (out_ != nullptr) {
    if (std::fclose(out_) != 0 && failure_.empty())
      failure_ = std::string{"cannot write: "} + std::strerror(errno);
    out_ = nullptr;
  }
  return failure_.empty() ? std::string{} : "trace " + path_ + ": " + failure_;
}

uint64_t digest(const void* data, std::size_t size) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace ag::trace
