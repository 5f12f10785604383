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
  keep(recorded_call::fill_args{t, out, count, value});
}

void recording_stream::elementwise(const elementwise_call& call) {
  if (!into_)
    return inner_.elementwise(call);
  keep(call);
}

void recording_stream::rows(const row_call& call) {
  if (!into_)
    return inner_.rows(call);
  keep(call);
}

void recording_stream::random(random_kind kind, float* out, std::size_t count, uint64_t seed,
                              uint64_t first, float a, float b) {
  if (!into_)
    return inner_.random(kind, out, count, seed, first, a, b);
  keep(recorded_call::random_args{kind, out, count, seed, first, a, b});
}

void recording_stream::sum(const float* a, float* out, std::size_t count) {
  if (!into_)
    return inner_.sum(a, out, count);
  keep(recorded_call::sum_args{a, out, count});
}

void recording_stream::matmul(const matmul_call& call) {
  if (!into_)
    return inner_.matmul(call);
  keep(call);
}

void recording_stream::copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
                            std::size_t bytes) {
  if (!into_)
    return inner_.copy(dst, dst_on_host, src, src_on_host, bytes);
  keep(recorded_call::copy_args{dst, dst_on_host, src, src_on_host, bytes},
       dst_on_host || src_on_host);
}

void recording_stream::copy_peer(void* dst, const void* src, const ag::device& from,
                                 std::size_t bytes) {
  if (!into_)
    return inner_.copy_peer(dst, src, from, bytes);
  keep(recorded_call::copy_peer_args{dst, src, from, bytes});
}

// The parts' addresses and devices are copied: the caller's arrays are gone by the time it runs.
void recording_stream::sum_peers(float* out, const float* const* parts, const ag::device* from,
                                 std::size_t n_parts, std::size_t count) {
  if (!into_)
    return inner_.sum_peers(out, parts, from, n_parts, count);
  keep(recorded_call::sum_peers_args{out, {parts, parts + n_parts}, {from, from + n_parts}, count});
}

void recorded_call::run(kernel_stream& s) const {
  struct visitor {
    kernel_stream& s;
    void operator()(const fill_args& x) const { s.fill(x.t, x.out, x.count, x.value); }
    void operator()(const elementwise_call& x) const { s.elementwise(x); }
    void operator()(const row_call& x) const { s.rows(x); }
    void operator()(const random_args& x) const {
      s.random(x.kind, x.out, x.count, x.seed, x.first, x.a, x.b);
    }
    void operator()(const sum_args& x) const { s.sum(x.a, x.out, x.count); }
    void operator()(const matmul_call& x) const { s.matmul(x); }
    void operator()(const copy_args& x) const {
      s.copy(x.dst, x.dst_on_host, x.src, x.src_on_host, x.bytes);
    }
    void operator()(const copy_peer_args& x) const { s.copy_peer(x.dst, x.src, x.from, x.bytes); }
    void operator()(const sum_peers_args& x) const {
      s.sum_peers(x.out, x.parts.data(), x.from.data(), x.parts.size(), x.count);
    }
  };
  std::visit(visitor{s}, call);
}

} // namespace ag
