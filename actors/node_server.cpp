#include "actors/node_server.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/process_env.hpp"
#include "actors/protocol.hpp"
#include "actors/runner_proxy.hpp"
#include "cuda/kernel_stream.hpp"
#include "graph/deadline.hpp"
#include "ipc/identity.hpp"

namespace ag {

namespace {

struct session {
  caf::actor_addr owner;
  std::unique_ptr<process_env> env; // its store and directory, removed once every child is gone
  std::vector<runner_proxy_actor> proxies;
  std::vector<caf::actor_addr> live; // proxies not down yet
  std::chrono::steady_clock::time_point since;
  // Restarts: how each lane's child was started, the lane of each proxy, the restarts each lane
  // had, and the lanes whose child died with restarts left (the session waits for them).
  uint32_t max_restarts = 0;
  std::map<uint32_t, proxy_setup> setups;
  std::map<caf::actor_addr, uint32_t> lane_of;
  std::map<uint32_t, uint32_t> restarts;
  std::set<uint32_t> awaiting;
  bool owner_gone = false;
  // Restarts asked for before this node saw the lane's child die (the controller's monitor may
  // be told first): answered once it does.
  struct asked_restart {
    caf::response_promise promise;
    uint32_t generation = 0;
    uint64_t entries_before = 0;
  };
  std::map<uint32_t, asked_restart> asked;

  bool running(uint32_t lane) const {
    return std::any_of(lane_of.begin(), lane_of.end(),
                       [&](const auto& p) { return p.second == lane; });
  }
};

struct node_state {
  node_server_setup setup;
  std::optional<session> current;
  bool quitting = false;
  uint64_t served = 0; // controllers served so far, this one counted

