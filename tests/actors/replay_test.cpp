// Message traces end to end (actors/replay.hpp, apps/ag-replay): a runtime records a trace, the
// replay reproduces it in both modes with real children, a changed trace is a divergence that
// names where, a damaged file is refused with a message and never a signal; and the timeline
// of a run has a track per device.
#include <catch2/catch.hpp>

#define BOOST_BIND_GLOBAL_PLACEHOLDERS // Boost 1.74's property_tree pulls in the deprecated bind.hpp
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <actorgraph/actorgraph.hpp>

#include "actors/replay.hpp"
#include "ipc/sub_process.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/actors/random_program.hpp"
#include "tests/temp_files.hpp"

using namespace ag::test;

namespace {

// Records a random program over sim:0 and sim:1 into `path`; the values it ends with are held
// past the runtime's end, so the trace names them live.
void record_program(const std::string& path, bool process, uint32_t seed) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0), ag::device::sim(1)};
  opt.per_device_per_process = process;
  opt.store_bytes = std::size_t{64} << 20;
  opt.trace_path = path;
  opt.transport = transport_under_test();
  std::vector<ag::tensor> kept;
  ag::runtime rt{opt};
  run_random_program(rt, seed, 50, &kept);
}

using ag::test::replay_file;

// The trace's records encoded again, after `change` had its way with them.
template <class F>
std::vector<char> rewrite(const ag::trace::file& t, F change) {
  auto records = t.records;
  change(records);
  auto out = ag::trace::file_header();
  for (auto& r : records) {
    const auto bytes = ag::trace::encode_record(r.body, r.time_ns);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

struct run_result {
  ag::exit_status status;
  std::string output;
  pid_t pid = 0; // ag-replay's: its shared memory is named after it
};

// ag-replay with `args`, its stdout and stderr captured.
run_result run_replay(const temp_dir& dir, const std::vector<std::string>& args) {
  const auto program = beside_this_program("ag-replay", AG_TEST_REPLAY);
  std::string command = "exec '" + program + "'";
  for (const auto& a : args)
    command += " '" + a + "'";
  command += " --transport=" + transport_under_test_name();
  command += " >'" + dir.file("out") + "' 2>&1";
  auto p = ag::sub_process::spawn("/bin/sh", {"-c", command});
  const auto& st = p.wait_for(std::chrono::seconds{120});
  REQUIRE(st.has_value());
  const auto text = slurp(dir.file("out"));
  return {*st, std::string(text.begin(), text.end()), p.pid()};
}

} // namespace

TEST_CASE("a trace recorded in either mode replays in both modes to the same digests",
          "[trace]") {
  temp_dir dir{"replay-test"};
  for (const bool recorded_process : {false, true}) {
    const auto path = dir.file(recorded_process ? "process.trace" : "thread.trace");
    record_program(path, recorded_process, 21);
    const auto t = ag::trace::read_file(path);
    CHECK(t.begin.process == recorded_process);
    const auto inproc = replay_file(t, false);
    const auto process = replay_file(t, true);
    INFO(inproc.divergence << process.divergence);
    REQUIRE(inproc.matched);
    REQUIRE(process.matched);
    CHECK(inproc.acks > 0);
    CHECK(inproc.reads > 0);
    CHECK(ag::format_digests(inproc.digests) == ag::format_digests(process.digests));
    bool device_live = false;
    for (const auto& d : process.digests)
      device_live = device_live || d.what.find("on sim:") != std::string::npos;
    CHECK(device_live);
  }
  CHECK(my_shm().empty());
  CHECK(runner_children().empty());
}

TEST_CASE("a trace with tensors larger than the store replays in both modes", "[trace]") {
  temp_dir dir{"replay-pieces"};
  for (const bool recorded_process : {false, true}) {
    const auto path = dir.file(recorded_process ? "process.trace" : "thread.trace");
    std::vector<ag::tensor> kept;
    {
      ag::graph_option opt;
      opt.devices = {ag::device::sim(0), ag::device::sim(1)};
      opt.per_device_per_process = recorded_process;
      opt.store_bytes = std::size_t{1} << 20; // 1 MiB; the tensor is 3 MiB
      opt.trace_path = path;
      opt.transport = transport_under_test();
      ag::runtime rt{opt};
      std::vector<float> values(768 * 1024);
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = float(i % 97);
      const auto a = rt.from_vector({int64_t(values.size())}, values, ag::device::sim(0));
      const auto b = (a * a).to(ag::device::sim(1));
      kept = {b, b.sum().to(ag::device::cpu())};
      REQUIRE(kept[1].to_vector().size() == 1);
    }
    const auto t = ag::trace::read_file(path);
    const auto inproc = replay_file(t, false);
    const auto process = replay_file(t, true);
    INFO(inproc.divergence << process.divergence);
    REQUIRE(inproc.matched);
    REQUIRE(process.matched);
    CHECK(ag::format_digests(inproc.digests) == ag::format_digests(process.digests));
  }
  CHECK(my_shm().empty());
  CHECK(runner_children().empty());
}

TEST_CASE("a changed store write is a divergence naming the read and who wrote it", "[trace]") {
  temp_dir dir{"replay-test"};
  const auto path = dir.file("t");
  record_program(path, true, 5);
  const auto t = ag::trace::read_file(path);
  // Every store write: flip the sign of its first element.
  const auto changed = rewrite(t, [](std::vector<ag::trace::record>& rs) {
    for (auto& r : rs)
      if (auto* w = std::get_if<ag::trace::store_write_rec>(&r.body); w && !w->data.empty())
        w->data[3] ^= static_cast<char>(0x80);
  });
  spit(dir.file("changed"), changed);
  const auto report = replay_file(ag::trace::read_file(dir.file("changed")), true);
  REQUIRE_FALSE(report.matched);
  CHECK_THAT(report.divergence, Catch::Contains("the read of #") && Catch::Contains("written by")
                                  && Catch::Contains("element") && Catch::Contains("recorded"));
}

TEST_CASE("a changed acknowledgement is a divergence naming the lane, the message and the "
          "operator",
          "[trace]") {
  temp_dir dir{"replay-test"};
  const auto path = dir.file("t");
  record_program(path, true, 9);
  const auto t = ag::trace::read_file(path);
  const auto changed = rewrite(t, [](std::vector<ag::trace::record>& rs) {
    for (auto& r : rs) {
      auto* a = std::get_if<ag::trace::ack_rec>(&r.body);
      if (!a || a->type != ag::wire::msg_type::done || a->lane == ag::cpu_lane)
        continue;
      ag::wire::done_msg m;
      ag::wire::decode(a->body.data(), a->body.size(), m);
      if (m.ops_done == 0)
        continue;
      m.device_bytes += 4;
      a->body = ag::wire::encode(m);
      return;
    }
  });
  spit(dir.file("changed"), changed);
  for (const bool process : {false, true}) {
    const auto report = replay_file(ag::trace::read_file(dir.file("changed")), process);
    REQUIRE_FALSE(report.matched);
    CHECK_THAT(report.divergence, Catch::Contains("(sim:") && Catch::Contains("message #")
                                    && Catch::Contains("device bytes live")
                                    && Catch::Contains("operator "));
  }
}

TEST_CASE("an operator that fails only in the replay is a divergence naming it", "[trace]") {
  temp_dir dir{"replay-test"};
  const auto path = dir.file("t");
  record_program(path, false, 13);
  const auto t = ag::trace::read_file(path);
  // A device operator that now reads an operand no runner has.
  const auto changed = rewrite(t, [](std::vector<ag::trace::record>& rs) {
    for (auto& r : rs) {
      auto* l = std::get_if<ag::trace::local_rec>(&r.body);
      if (!l || l->b.lane == ag::cpu_lane)
        continue;
      for (auto& op : l->b.ops)
        if (op.kind == ag::op_kind::add || op.kind == ag::op_kind::mul) {
          op.a = {999999, ag::operand_ref::no_offset};
          return;
        }
    }
  });
  spit(dir.file("changed"), changed);
  const auto report = replay_file(ag::trace::read_file(dir.file("changed")), true);
  REQUIRE_FALSE(report.matched);
  CHECK_THAT(report.divergence, Catch::Contains("the replay failed at operator")
                                  && Catch::Contains("#999999")
                                  && Catch::Contains("local batch (record"));
  CHECK(my_shm().empty());
  CHECK(runner_children().empty());
}

TEST_CASE("reads within the tolerance match, outside it diverge", "[trace]") {
  temp_dir dir{"replay-test"};
  const auto path = dir.file("t");
  record_program(path, false, 17);
  const auto t = ag::trace::read_file(path);
  // The recorded reads are off by one part in 10^6.
  const auto changed = rewrite(t, [](std::vector<ag::trace::record>& rs) {
    for (auto& r : rs)
      if (auto* rd = std::get_if<ag::trace::read_rec>(&r.body))
        for (std::size_t i = 0; i + 4 <= rd->data.size(); i += 4) {
          float x;
          std::memcpy(&x, rd->data.data() + i, 4);
          x = x * (1.0f + 1e-6f) + 1e-6f;
          std::memcpy(rd->data.data() + i, &x, 4);
        }
  });
  spit(dir.file("changed"), changed);
  const auto changed_trace = ag::trace::read_file(dir.file("changed"));
  CHECK_FALSE(replay_file(changed_trace, false).matched);
  CHECK(replay_file(changed_trace, false, 1e-5).matched);
}

TEST_CASE("ag-replay exits 0 on a match, 1 on a divergence and 2 on a damaged trace, never by a "
          "signal",
          "[trace]") {
  temp_dir dir{"replay-test"};
  const auto path = dir.file("t");
  record_program(path, true, 3);
  SECTION("a whole trace matches in both modes") {
    for (const char* mode : {"--mode=process", "--mode=inproc"}) {
      const auto r = run_replay(dir, {path, mode});
      INFO(r.output);
      CHECK(r.status.signal == 0);
      CHECK(r.status.code == 0);
      CHECK_THAT(r.output, Catch::Contains("match") && Catch::Contains("all "));
    }
  }
  SECTION("truncated and corrupted copies give 1 or 2 with a message") {
    const auto bytes = slurp(path);
    REQUIRE(bytes.size() > 1000);
    std::mt19937 rng{42};
    std::set<int> codes;
    for (int i = 0; i < 24; ++i) {
      auto damaged = bytes;
      const auto at = std::uniform_int_distribution<std::size_t>(0, bytes.size() - 1)(rng);
      if (i % 2 == 0)
        damaged.resize(at);
      else
        damaged[at] = static_cast<char>(damaged[at] ^ (1 << (i % 8)));
      spit(dir.file("damaged"), damaged);
      const auto r = run_replay(dir, {dir.file("damaged"), "--mode=inproc"});
      INFO("damage " << i << " at byte " << at << ": " << r.output);
      CHECK(r.status.signal == 0);
      CHECK((r.status.code == 1 || r.status.code == 2));
      CHECK_THAT(r.output, Catch::Contains("trace") || Catch::Contains("DIVERGED"));
      codes.insert(r.status.code);
    }
    CHECK(codes.count(2) == 1);
  }
  SECTION("a missing file, a bad mode and devices that do not fit are refused") {
    auto r = run_replay(dir, {dir.file("missing")});
    CHECK(r.status.code == 2);
    CHECK_THAT(r.output, Catch::Contains("cannot open"));
    r = run_replay(dir, {path, "--mode=fast"});
    CHECK(r.status.code == 2);
    CHECK_THAT(r.output, Catch::Contains("--mode=fast"));
    r = run_replay(dir, {path, "--devices=sim:0"});
    CHECK(r.status.code == 3);
    CHECK_THAT(r.output, Catch::Contains("2 device lanes"));
  }
  SECTION("a device that cannot start ends the replay with 3, and the one that did start stops") {
    const auto r = run_replay(dir, {path, "--devices=sim:0,cuda:99", "--timeout=20000"});
    INFO(r.output);
    CHECK(r.status.signal == 0);
    CHECK(r.status.code == 3);
    CHECK_THAT(r.output, Catch::Contains("cuda:99") && Catch::Contains("start-up"));
    CHECK(my_shm(r.pid).empty());
  }
  CHECK(my_shm().empty());
}

TEST_CASE("a timeline has a track per device with its operators, on one clock, in both modes",
          "[trace]") {
  namespace pt = boost::property_tree;
  temp_dir dir{"replay-test"};
  for (const bool process : {false, true}) {
    const auto path = dir.file(process ? "process.json" : "thread.json");
    {
      ag::graph_option opt;
      opt.devices = {ag::device::sim(0), ag::device::sim(1)};
      opt.per_device_per_process = process;
      opt.store_bytes = std::size_t{64} << 20;
      opt.timeline_path = path;
      opt.transport = transport_under_test();
      ag::runtime rt{opt};
      run_random_program(rt, 8, 30);
    }
    pt::ptree root;
    pt::read_json(path, root);
    std::map<std::pair<int, int>, std::string> tracks; // (pid, tid) -> name
    std::map<int, std::string> processes;
    std::map<std::string, int> ops_per_track;
    double first = 1e300, last = 0;
    for (const auto& [_, ev] : root.get_child("traceEvents")) {
      const auto ph = ev.get<std::string>("ph");
      const int pid = ev.get<int>("pid");
      const int tid = ev.get<int>("tid");
      if (ph == "M") {
        if (ev.get<std::string>("name") == "process_name")
          processes[pid] = ev.get<std::string>("args.name");
        else
          tracks[{pid, tid}] = ev.get<std::string>("args.name");
        continue;
      }
      REQUIRE(ph == "X");
      const double ts = ev.get<double>("ts");
      CHECK(ev.get<double>("dur") >= 0);
      first = std::min(first, ts);
      last = std::max(last, ts);
      if (ev.get<std::string>("cat") == "op")
        ++ops_per_track[tracks[{pid, tid}]];
    }
    INFO((process ? "process mode" : "thread mode"));
    CHECK(ops_per_track["cpu"] > 0);
    CHECK(ops_per_track["sim:0"] > 0);
    CHECK(ops_per_track["sim:1"] > 0);
    CHECK(last - first < 60e6); // one clock: every event within a minute
    std::set<std::string> names;
    for (const auto& [pid, name] : processes)
      names.insert(name);
    CHECK(names.count("controller") == 1);
    CHECK(names.count("ag-runner sim:0") == (process ? 1 : 0));
    CHECK(names.count("ag-runner sim:1") == (process ? 1 : 0));
  }
  CHECK(my_shm().empty());
}

TEST_CASE("a trace or timeline path that cannot be written is refused when the runtime is made",
          "[trace]") {
  for (const bool process : {false, true}) {
    ag::graph_option opt;
    opt.devices = {ag::device::sim(0)};
    opt.per_device_per_process = process;
    opt.store_bytes = std::size_t{16} << 20;
    opt.transport = transport_under_test();
    opt.trace_path = "/nonexistent-dir/t";
    CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("trace /nonexistent-dir/t: cannot create"));
    opt.trace_path.clear();
    opt.timeline_path = "/nonexistent-dir/t.json";
    CHECK_THROWS_WITH(ag::runtime{opt},
                      Catch::Contains("timeline /nonexistent-dir/t.json: cannot create"));
  }
  CHECK(my_shm().empty());
  CHECK(runner_children().empty());
}
