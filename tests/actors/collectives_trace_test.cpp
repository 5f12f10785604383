// Collectives in the trace and the timeline (include/actorgraph/collectives.hpp, ipc/trace.hpp):
// each collective recorded with its kind and group and replayed to the same values in both modes;
// the timeline's notes of the path each collective and device move takes, and why.
// Results: collectives_test.cpp.
#include <catch2/catch.hpp>

#define BOOST_BIND_GLOBAL_PLACEHOLDERS // Boost 1.74's property_tree pulls in the deprecated bind.hpp
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/collective_helpers.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/temp_files.hpp"

using namespace ag::test;
using namespace ag::test::collective;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

using ag::device;
using ag::shape_t;
using ag::tensor;

ag::replay_report replay_trace(const ag::trace::file& t, bool process) {
  return ag::test::replay_file(t, process);
}

} // namespace

// -- the trace and its replay --------------------------------------------------------------

TEST_CASE("a trace records each collective with its kind and group and replays to the same "
          "values in both modes",
          "[collectives]") {
  temp_dir dir{"collectives-trace"};
  for (const bool recorded_process : {false, true}) {
    INFO((recorded_process ? "recorded in process mode" : "recorded in thread mode"));
    const auto path = dir.file(recorded_process ? "process.trace" : "thread.trace");
    const int64_t n = chunk_of(std::size_t{1} << 20, 4) + 5;
    {
      auto opt = option(3, recorded_process);
      opt.trace_path = path;
      ag::runtime rt{opt};
      std::vector<tensor> parts;
      for (int i = 0; i < 3; ++i)
        parts.push_back(rt.from_vector({n}, values(std::size_t(n), 200 + uint32_t(i)),
                                       device::sim(i)));
      const auto h = rt.from_vector({n}, values(std::size_t(n), 210), device::cpu());
      const auto r = ag::all_reduce({parts[0], parts[1], parts[2], h});
      const auto b = ag::broadcast(parts[1], {device::cpu(), device::sim(1), device::sim(2)});
      const auto g = ag::all_gather({h, parts[2]});
      const auto s = ag::reduce_scatter({parts[0] + r[0], parts[1]});
      // Reads of cpu results are recorded for the replay to compare.
      (void)r[3].to_vector();
      (void)b[0].to_vector();
      (void)g[0].to_vector();
      (void)s[1].to_vector();
      rt.sync();
    }
    const auto t = ag::trace::read_file(path);
    std::vector<ag::collective_request> recorded;
    for (const auto& rec : t.records)
      if (rec.type() == ag::trace::record_type::collective)
        recorded.push_back(std::get<ag::trace::collective_rec>(rec.body).c);
    REQUIRE(recorded.size() == 4);
    const auto& ar = recorded[0];
    CHECK(ar.kind == ag::collective_kind::all_reduce);
    CHECK(ar.parts.size() == 4);
    CHECK(ar.outs.size() == 4);
    CHECK(ar.count == uint64_t(n));
    CHECK(ar.from == std::vector<device>{device::sim(0), device::sim(1), device::sim(2),
                                          device::cpu()});
    CHECK(ar.to == ar.from);
    const auto& bc = recorded[1];
    CHECK(bc.kind == ag::collective_kind::broadcast);
    CHECK(bc.parts.size() == 1);
    CHECK(bc.outs.size() == 2); // sim:1 is the source itself
    CHECK(bc.to == std::vector<device>{device::cpu(), device::sim(2)});
    const auto& ag_ = recorded[2];
    CHECK(ag_.kind == ag::collective_kind::all_gather);
    CHECK(ag_.parts.size() == 2);
    CHECK(ag_.outs.size() == 2);
    CHECK(ag_.out_count() == 2 * uint64_t(n));
    const auto& rs = recorded[3];
    CHECK(rs.kind == ag::collective_kind::reduce_scatter);
    CHECK(rs.parts.size() == 2);
    CHECK(rs.outs.size() == 2);
    CHECK(rs.from == std::vector<device>{device::sim(0), device::sim(1)});
    for (const bool replay_process : {false, true}) {
      INFO((replay_process ? "replayed in process mode" : "replayed in thread mode"));
      const auto report = replay_trace(t, replay_process);
      INFO(report.divergence);
      CHECK(report.matched);
      CHECK(report.collectives == recorded.size());
      CHECK(report.reads >= 4);
    }
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

// -- the timeline ----------------------------------------------------------------------------

TEST_CASE("the timeline notes that collectives and device moves take the store and why",
          "[collectives]") {
  namespace pt = boost::property_tree;
  temp_dir dir{"collectives-timeline"};
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    const auto path = dir.file(process ? "process.json" : "thread.json");
    {
      auto opt = option(2, process);
      opt.timeline_path = path;
      ag::runtime rt{opt};
      const auto a = rt.full({100}, 1.0f, device::sim(0));
      const auto b = rt.full({100}, 2.0f, device::sim(1));
      const auto h = rt.full({100}, 3.0f, device::cpu());
      CHECK(ag::all_reduce({a, b})[1].to_vector() == floats(100, 3.0f));
      CHECK(ag::all_gather({a, b})[0].numel() == 200);
      CHECK(ag::reduce_scatter({a, b})[0].shape() == shape_t{50});
      CHECK(ag::broadcast(h, {device::sim(0), device::sim(1)})[0].to_vector() == floats(100, 3.0f));
      CHECK(a.to(device::sim(1)).to_vector() == floats(100, 1.0f));
      rt.sync();
    }
    pt::ptree root;
    pt::read_json(path, root);
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> notes; // name -> (path, why)
    for (const auto& [_, ev] : root.get_child("traceEvents")) {
      const auto args = ev.get_child_optional("args");
      if (!args || !args->get_optional<std::string>("path"))
        continue;
      notes[ev.get<std::string>("name")].emplace_back(args->get<std::string>("path"),
                                                      args->get<std::string>("why", ""));
    }
    // Each transfer went through the store, and the note says why not directly, naming the
    // device that has no direct path ("sim:0 is not a CUDA device"; the first of the devices
    // named, sim:0 here, or the cpu where it takes part).
    std::string all;
    for (const auto& [name, list] : notes)
      for (const auto& [path, why] : list)
        all += name + ": " + path + " (" + why + ")\n";
    INFO("the notes:\n" << all);
    auto has = [&](const std::string& name, const std::string& names) {
      const auto it = notes.find(name);
      if (it == notes.end())
        return false;
      for (const auto& [path, why] : it->second)
        if (path == "store" && why.find(names) != std::string::npos)
          return true;
      return false;
    };
    CHECK(has("all_reduce", "sim:0"));
    CHECK(has("all_gather", "sim:0"));
    CHECK(has("reduce_scatter", "sim:0"));
    CHECK(has("broadcast", "cpu"));
    CHECK(has("to", "sim:0"));
  }
  CHECK(my_shm().empty());
}
