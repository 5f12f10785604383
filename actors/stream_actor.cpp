#include "actors/stream_actor.hpp"

#include <memory>
#include <string>

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "graph/op.hpp"
#include "ipc/timeline.hpp"

namespace ag {

namespace {

struct stream_state {
  caf::actor executor;
  uint32_t lane = 0;
  device dev;
  std::unique_ptr<kernel_stream> stream;
  std::unique_ptr<naive_runner> runner; // declared after stream: destroyed before it
  bool failed = false;
  std::shared_ptr<ag::timeline> timeline;
  int pid = 0;

  static inline const char* name = "ag.stream";
};

caf::behavior stream_actor(caf::stateful_actor<stream_state>* self, caf::actor executor,
                           uint32_t lane, device dev, std::byte* store_base,
                           std::size_t store_size, bool pin_store,
                           std::shared_ptr<ag::timeline> tl) {
  auto& st = self->state;
  st.executor = std::move(executor);
  st.lane = lane;
  st.dev = dev;
  st.timeline = std::move(tl);
  st.pid = static_cast<int>(::getpid());
  if (st.timeline)
    st.timeline->name_track(st.pid, static_cast<int>(lane) + 1, dev.str());
  try {
    st.stream = make_stream(dev);
    if (pin_store)
      st.stream->register_host(store_base, store_size);
    st.runner = std::make_unique<naive_runner>(*st.stream, store_base, store_size);
  } catch (const std::exception& e) {
    self->quit(make_error(errc::device_failed, dev.str() + ": cannot start: " + e.what()));
    return {};
  }
  self->send(st.executor, ready_atom::value, lane);
  return {
    [=](execute_atom, const batch& b) {
      auto& st = self->state;
      std::string failure;
      uint64_t failed_at = 0;
      const auto began = timeline::clock::now();
      if (!st.failed) {
        for (std::size_t i = 0; i < b.ops.size() && failure.empty(); ++i) {
          try {
            const auto t0 = st.timeline ? timeline::clock::now() : timeline::clock::time_point{};
            st.runner->run(b.ops[i]);
            if (st.timeline)
              st.timeline->span(st.pid, static_cast<int>(st.lane) + 1, describe(b.ops[i]), "op", t0,
                                timeline::clock::now(),
                                {{"index", std::to_string(b.ops_before + i + 1), true}});
          } catch (const std::exception& e) {
            failure = e.what();
            failed_at = b.ops_before + i + 1;
          }
        }
        if (failure.empty()) {
          try {
            st.stream->synchronize();
          } catch (const std::exception& e) {
            failure = e.what();
            failed_at = b.ops_after();
          }
        }
      }
      for (auto id : b.no_hold)
        st.runner->release(id);
      if (st.timeline)
        st.timeline->span(st.pid, static_cast<int>(st.lane) + 1, "batch", "batch", began,
                          timeline::clock::now(),
                          {{"operators", std::to_string(b.ops.size()), true},
                           {"released", std::to_string(b.no_hold.size()), true},
                           {"ops_after", std::to_string(b.ops_after()), true}});
      if (!failure.empty()) {
        st.failed = true;
        self->send(st.executor, failed_atom::value, st.lane, failed_at,
                   st.dev.str() + ": " + failure);
      }
      self->send(st.executor, done_atom::value, st.lane, b.ops_after(),
                 static_cast<uint64_t>(st.runner->live_bytes()));
    },
  };
}

} // namespace

caf::actor spawn_stream_actor(caf::actor_system& sys, caf::actor report_to, uint32_t lane,
                              device dev, std::byte* store_base, std::size_t store_size,
                              bool pin_store, std::shared_ptr<ag::timeline> timeline) {
  return sys.spawn<caf::detached>(stream_actor, std::move(report_to), lane, dev, store_base,
                                  store_size, pin_store, std::move(timeline));
}

} // namespace ag
