// ag-node: lends this machine's devices to one actorgraph controller at a time (docs/NODES.md).
//
//   ag-node --name=n1 --listen=tcp://0.0.0.0:7100 --key=keys/n1.secret --allow=keys/ctl.public
//
// It publishes its node actor (actors/node_server.hpp) through CAF's middleman over TLS, where
// only the controllers whose public identities --allow names get in, and starts the children of
// the devices a controller asks for; they reach that controller over TCP with CURVE. It prints
// "ag-node NAME: listening on tcp://HOST:PORT" once it listens (PORT the one the system picked for
// port 0). SIGTERM, SIGINT or SIGHUP stops it: every child exits (or is killed at its deadline) and
// nothing of it is left. Exit codes (README.md): 0 stopped by a signal, 2 bad command line,
// 3 cannot run (an identity refused, the port taken).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/error.hpp"
#include "actors/node_protocol.hpp"
#include "actors/node_server.hpp"
#include "actors/process_env.hpp"
#include "apps/app_config.hpp"
#include "ipc/identity.hpp"
#include "ipc/leftovers.hpp"
#include "ipc/memory_file.hpp"
#include "ipc/runtime_dir.hpp"

namespace {

class node_config : public ag::app::config {
public:
  std::string name;
  std::string listen;
  std::string key;
  std::string allow;
  std::string runner;
  std::string timeline_dir;
  size_t timeout_ms = 5000;

  node_config() : ag::app::config("ag-node", true) {
    opt_group{custom_options_, "global"}
      .add(name, "name", "how controllers name this node (n1 in n1/cuda:0)")
      .add(listen, "listen", "where to listen: tcp://HOST:PORT (0.0.0.0: every interface)")
      .add(key, "key", "this node's identity, as ag-keygen wrote it (NAME.secret, mode 0600)")
      .add(allow, "allow", "the controllers allowed: their .public files, comma-separated")
      .add(runner, "runner", "the ag-runner program (default: beside ag-node)")
      .add(timeout_ms, "timeout-ms", "a controller silent this long is gone: its children stop")
      .add(timeline_dir, "timeline-dir",
           "each child writes its timeline there as it exits (NAME-laneL-S.part: trace-event "
           "lines), for a controller's --timeline on this machine (apps/ag-bench/stages.py)");
    set("logger.console", caf::atom("none"));
  }
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const auto comma = list.find(',', at);
    const auto item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!item.empty())
      out.push_back(item);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

int start(int argc, char** argv) {
  node_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  for (auto [flag, value] : {std::pair{"--name", &cfg.name}, std::pair{"--listen", &cfg.listen},
                             std::pair{"--key", &cfg.key}, std::pair{"--allow", &cfg.allow}})
    if (value->empty())
      return cfg.usage(std::string{flag} + " is required");
  if (cfg.timeout_ms == 0)
    return cfg.usage("--timeout-ms=0: expected at least 1");
  std::pair<std::string, uint16_t> where;
  try {
    ag::check_node_name(cfg.name, "--name");
    where = ag::parse_tcp_endpoint(cfg.listen, "--listen");
  } catch (const std::exception& e) {
    return cfg.usage(e.what());
  }
  // The children's program is looked for now: a wrong --runner is this node's error, not the
  // controller's that asks it for children later.
  std::string runner;
  try {
    runner = ag::find_runner(cfg.runner, "--runner");
  } catch (const std::exception& e) {
    return cfg.usage(e.what());
  }
  ag::identity self;
  ag::node_server_setup setup;
  std::vector<std::string> allowed = split(cfg.allow);
  try {
    self = ag::load_identity(cfg.key);
    for (const auto& f : allowed)
      setup.controller_keys.insert(ag::load_public(f).curve_public);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
  if (setup.controller_keys.empty())
    return cfg.usage("--allow names no controller");
  // The peers' certificates in one file for TLS, in memory (a path of this process): nothing of
  // it is left on disk, whatever ends ag-node.
  ag::memory_file trust_file;
  std::string trust;
  try {
    ag::remove_leftovers(ag::tmp_dir()); // what older versions left
    trust_file = ag::memory_file::create("trusted.pem");
    trust = trust_file.path();
    ag::write_trust_file(trust, allowed);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
  ag::configure_node_network(cfg, self, trust, std::chrono::milliseconds{cfg.timeout_ms});
  setup.name = cfg.name;
  setup.curve_public = self.pub.curve_public;
  setup.curve_secret = self.curve_secret;
  setup.runner_path = runner;
  setup.timeline_dir = cfg.timeline_dir;
  setup.prove = [self](const std::string& text) { return ag::sign_proof(self, text); };
  setup.log = [name = cfg.name](const std::string& line) {
    std::fprintf(stderr, "ag-node %s: %s\n", name.c_str(), line.c_str());
  };
  // Signals are taken by this thread alone, in sigtimedwait: every thread started from here on
  // inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP); // the end of the ssh session or terminal that started it
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  int code = ag::app::exit_ok;
  {
    caf::actor_system sys{cfg};
    auto node = ag::spawn_node_server(sys, std::move(setup));
    const char* in = where.first == "0.0.0.0" ? nullptr : where.first.c_str();
    auto port = caf::openssl::publish(node, where.second, in, true);
    if (!port) {
      caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
      return cfg.fail(ag::app::exit_cannot_run, "cannot listen on " + cfg.listen + ": "
                                                  + sys.render(port.error()));
    }
    std::printf("ag-node %s: listening on tcp://%s:%u\n", cfg.name.c_str(), where.first.c_str(),
                static_cast<unsigned>(*port));
    std::fflush(stdout);
    caf::scoped_actor watcher{sys};
    watcher->monitor(node);
    bool node_gone = false;
    for (;;) {
      timespec slice{0, 100'000'000};
      const int sig = ::sigtimedwait(&stop, nullptr, &slice);
      if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
        break;
      watcher->receive([&](caf::down_msg&) { node_gone = true; },
                       caf::after(std::chrono::seconds{0}) >> [] {});
      if (node_gone) {
        code = ag::app::exit_failed;
        break;
      }
    }
    std::fprintf(stderr, "ag-node %s: stopping\n", cfg.name.c_str());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    // The node actor quits once every child is gone (each at its stop deadline at worst).
    if (!node_gone)
      watcher->receive([](caf::down_msg&) {},
                       caf::after(std::chrono::minutes{2}) >> [&] {
                         std::fprintf(stderr, "ag-node %s: children still stopping after 2 min\n",
                                      cfg.name.c_str());
                       });
  }
  return code;
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-node", start, argc, argv, ag::app::exit_cannot_run);
}