  static inline const char* name = "ag.node_server";
};

using node_self = node_actor::stateful_pointer<node_state>;

// Ends every child of the session: in order (each told to exit, killed at its stop deadline), or
// at once, for a controller that is gone and waits for nothing.
void stop_session(node_self self, bool orderly) {
  for (const auto& p : self->state.current->proxies) {
    if (orderly)
      self->send(p, shutdown_atom::value);
    else
      self->send(p, kill_atom::value);
  }
}

void log(node_self self, const std::string& line) {
  if (self->state.setup.log)
    self->state.setup.log(line);
}

void maybe_end_session(node_self self) {
  auto& st = self->state;
  if (!st.current || !st.current->live.empty()
      || (!st.current->awaiting.empty() && !st.current->owner_gone && !st.quitting))
    return;
  log(self, "every child of the controller stopped; ready for the next one");
  if (auto owner = caf::actor_cast<caf::actor>(st.current->owner))
    self->demonitor(owner);
  st.current.reset(); // the store and the directory go with it
  if (st.quitting)
    self->quit();
}

caf::result<std::vector<caf::actor>> start(node_self self, node_request& req);

caf::result<std::vector<caf::actor>> answer(node_self self, node_request& req) {
  auto res = start(self, req);
  if (res.flag == caf::rt_error)
    log(self, "refused a controller: " + describe(res.err, "start"));
  else
    log(self, "serving a controller at " + req.controller_host + ": "
                + std::to_string(req.lanes.size()) + " device(s)");
  return res;
}

caf::result<std::vector<caf::actor>> start(node_self self, node_request& req) {
  auto& st = self->state;
  const std::string& me = st.setup.name;
  if (st.current) {
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::steady_clock::now() - st.current->since)
                        .count();
    return make_error(errc::device_failed, "node " + me + " serves another controller (for "
                                             + std::to_string(secs) + " s); one at a time");
  }
  if (st.quitting)
    return make_error(errc::device_failed, "node " + me + " is stopping");
  if (!st.setup.controller_keys.count(req.controller_key))
    return make_error(errc::device_failed, "node " + me + " does not allow the CURVE key "
                                             + req.controller_key + " of this controller");
  if (!req.owner)
    return make_error(errc::bad_request, "node " + me + ": the request names no controller");
  if (req.data_ports.size() > 16 || req.return_ports.size() > 16)
    return make_error(errc::bad_request, "node " + me + ": a request of "
                                           + std::to_string(req.data_ports.size())
                                           + " data streams and "
                                           + std::to_string(req.return_ports.size())
                                           + " return streams (16 of each at most)");
  if (req.lanes.empty() || req.lanes.size() != req.devices.size())
    return make_error(errc::bad_request, "node " + me + ": a request of "
                                           + std::to_string(req.lanes.size()) + " lanes and "
                                           + std::to_string(req.devices.size()) + " devices");
  const int gpus = cuda_device_count();
  for (const auto& d : req.devices) {
    if (d.is_cpu() || !d.local() || d.index < 0
        || (d.type == device::kind::cuda && d.index >= gpus))
      return make_error(errc::device_failed,
                        "node " + me + " has no device " + d.str() + " ("
                          + std::to_string(gpus) + " CUDA device(s) visible there)");
  }
  session s;
  s.owner = req.owner.address();
  s.since = std::chrono::steady_clock::now();
  try {
    const uint32_t lanes = *std::max_element(req.lanes.begin(), req.lanes.end());
    s.env = std::make_unique<process_env>(req.store_bytes, lanes, st.setup.runner_path);
  } catch (const std::exception& e) {
    return make_error(errc::device_failed, "node " + me + ": " + e.what());
  }
  const std::string host = req.controller_host;
  const auto start_timeout = std::chrono::milliseconds{req.start_timeout_ms};
  const auto stop_timeout = std::chrono::milliseconds{req.stop_timeout_ms};
  std::vector<caf::actor> reply;
  ++st.served;
  for (std::size_t i = 0; i < req.lanes.size(); ++i) {
    auto ps = make_proxy_setup(s.env->setup(), req.lanes[i], req.devices[i], req.store_bytes,
                               start_timeout, stop_timeout);
    ps.args.pub_endpoint = "tcp://" + host + ":" + std::to_string(req.pub_port);
    ps.args.pull_endpoint = "tcp://" + host + ":" + std::to_string(req.pull_port);
    for (auto port : req.data_ports)
      ps.args.data_endpoints.push_back("tcp://" + host + ":" + std::to_string(port));
    for (auto port : req.return_ports)
      ps.args.return_endpoints.push_back("tcp://" + host + ":" + std::to_string(port));
    ps.args.curve_server_key = req.controller_key;
    ps.args.curve_public = st.setup.curve_public;
    ps.args.curve_secret = st.setup.curve_secret;
    ps.args.graphs = req.graphs;
    ps.args.max_graphs = req.max_graphs;
    ps.args.graph_after = req.graph_after;
    if (!st.setup.timeline_dir.empty())
      ps.args.timeline_part = st.setup.timeline_dir + "/" + me + "-lane"
                              + std::to_string(req.lanes[i]) + "-" + std::to_string(st.served)
                              + ".part";
    ps.name = me + "/" + req.devices[i].str();
    s.setups[req.lanes[i]] = ps;
    auto proxy = spawn_runner_proxy(self->home_system(), std::move(ps));
    self->monitor(proxy);
    s.live.push_back(proxy.address());
    s.lane_of[proxy.address()] = req.lanes[i];
    s.proxies.push_back(proxy);
    reply.push_back(caf::actor_cast<caf::actor>(proxy));
  }
  s.max_restarts = req.max_restarts;
  self->monitor(req.owner);
  st.current = std::move(s);
  return reply;
}

// A new child for a lane of the session whose child died with restarts left: asked by the
// controller that owns the session (an actor of its node), as its `generation`-th.
caf::result<caf::actor> start_again(node_self self, uint32_t lane, uint32_t generation,
                                    uint64_t entries_before);

caf::result<caf::actor> restart(node_self self, uint32_t lane, uint32_t generation,
                                uint64_t entries_before) {
  auto& st = self->state;
  const std::string& me = st.setup.name;
  const auto sender = self->current_sender();
  if (!st.current || !sender || sender->node() != st.current->owner.node())
    return make_error(errc::bad_request,
                      "node " + me + ": a restart from a controller it does not serve");
  auto& s = *st.current;
  if (s.setups.count(lane) == 0)
    return make_error(errc::bad_request, "node " + me + " runs no lane " + std::to_string(lane)
                                           + " of this controller");
  if (s.running(lane) && s.asked.count(lane) == 0) { // its death is on its way here
    s.asked[lane] = {self->make_response_promise(), generation, entries_before};
    return caf::delegated<caf::actor>{};
  }
  return start_again(self, lane, generation, entries_before);
}

// The restart of a lane whose child this node saw die.
caf::result<caf::actor> start_again(node_self self, uint32_t lane, uint32_t generation,
                                    uint64_t entries_before) {
  auto& st = self->state;
  const std::string& me = st.setup.name;
  auto& s = *st.current;
  auto it = s.setups.find(lane);
  if (s.awaiting.count(lane) == 0 || generation != s.restarts[lane] + 1
      || generation > s.max_restarts)
    return make_error(errc::bad_request,
                      "node " + me + ": lane " + std::to_string(lane) + " cannot be started again"
                        + " as restart " + std::to_string(generation) + " (it had "
                        + std::to_string(s.restarts[lane]) + " of "
                        + std::to_string(s.max_restarts) + ", and its child "
                        + (s.awaiting.count(lane) ? "died" : "is running or stopped") + ")");
  auto ps = it->second;
  ps.args.generation = generation;
  ps.args.entries_before = entries_before;
  if (!ps.args.timeline_part.empty())
    ps.args.timeline_part += "." + std::to_string(generation);
  s.awaiting.erase(lane);
  s.restarts[lane] = generation;
  log(self, "starting the child of lane " + std::to_string(lane) + " again (restart "
              + std::to_string(generation) + ")");
  auto proxy = spawn_runner_proxy(self->home_system(), std::move(ps));
  self->monitor(proxy);
  s.live.push_back(proxy.address());
  s.lane_of[proxy.address()] = lane;
  s.proxies.push_back(proxy);
  return caf::actor_cast<caf::actor>(proxy);
}

node_actor::behavior_type node_server(node_self self, node_server_setup setup) {
  self->state.setup = std::move(setup);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.current)
      return;
    auto& s = *st.current;
    if (dm.source == s.owner) { // the controller is gone: so are its children
      log(self, "lost its controller (" + (dm.reason ? describe(dm.reason, "controller") : "down")
                  + "): stopping its children");
      s.owner_gone = true;
      for (auto& [lane, a] : s.asked)
        a.promise.deliver(make_error(errc::device_failed, "the controller is gone"));
      s.asked.clear();
      stop_session(self, false);
      maybe_end_session(self); // no child left: nothing more to wait for
      return;
    }
    s.live.erase(std::remove(s.live.begin(), s.live.end(), dm.source), s.live.end());
    // A child that died (not one that exited in order) may be started again, if its lane has
    // restarts left: the session waits for the controller's word, or its end.
    if (auto it = s.lane_of.find(dm.source); it != s.lane_of.end()) {
      const uint32_t lane = it->second;
      if (dm.reason && !s.owner_gone && !st.quitting && s.restarts[lane] < s.max_restarts)
        s.awaiting.insert(lane);
      s.lane_of.erase(it);
      if (auto a = s.asked.find(lane); a != s.asked.end()) { // asked before: answered now
        auto asked = std::move(a->second);
        s.asked.erase(a);
        auto res = start_again(self, lane, asked.generation, asked.entries_before);
        if (res.flag == caf::rt_error)
          asked.promise.deliver(std::move(res.err));
        else
          asked.promise.deliver(res.value.get_as<caf::actor>(0));
      }
    }
    maybe_end_session(self);
  });
  self->set_exit_handler([self](caf::exit_msg&) {
    auto& st = self->state;
    st.quitting = true;
    if (!st.current)
      return self->quit();
    stop_session(self, true);
    maybe_end_session(self); // no child left, only lanes waiting for a restart
  });
  return {
    [=](node_start_atom, node_request& req) { return answer(self, req); },
    [=](node_prove_atom, std::string& nonce) -> caf::result<std::string> {
      auto& st = self->state;
      if (nonce.size() != 64 || nonce.find_first_not_of("0123456789abcdef") != std::string::npos)
        return make_error(errc::bad_request, "node " + st.setup.name + ": a proof's nonce must "
                                             "be 64 lowercase hex digits");
      if (!st.setup.prove)
        return make_error(errc::device_failed, "node " + st.setup.name + " cannot sign proofs");
      try {
        return st.setup.prove(proof_text(st.setup.name, nonce));
      } catch (const std::exception& e) {
        return make_error(errc::device_failed, "node " + st.setup.name + ": " + e.what());
      }
    },
    [=](node_restart_atom, uint32_t lane, uint32_t generation, uint64_t entries_before) {
      return restart(self, lane, generation, entries_before);
    },
  };
}

} // namespace

node_actor spawn_node_server(caf::actor_system& sys, node_server_setup setup) {
  return sys.spawn(node_server, std::move(setup));
}

} // namespace ag
