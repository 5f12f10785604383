#include "actors/subscription_gate.hpp"

#include <cstdio>

#include "ipc/wire.hpp"

namespace ag {

namespace {

// The header prefix of messages of type t (and, lane != 0, of that lane: 8 bytes).
std::string prefix(wire::msg_type t, uint32_t lane = 0) {
  const auto h = wire::encode_header({t, 0, lane});
  return std::string(reinterpret_cast<const char*>(h.data()), lane == 0 ? 4 : 8);
}

// "41 47 09 04 ...": a topic as bytes, for a log line.
std::string hex_of(const std::string& topic) {
  std::string out;
  char buf[4];
  for (std::size_t i = 0; i < topic.size() && i < 16; ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i == 0 ? "" : " ", static_cast<unsigned char>(topic[i]));
    out += buf;
  }
  return out.empty() ? "(everything)" : out;
}

} // namespace

bool subscription_gate::allows(const std::string& user, const std::string& topic,
                               bool data_stream) const {
  if (user.empty())
    return false;
  if (topic.size() == 4) {
    if (topic == prefix(wire::msg_type::hello))
      return true;
    return !data_stream
           && (topic == prefix(wire::msg_type::execute) || topic == prefix(wire::msg_type::destroy));
  }
  if (topic.size() != 8)
    return false;
  for (uint32_t l = 1; l < lane_node_.size(); ++l) {
    if (lane_node_[l] != user)
      continue;
    if (topic == prefix(wire::msg_type::data_in, l)
        || (!data_stream && topic == prefix(wire::msg_type::data_sent, l)))
      return true;
  }
  return false;
}

void subscription_gate::admit(zmq::socket_t& s, bool data_stream,
                              const std::function<void(const std::string&)>& refuse) const {
  zmq::message_t m;
  while (s.recv(m, zmq::recv_flags::dontwait)) {
    if (m.size() == 0)
      continue;
    const auto* p = static_cast<const char*>(m.data());
    const bool subscribe = p[0] == 1;
    const std::string topic(p + 1, m.size() - 1);
    const char* uid = zmq_msg_gets(m.handle(), "User-Id"); // null without one: refused
    const std::string user = uid != nullptr ? uid : "";
    if (!subscribe) { // whatever it had, it may drop
      s.set(zmq::sockopt::unsubscribe, topic);
      continue;
    }
    if (allows(user, topic, data_stream))
      s.set(zmq::sockopt::subscribe, topic);
    else if (refuse)
      refuse("node \"" + user + "\" subscribed to " + hex_of(topic) + " on "
             + (data_stream ? "a data stream" : "the broadcast")
             + ", which is not its own: refused");
  }
}

} // namespace ag
