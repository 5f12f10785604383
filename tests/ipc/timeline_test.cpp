// Tests of ipc/timeline: the written file is Chrome trace-event JSON (parsed back with Boost's JSON
// parser), parts written by other timelines merge in, and a bad or missing part is reported, never
// half-merged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Boost 1.74's JSON parser still includes boost/bind.hpp, which otherwise warns on every build.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/timeline.hpp"
#include "tests/temp_files.hpp"

using ag::timeline;
using boost::property_tree::ptree;
using namespace std::chrono_literals;

using ag::test::spit;
using ag::test::temp_dir;

namespace {

ptree read(const std::string& path) {
  ptree root;
  boost::property_tree::json_parser::read_json(path, root);
  return root;
}

std::vector<ptree> events_of(const ptree& root) {
  std::vector<ptree> events;
  for (const auto& [key, event] : root.get_child("traceEvents")) {
    CHECK(key.empty()); // an array element
    events.push_back(event);
  }
  return events;
}

// The events of t as written to dir/trace.json.
std::vector<ptree> written_events(const timeline& t, const temp_dir& dir) {
  t.write(dir.file("trace.json"));
  return events_of(read(dir.file("trace.json")));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every event carries what Chrome's format requires of its phase.
void check_well_formed(const ptree& event) {
  std::string ph = event.get<std::string>("ph");
  CHECK(event.get_optional<int>("pid"));
  CHECK(event.get_optional<int>("tid"));
  if (ph == "M") {
    std::string name = event.get<std::string>("name");
    CHECK((name == "process_name" || name == "thread_name"));
    CHECK(event.get_optional<std::string>("args.name"));
  } else {
    REQUIRE(ph == "X");
    CHECK(event.get_optional<std::string>("name"));
    CHECK(event.get_optional<std::string>("cat"));
    CHECK(event.get<double>("ts") >= 0);
    CHECK(event.get<double>("dur") >= 0);
  }
}

} // namespace

TEST_CASE("a written timeline is trace-event JSON with named tracks and complete events", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  auto begin = timeline::clock::now();
  auto end = begin + 1500us + 250ns;
  t.name_process(1, "controller");
  t.name_track(1, 7, "executor");
  t.span(1, 7, "execute", "batch", begin, end, {{"ops", "42", true}, {"device", "cuda:0"}});
  CHECK(t.size() == 3);
  t.write(dir.file("trace.json"));

  ptree root = read(dir.file("trace.json"));
  CHECK(root.get<std::string>("displayTimeUnit") == "ms");
  auto events = events_of(root);
  REQUIRE(events.size() == 3);
  for (const auto& e : events)
    check_well_formed(e);

  CHECK(events[0].get<std::string>("name") == "process_name");
  CHECK(events[0].get<int>("pid") == 1);
  CHECK(events[0].get<std::string>("args.name") == "controller");
  CHECK(events[1].get<std::string>("name") == "thread_name");
  CHECK(events[1].get<int>("tid") == 7);
  CHECK(events[1].get<std::string>("args.name") == "executor");

  const ptree& x = events[2];
  CHECK(x.get<std::string>("name") == "execute");
  CHECK(x.get<std::string>("cat") == "batch");
  CHECK(x.get<std::string>("dur") == "1500.250");
  double begin_us = std::chrono::duration<double, std::micro>(begin.time_since_epoch()).count();
  CHECK(x.get<double>("ts") == Approx(begin_us).margin(0.001));
  CHECK(x.get<std::string>("args.device") == "cuda:0");
  CHECK(x.get<int>("args.ops") == 42);
  // A number argument is a JSON number, not a string.
  CHECK(slurp(dir.file("trace.json")).find("\"ops\":42") != std::string::npos);
}

TEST_CASE("names with quotes, backslashes and control characters survive a round trip", "[ipc]") {
  temp_dir dir{"timeline-test"};
  const std::string odd = "a \"quoted\" C:\\path\nnext\tline\x01\x1f end";
  timeline t;
  t.name_process(2, odd);
  t.name_track(2, 3, odd);
  auto now = timeline::clock::now();
  t.span(2, 3, odd, odd, now, now, {{odd, odd}});
  t.write(dir.file("trace.json"));

  auto events = events_of(read(dir.file("trace.json")));
  REQUIRE(events.size() == 3);
  CHECK(events[0].get<std::string>("args.name") == odd);
  CHECK(events[1].get<std::string>("args.name") == odd);
  CHECK(events[2].get<std::string>("name") == odd);
  CHECK(events[2].get<std::string>("cat") == odd);
  // The key holds a dot, property_tree's path separator, so look it up by hand.
  const ptree& args = events[2].get_child("args");
  REQUIRE(args.size() == 1);
  CHECK(args.begin()->first == odd);
  CHECK(args.begin()->second.data() == odd);
}

TEST_CASE("a span that ends before it begins is recorded with zero duration", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  auto now = timeline::clock::now();
  t.span(1, 1, "backwards", "test", now, now - 1ms);
  auto events = written_events(t, dir);
  REQUIRE(events.size() == 1);
  CHECK(events[0].get<double>("dur") == 0.0);
}

TEST_CASE("a scoped span with no timeline does nothing", "[ipc]") {
  timeline::scoped_span span{nullptr, 1, 2, "work", "test"};
  CHECK_FALSE(span);
  span.rename("other");
  span.add("n", 3);
  span.close();
  span.close();
  CHECK_FALSE(span);
}

TEST_CASE("a scoped span records one complete event on its track when its scope ends", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  const auto before = timeline::clock::now();
  {
    timeline::scoped_span span{&t, 4, 5, "work", "test"};
    CHECK(span);
    std::this_thread::sleep_for(2ms);
    CHECK(t.size() == 0); // nothing before it closes
  }
  const auto after = timeline::clock::now();
  REQUIRE(t.size() == 1);
  auto events = written_events(t, dir);
  REQUIRE(events.size() == 1);
  check_well_formed(events[0]);
  CHECK(events[0].get<std::string>("ph") == "X");
  CHECK(events[0].get<std::string>("name") == "work");
  CHECK(events[0].get<std::string>("cat") == "test");
  CHECK(events[0].get<int>("pid") == 4);
  CHECK(events[0].get<int>("tid") == 5);
  const auto us = [](timeline::clock::time_point p) {
    return std::chrono::duration<double, std::micro>(p.time_since_epoch()).count();
  };
  const double ts = events[0].get<double>("ts");
  const double dur = events[0].get<double>("dur");
  CHECK(dur >= 2000.0);
  CHECK(ts >= us(before) - 0.001);
  CHECK(ts + dur <= us(after) + 0.001);
  CHECK(events[0].count("args") == 0);
}

TEST_CASE("a scoped span takes the name and arguments given before it closes, once", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  {
    timeline::scoped_span span{&t, 1, 2, {}, "op"};
    span.rename("add #3");
    span.add("index", 7);
    span.add("bytes", 1024);
    span.close();
    CHECK_FALSE(span);
    span.rename("late");
    span.add("late", 1);
    span.close();
  }
  REQUIRE(t.size() == 1);
  auto events = written_events(t, dir);
  REQUIRE(events.size() == 1);
  CHECK(events[0].get<std::string>("name") == "add #3");
  CHECK(events[0].get<int>("args.index") == 7);
  CHECK(events[0].get<int>("args.bytes") == 1024);
  CHECK_FALSE(events[0].get_optional<int>("args.late"));
  CHECK(slurp(dir.file("trace.json")).find("\"index\":7") != std::string::npos);
}

TEST_CASE("a scoped span left by an exception or dropped records nothing", "[ipc]") {
  timeline t;
  try {
    timeline::scoped_span span{&t, 1, 1, "fails", "test"};
    throw std::runtime_error("the work failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(t.size() == 0);
  {
    timeline::scoped_span span{&t, 1, 1, "dropped", "test"};
    span.drop();
    CHECK_FALSE(span);
  }
  CHECK(t.size() == 0);
  // In a handler the exception is caught, not unwinding through the span: it records.
  try {
    throw std::runtime_error("handled");
  } catch (const std::runtime_error&) {
    timeline::scoped_span span{&t, 1, 1, "in a handler", "test"};
  }
  CHECK(t.size() == 1);
}

TEST_CASE("an empty timeline writes an empty but valid trace", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  t.write(dir.file("trace.json"));
  ptree root = read(dir.file("trace.json"));
  CHECK(root.get<std::string>("displayTimeUnit") == "ms");
  CHECK(root.get_child("traceEvents").empty());
}

TEST_CASE("merging a part written by another timeline appends its events", "[ipc]") {
  temp_dir dir{"timeline-test"};
  auto now = timeline::clock::now();

  timeline child;
  child.name_process(20, "cuda:0");
  child.name_track(20, 1, "stream");
  child.span(20, 1, "kernel", "gpu", now, now + 2ms, {{"bytes", "1024", true}});
  child.write_part(dir.file("child.part"));
  // One event per line, nothing else.
  std::string part = slurp(dir.file("child.part"));
  CHECK(std::count(part.begin(), part.end(), '\n') == 3);

  timeline controller;
  controller.name_process(10, "controller");
  controller.span(10, 1, "execute", "batch", now, now + 3ms);
  REQUIRE(controller.merge_part(dir.file("child.part")));
  CHECK(controller.size() == 5);
  controller.write(dir.file("trace.json"));

  auto events = events_of(read(dir.file("trace.json")));
  REQUIRE(events.size() == 5);
  for (const auto& e : events)
    check_well_formed(e);
  CHECK(events[0].get<std::string>("args.name") == "controller");
  CHECK(events[1].get<std::string>("name") == "execute");
  CHECK(events[2].get<std::string>("args.name") == "cuda:0");
  CHECK(events[3].get<std::string>("args.name") == "stream");
  CHECK(events[4].get<std::string>("name") == "kernel");
  CHECK(events[4].get<int>("pid") == 20);
  CHECK(events[4].get<int>("args.bytes") == 1024);
  // Both processes' spans share one clock.
  CHECK(events[1].get<std::string>("ts") == events[4].get<std::string>("ts"));
}

TEST_CASE("merging an empty part adds nothing and succeeds", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline{}.write_part(dir.file("empty.part"));
  timeline t;
  CHECK(t.merge_part(dir.file("empty.part")));
  CHECK(t.size() == 0);
}

TEST_CASE("a missing part returns false and adds nothing", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  t.name_process(1, "controller");
  CHECK_FALSE(t.merge_part(dir.file("never-written.part")));
  CHECK(t.size() == 1);
}

TEST_CASE("a part with a garbage line throws naming the path and the line and adds nothing",
          "[ipc]") {
  temp_dir dir{"timeline-test"};
  const std::string good = R"({"name":"ok","ph":"X","pid":1,"tid":1,"ts":1.000,"dur":0.500})";
  const std::vector<std::string> bad_lines = {
      "garbage",
      "[1,2,3]",
      R"("just a string")",
      R"({"name":"unterminated)",
      R"({"a":1} trailing)",
      R"({"a":1}{"b":2})",
      R"({"a":01})",
      R"({"a":-})",
      R"({"a":1.})",
      R"({"a":tru})",
      R"({"a":"bad \q escape"})",
      R"({"a":"\u12"})",
      std::string("{\"a\":\"raw\ttab\"}"),
      std::string("{\"a\":\"nul\0\"}", 12),
      R"({"a":1,})",
      R"({,})",
      std::string(100000, '{'),
  };
  const std::string path = dir.file("bad.part");
  for (const auto& bad : bad_lines) {
    INFO("bad line: " << bad.substr(0, 40));
    spit(path, good + "\n" + bad + "\n" + good + "\n");
    timeline t;
    t.name_process(1, "controller");
    REQUIRE_THROWS_MATCHES(t.merge_part(path), ag::error,
                           Catch::Matchers::Message("timeline: part " + path +
                                                    " line 2 is not one JSON object"));
    CHECK(t.size() == 1);
  }
}

TEST_CASE("a part of arbitrary bytes is merged or rejected, never a crash", "[ipc]") {
  temp_dir dir{"timeline-test"};
  const std::string path = dir.file("random.part");
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\":,\\ \n-0123456789.eEtrufalsn\x01\xff";
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 64, '\0');
    for (auto& c : bytes)
      c = round % 2 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
    spit(path, bytes);
    timeline t;
    try {
      t.merge_part(path);
    } catch (const ag::error& e) {
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }
}

TEST_CASE("a part larger than 256 MiB is rejected", "[ipc]") {
  temp_dir dir{"timeline-test"};
  const std::string path = dir.file("huge.part");
  spit(path, "");
  // Sparse: no disk space is spent.
  std::filesystem::resize_file(path, timeline::max_part_bytes + 1);
  timeline t;
  REQUIRE_THROWS_MATCHES(t.merge_part(path), ag::error,
                         Catch::Matchers::Message("timeline: part " + path +
                                                  " is larger than 256 MiB"));
  CHECK(t.size() == 0);
}

TEST_CASE("writing where no file can be created throws naming the path", "[ipc]") {
  temp_dir dir{"timeline-test"};
  timeline t;
  t.name_process(1, "controller");
  const std::string path = dir.file("no-such-dir/trace.json");
  REQUIRE_THROWS_MATCHES(t.write(path), ag::error,
                         Catch::Matchers::Message("timeline: cannot write " + path +
                                                  ": No such file or directory"));
  REQUIRE_THROWS_MATCHES(t.write_part(dir.path()), ag::error,
                         Catch::Matchers::Message("timeline: cannot write " + dir.path() +
                                                  ": Is a directory"));
}

TEST_CASE("spans recorded from 4 threads at once all land", "[ipc]") {
  temp_dir dir{"timeline-test"};
  constexpr int threads = 4;
  constexpr int spans_per_thread = 2000;
  timeline t;
  std::vector<std::thread> workers;
  for (int tid = 0; tid < threads; ++tid)
    workers.emplace_back([&t, tid] {
      t.name_track(1, tid, "worker " + std::to_string(tid));
      for (int i = 0; i < spans_per_thread; ++i) {
        auto begin = timeline::clock::now();
        t.span(1, tid, "op " + std::to_string(i), "test", begin, timeline::clock::now());
      }
    });
  for (auto& w : workers)
    w.join();
  CHECK(t.size() == threads * (spans_per_thread + 1));

  auto events = written_events(t, dir);
  REQUIRE(events.size() == threads * (spans_per_thread + 1));
  std::set<std::pair<int, std::string>> seen;
  for (const auto& e : events)
    if (e.get<std::string>("ph") == "X")
      seen.emplace(e.get<int>("tid"), e.get<std::string>("name"));
  CHECK(seen.size() == threads * spans_per_thread);
}
