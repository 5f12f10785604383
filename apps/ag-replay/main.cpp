// ag-replay: runs a recorded message trace (graph_option::trace_path, ag-demo --record-trace)
// again against fresh runners and compares every acknowledgement and every read with the
// recording; prints a digest of every read and every operand still held at the end.
//
//   ag-replay TRACE [--mode=process|inproc] [--devices=sim:0,...] [--tolerance=REL]
//                   [--timeout=MS] [--expect=DIGESTS] [--digests=OUT] [--runner=PATH]
//
// Exit codes: 0 the replay matches; 1 it diverges (the message says where: lane, message id,
// operator), or its digests differ from --expect; 2 the trace cannot be read, or a bad command line;
// 3 the replay could not run (a runner did not start).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include "actorgraph/actorgraph.hpp"
#include "actors/replay.hpp"
#include "ipc/trace.hpp"

namespace {

class replay_config : public caf::actor_system_config {
public:
  std::string mode = "process";
  std::string devices;
  double tolerance = 0;
  int64_t timeout_ms = 60000;
  std::string expect;
  std::string digests;
  std::string runner;

  replay_config() {
    opt_group{custom_options_, "global"}
      .add(mode, "mode,m", "process (an ag-runner child per device) or inproc (stream actors here)")
      .add(devices, "devices,d", "replay the device lanes on these devices (default: as recorded)")
      .add(tolerance, "tolerance", "largest relative difference of a read element (default 0: bit for bit)")
      .add(timeout_ms, "timeout", "deadline in ms of every wait (start-up, each acknowledgement)")
      .add(expect, "expect", "a digests file (--digests) the replay must reproduce")
      .add(digests, "digests", "write the digests to this file")
      .add(runner, "runner", "the ag-runner program (default: found as the runtime finds it)");
    set("scheduler.max-threads", 2);
    set("logger.console", caf::atom("none"));
  }
};

// CAF stops reading options at the first argument that is not one: options go first.
std::vector<char*> options_first(int argc, char** argv) {
  std::vector<char*> out{argv[0]};
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] == '-')
      out.push_back(argv[i]);
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-')
      out.push_back(argv[i]);
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw ag::error("--expect " + path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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

} // namespace

int main(int argc, char** argv) {
  replay_config cfg;
  auto args = options_first(argc, argv);
  if (auto err = cfg.parse(static_cast<int>(args.size()), args.data())) {
    std::cerr << "ag-replay: " << caf::to_string(err) << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  if (cfg.remainder.size() != 1) {
    std::cerr << "ag-replay: expected one trace file: ag-replay TRACE [options] (--help)\n";
    return 2;
  }
  ag::replay_options opt;
  if (cfg.mode != "process" && cfg.mode != "inproc") {
    std::cerr << "ag-replay: --mode=" << cfg.mode << ": expected process or inproc\n";
    return 2;
  }
  if (cfg.timeout_ms <= 0 || cfg.tolerance < 0) {
    std::cerr << "ag-replay: --timeout must be positive and --tolerance not negative\n";
    return 2;
  }
  opt.process = cfg.mode == "process";
  opt.runner_path = cfg.runner;
  opt.tolerance = cfg.tolerance;
  opt.timeout = std::chrono::milliseconds{cfg.timeout_ms};
  const std::string path = cfg.remainder.front();
  ag::trace::file trace;
  try {
    if (!cfg.devices.empty())
      opt.devices = ag::parse_devices(cfg.devices);
    trace = ag::trace::read_file(path);
  } catch (const std::exception& e) {
    std::cerr << "ag-replay: " << e.what() << "\n";
    return 2;
  }
  ag::replay_report report;
  std::string expected;
  try {
    if (!cfg.expect.empty())
      expected = read_text(cfg.expect);
    caf::actor_system sys{cfg};
    report = ag::replay(sys, trace, opt);
  } catch (const std::exception& e) {
    std::cerr << "ag-replay: " << path << ": cannot replay: " << e.what() << "\n";
    return 3;
  }
  const std::string digests = ag::format_digests(report.digests);
  std::printf("%s: %s replay of %zu records: %llu messages, %llu acknowledgements and %llu reads "
              "compared\n%s",
              path.c_str(), cfg.mode.c_str(), trace.records.size(),
              static_cast<unsigned long long>(report.messages),
              static_cast<unsigned long long>(report.acks),
              static_cast<unsigned long long>(report.reads), digests.c_str());
  if (report.worst_relative > 0)
    std::printf("reads matched within the tolerance; the largest relative difference: %.3g\n",
                report.worst_relative);
  if (!cfg.digests.empty()) {
    std::ofstream out{cfg.digests};
    out << digests;
    if (!out.flush()) {
      std::cerr << "ag-replay: --digests " << cfg.digests << ": cannot write\n";
      return 3;
    }
  }
  if (!report.matched) {
    std::printf("DIVERGED: %s\n", report.divergence.c_str());
    return 1;
  }
  if (!cfg.expect.empty()) {
    if (auto diff = first_difference(expected, digests); !diff.empty()) {
      std::printf("DIVERGED: digests differ from %s at %s\n", cfg.expect.c_str(), diff.c_str());
      return 1;
    }
  }
  std::printf("match\n");
  return 0;
}
