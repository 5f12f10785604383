#include "ipc/ring_publisher.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "actorgraph/error.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/trace.hpp"

namespace ag {

ring_publisher::ring_publisher(std::shared_ptr<shm_channel> channel,
                               std::shared_ptr<trace::writer> trace)
  : channel_(std::move(channel)), ring_(channel_->ring()),
    max_body_(ring_.max_message() - wire::header_size), trace_(std::move(trace)) {}

uint64_t ring_publisher::next_id() {
  std::lock_guard<std::mutex> lock{mu_};
  return next_id_++;
}

bool ring_publisher::try_publish(wire::msg_type type, const wire::bytes& body) {
  const wire::header h{type, next_id_};
  const auto head = wire::encode_header(h);
  const broadcast_ring::part parts[] = {{head.data(), head.size()}, {body.data(), body.size()}};
  if (!ring_.fits(parts, 2))
    return false;
  // Recorded before a child can see it: a read of what it computed is recorded after it.
  if (trace_)
    trace_->write(trace::frame_rec{h.id, h.type, body});
  ring_.try_write(parts, 2); // it fits: readers only make room
  ++next_id_;
  if (type == wire::msg_type::execute) {
    const uint64_t n = executes_written_.fetch_add(1, std::memory_order_relaxed) + 1;
    ends_.push_back({ring_.write_position(), n});
  }
  // What every reader has read past is forgotten (a reader not dropped holds the rest).
  const uint64_t least = ring_.least_read_position();
  while (!ends_.empty() && ends_.front().end <= least) {
    read_base_ = ends_.front().executes;
    ends_.pop_front();
  }
  return true;
}

bool ring_publisher::publish(wire::msg_type type, wire::bytes body) {
  if (body.size() > max_body_)
    throw error("broadcast ring: a " + wire::to_string(type) + " frame of " + std::to_string(body.size())
                + " bytes is larger than the ring's largest (" + std::to_string(max_body_) + ")");
  std::lock_guard<std::mutex> lock{mu_};
  if (waiting_.empty() && try_publish(type, body))
    return true;
  waiting_.push_back({type, std::move(body)});
  return false;
}

bool ring_publisher::flush() {
  std::lock_guard<std::mutex> lock{mu_};
  while (!waiting_.empty() && try_publish(waiting_.front().type, waiting_.front().body))
    waiting_.pop_front();
  return waiting_.empty();
}

uint64_t ring_publisher::executes_read(uint32_t reader) const {
  std::lock_guard<std::mutex> lock{mu_};
  const uint64_t pos = ring_.read_position(reader);
  // The last Execute that ends at or before pos (ends_ is in write order).
  auto it = std::upper_bound(ends_.begin(), ends_.end(), pos,
                             [](uint64_t p, const written_end& w) { return p < w.end; });
  return it == ends_.begin() ? read_base_ : std::prev(it)->executes;
}

uint64_t ring_publisher::executes_written() const {
  return executes_written_.load(std::memory_order_relaxed);
}

void ring_publisher::rejoin(uint32_t reader) {
  std::lock_guard<std::mutex> lock{mu_};
  ring_.rejoin(reader);
}

void ring_publisher::drop(uint32_t reader) {
  std::lock_guard<std::mutex> lock{mu_};
  ring_.drop(reader);
}

} // namespace ag
