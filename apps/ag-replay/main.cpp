// ag-replay: runs a recorded message trace (graph_option::trace_path, ag-demo --record-trace)
// again against fresh runners and compares every acknowledgement and every read with the
// recording; prints a digest of every read and every operand still held at the end.
//
//   ag-replay TRACE [--mode=process|inproc] [--transport=shared_memory|sockets]
//                   [--devices=sim:0,...] [--tolerance=REL] [--graphs=auto|off]
//                   [--timeout=MS] [--expect=DIGESTS] [--digests=OUT] [--runner=PATH]
//                   [--config-file=FILE] [--version] [--help]
//
// Exit codes (README.md, "Exit codes"): 0 the replay matches; 1 it diverges (the message says
// where: lane, message id, operator), or its digests differ from --expect; 2 the trace or --expect
// cannot be read, or a bad command line; 3 the replay could not run (a runner did not start,
// --digests cannot be written).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actorgraph/actorgraph.hpp"
#include "actors/node_setup.hpp"
#include "actors/quiet_pool.hpp"
#include "actors/replay.hpp"
#include "ipc/memory_file.hpp"
#include "ipc/runtime_dir.hpp"
#include "apps/app_config.hpp"
#include "ipc/trace.hpp"

namespace {

// The longest --timeout: a day; past it, deadlines computed from it could overflow the clock.
constexpr int64_t max_timeout_ms = int64_t{24} * 3600 * 1000;
// The largest --expect file: digests are a line per read and live operand.
constexpr std::size_t max_expect_bytes = std::size_t{64} << 20;

class replay_config : public ag::app::config {
public:
  std::string mode = "process";
  std::string transport = "shared_memory";
  std::string graphs = "auto";
  std::string devices;
  double tolerance = 0;
  int64_t timeout_ms = 60000;
  std::string expect;
  std::string digests;
  std::string runner;
  std::string key;
  std::string nodes;

  replay_config() : ag::app::config("ag-replay", true) {
    opt_group{custom_options_, "global"}
      .add(mode, "mode,m", "process (an ag-runner child per device) or inproc (stream actors here)")
      .add(transport, "transport", "process: shared_memory (a broadcast ring) or sockets")
      .add(graphs, "graphs", "recorded steps as graphs (auto, the default) or operator by operator (off)")
      .add(devices, "devices,d", "replay the device lanes on these devices (default: as recorded)")
      .add(tolerance, "tolerance", "largest relative difference of a read element (default 0: bit for bit)")
      .add(timeout_ms, "timeout", "deadline in ms of every wait (start-up, each acknowledgement; at most a day)")
      .add(expect, "expect", "a digests file (--digests) the replay must reproduce")
      .add(digests, "digests", "write the digests to this file")
      .add(runner, "runner", "the ag-runner program (default: found as the runtime finds it)")
      .add(key, "key", "with --nodes: this controller's identity (ag-keygen's NAME.secret)")
      .add(nodes, "nodes", "machines running ag-node, NAME=tcp://HOST:PORT=NAME.public, comma-"
                           "separated, for --devices such as NAME/sim:0 (process mode)");
    ag::quiet_pool(*this);
  }
};

// CAF stops reading options at the first argument that is not one: options go first.
caf::actor_system_config::string_list options_first(int argc, char** argv) {
  caf::actor_system_config::string_list out;
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] == '-')
      out.emplace_back(argv[i]);
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-')
      out.emplace_back(argv[i]);
  return out;
}

// The --expect file, a regular file of at most max_expect_bytes.
std::string read_text(const std::string& path) {
  const auto fail = [&](const std::string& why) { return ag::error("--expect=" + path + ": " + why); };
  // Non-blocking, so that a FIFO with no writer does not hold the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    throw fail(std::string{"cannot open it: "} + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw fail("not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_expect_bytes)
    throw fail("larger than " + std::to_string(max_expect_bytes) + " bytes");
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw fail(std::string{"cannot read it: "} + std::strerror(errno));
    if (n == 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

// The first line that differs, or empty.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a{want}, b{got};
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb)
      return {};
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + ": expected \"" + (ha ? la : "(nothing)")
             + "\", replayed \"" + (hb ? lb : "(nothing)") + "\"";
  }
}

