#include "cuda/recording_stream.hpp"

#include <string>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

// A cpu or sim stream's graph: the recorded calls, run in order on the stream.
class call_list final : public stream_graph {
public:
  explicit call_list(std::vector<recorded_call> calls) noexcept : calls_(std::move(calls)) {}
  std::size_t nodes() const noexcept override { return calls_.size(); }
  std::vector<recorded_call>& calls() noexcept { return calls_; }

private:
  std::vector<recorded_call> calls_;
};

} // namespace

capture_outcome kernel_stream::capture(const std::vector<recorded_call>& calls,
                                       std::unique_ptr<stream_graph>& graph) {
  if (auto* list = dynamic_cast<call_list*>(graph.get());
      list && list->nodes() == calls.size()) {
    list->calls() = calls;
    return capture_outcome::updated;
  }
  graph = std::make_unique<call_list>(calls);
  return capture_outcome::instantiated;
}

void kernel_stream::launch(stream_graph& graph) {
  auto* list = dynamic_cast<call_list*>(&graph);
  if (!list)
    throw error(device().str() + ": a graph of another kind of stream");
  for (auto& c : list->calls()) {
    try {
      c.run(*this);
    } catch (const std::exception& e) {
      throw graph_call_error(c.op, e.what());
    }
  }
}

void recording_stream::fill(dtype t, void* out, std::size_t count, double value) {
  if (!into_)
    return inner_.fill(t, out, count, value);
  keep([=](kernel_stream& s) { s.fill(t, out, count, value); });
}

void recording_stream::elementwise(const elementwise_call& call) {
  if (!into_)
    return inner_.elementwise(call);
  keep([call](kernel_stream& s) { s.elementwise(call); });
}

void recording_stream::rows(const row_call& call) {
  if (!into_)
    return inner_.rows(call);
  keep([call](kernel_stream& s) { s.rows(call); });
}

void recording_stream::random(random_kind kind, float* out, std::size_t count, uint64_t seed,
                              uint64_t first, float a, float b) {
  if (!into_)
    return inner_.random(kind, out, count, seed, first, a, b);
  keep([=](kernel_stream& s) { s.random(kind, out, count, seed, first, a, b); });
}

void recording_stream::sum(const float* a, float* out, std::size_t count) {
  if (!into_)
    return inner_.sum(a, out, count);
  keep([=](kernel_stream& s) { s.sum(a, out, count); });
}

void recording_stream::matmul(const matmul_call& call) {
  if (!into_)
    return inner_.matmul(call);
  keep([call](kernel_stream& s) { s.matmul(call); });
}

void recording_stream::copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
                            std::size_t bytes) {
  if (!into_)
    return inner_.copy(dst, dst_on_host, src, src_on_host, bytes);
  keep([=](kernel_stream& s) { s.copy(dst, dst_on_host, src, src_on_host, bytes); },
       dst_on_host || src_on_host);
}

void recording_stream::copy_peer(void* dst, const void* src, const ag::device& from,
                                 std::size_t bytes) {
  if (!into_)
    return inner_.copy_peer(dst, src, from, bytes);
  keep([=](kernel_stream& s) { s.copy_peer(dst, src, from, bytes); });
}

// The parts' addresses and devices are copied: the caller's arrays are gone by the time it runs.
void recording_stream::sum_peers(float* out, const float* const* parts, const ag::device* from,
                                 std::size_t n_parts, std::size_t count) {
  if (!into_)
    return inner_.sum_peers(out, parts, from, n_parts, count);
  std::vector<const float*> p(parts, parts + n_parts);
  std::vector<ag::device> f(from, from + n_parts);
  keep([=](kernel_stream& s) { s.sum_peers(out, p.data(), f.data(), n_parts, count); });
}

} // namespace ag