int start(int argc, char** argv) {
  replay_config cfg;
  if (auto code = cfg.read(options_first(argc, argv)))
    return *code;
  if (cfg.remainder.size() != 1)
    return cfg.usage(cfg.remainder.empty() ? "expected one trace file: ag-replay TRACE [options]"
                                           : "expected one trace file, got "
                                               + std::to_string(cfg.remainder.size())
                                               + " arguments: ag-replay TRACE [options]");
  ag::replay_options opt;
  if (cfg.mode != "process" && cfg.mode != "inproc")
    return cfg.usage("--mode=" + cfg.mode + ": expected process or inproc");
  if (cfg.timeout_ms <= 0 || cfg.timeout_ms > max_timeout_ms)
    return cfg.usage("--timeout=" + std::to_string(cfg.timeout_ms) + ": expected 1 to "
                     + std::to_string(max_timeout_ms) + " ms");
  if (!(cfg.tolerance >= 0) || !std::isfinite(cfg.tolerance)) {
    std::ostringstream given;
    given << cfg.tolerance;
    return cfg.usage("--tolerance=" + given.str()
                     + ": expected a finite relative difference, not negative");
  }
  if (cfg.transport != "shared_memory" && cfg.transport != "sockets")
    return cfg.usage("--transport=" + cfg.transport + ": expected shared_memory or sockets");
  opt.transport = cfg.transport == "sockets" ? ag::transport::sockets : ag::transport::shared_memory;
  if (cfg.graphs != "auto" && cfg.graphs != "off")
    return cfg.usage("--graphs=" + cfg.graphs + ": expected auto or off");
  opt.steps.enabled = cfg.graphs == "auto";
  opt.process = cfg.mode == "process";
  opt.runner_path = cfg.runner;
  opt.tolerance = cfg.tolerance;
  opt.timeout = std::chrono::milliseconds{cfg.timeout_ms};
  const std::string path = cfg.remainder.front();
  if (!cfg.devices.empty()) {
    try {
      opt.devices = ag::parse_devices(cfg.devices);
    } catch (const std::exception& e) {
      return cfg.usage("--devices=" + cfg.devices + ": " + e.what());
    }
  }
  ag::trace::file trace;
  std::string expected;
  try {
    trace = ag::trace::read_file(path);
    if (!cfg.expect.empty())
      expected = read_text(cfg.expect);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_usage, e.what());
  }
  // Devices on nodes: their identities and the actor system's TLS, before the system exists.
  std::optional<ag::node_setup> nodes;
  ag::memory_file scratch; // holds the trust file
  if (!cfg.nodes.empty()) {
    if (!opt.process)
      return cfg.usage("--nodes: devices on nodes need --mode=process");
    try {
      auto lanes = trace.begin.lanes;
      if (!opt.devices.empty() && opt.devices.size() + 1 == lanes.size())
        std::copy(opt.devices.begin(), opt.devices.end(), lanes.begin() + 1);
      nodes.emplace(ag::parse_nodes(cfg.nodes), cfg.key, std::move(lanes));
      nodes->probe(opt.timeout, "--timeout"); // a node that does not answer: before anything is made
      scratch = ag::memory_file::create("trusted.pem");
    } catch (const std::exception& e) {
      return cfg.fail(ag::app::exit_cannot_run, e.what());
    }
    opt.nodes = &*nodes;
    opt.trust_file = scratch.path();
    nodes->configure(cfg, opt.trust_file, opt.timeout); // a node silent that long is gone
  }
  ag::replay_report report;
  try {
    caf::actor_system sys{cfg};
    report = ag::replay(sys, trace, opt);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, path + ": cannot replay: " + e.what());
  }
  const std::string digests = ag::format_digests(report.digests);
  std::printf("%s: %s replay of %zu records: %llu messages, %llu acknowledgements and %llu reads "
              "compared\n%s",
              path.c_str(), cfg.mode.c_str(), trace.records.size(),
              static_cast<unsigned long long>(report.messages),
              static_cast<unsigned long long>(report.acks),
              static_cast<unsigned long long>(report.reads), digests.c_str());
  if (report.collectives > 0)
    std::printf("%llu collectives, replayed as their operators\n",
                static_cast<unsigned long long>(report.collectives));
  if (report.worst_relative > 0)
    std::printf("reads matched within the tolerance; the largest relative difference: %.3g\n",
                report.worst_relative);
  if (!cfg.digests.empty()) {
    std::ofstream out{cfg.digests};
    out << digests;
    if (!out.flush())
      return cfg.fail(ag::app::exit_cannot_run, "--digests=" + cfg.digests + ": cannot write it");
  }
  if (!report.matched) {
    std::printf("DIVERGED: %s\n", report.divergence.c_str());
    return ag::app::exit_failed;
  }
  if (!cfg.expect.empty()) {
    if (auto diff = first_difference(expected, digests); !diff.empty()) {
      std::printf("DIVERGED: digests differ from %s at %s\n", cfg.expect.c_str(), diff.c_str());
      return ag::app::exit_failed;
    }
  }
  std::printf("match\n");
  return ag::app::exit_ok;
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-replay", start, argc, argv, ag::app::exit_cannot_run);
}
