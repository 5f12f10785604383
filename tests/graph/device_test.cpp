// Tests of graph/device.cpp: how device names are parsed and printed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

using ag::device;

TEST_CASE("cpu, cuda:N and sim:N parse to the device they name", "[graph]") {
  CHECK(ag::parse_device("cpu") == device::cpu());
  CHECK(ag::parse_device("cuda:0") == device::cuda(0));
  CHECK(ag::parse_device("cuda:7") == device::cuda(7));
  CHECK(ag::parse_device("sim:0") == device::sim(0));
  CHECK(ag::parse_device("sim:12") == device::sim(12));
}

TEST_CASE("spaces around a device name are ignored", "[graph]") {
  CHECK(ag::parse_device("  sim:1 ") == device::sim(1));
  CHECK(ag::parse_device("\tcpu\n") == device::cpu());
  CHECK(ag::parse_devices(" sim:0 , cuda:1 ")
        == std::vector<device>{device::sim(0), device::cuda(1)});
}

TEST_CASE("the word auto parses to an empty device list", "[graph]") {
  CHECK(ag::parse_devices("auto").empty());
  CHECK(ag::parse_devices("  auto ").empty());
}

TEST_CASE("a comma list of devices keeps the order it was written in", "[graph]") {
  CHECK(ag::parse_devices("sim:1,sim:0") == std::vector<device>{device::sim(1), device::sim(0)});
  CHECK(ag::parse_devices("cuda:1,cpu,sim:3,cuda:0")
        == std::vector<device>{device::cuda(1), device::cpu(), device::sim(3), device::cuda(0)});
  CHECK(ag::parse_devices("sim:0") == std::vector<device>{device::sim(0)});
}

TEST_CASE("an unknown device name throws ag::error naming the text", "[graph]") {
  for (const std::string bad : {"gpu:0", "sim:", "sim:-1", "sim:x", "cuda:1:2", "cuda", "sim 0",
                                "CPU", "sim:+1", "cuda:0x1", "cuda:", "sim: 0", "auto"}) {
    INFO("text: \"" << bad << "\"");
    CHECK_THROWS_AS(ag::parse_device(bad), ag::error);
    CHECK_THROWS_WITH(ag::parse_device(bad), Catch::Contains("\"" + bad + "\""));
  }
}

TEST_CASE("an empty device name throws ag::error", "[graph]") {
  CHECK_THROWS_AS(ag::parse_device(""), ag::error);
  CHECK_THROWS_WITH(ag::parse_device(""), Catch::Contains("unknown device \"\""));
  CHECK_THROWS_AS(ag::parse_device("   "), ag::error);
  CHECK_THROWS_AS(ag::parse_devices(""), ag::error);
  CHECK_THROWS_AS(ag::parse_devices("  "), ag::error);
}

TEST_CASE("an index too long to be a device index is rejected, not overflowed", "[graph]") {
  CHECK_THROWS_AS(ag::parse_device("sim:99999999999999999999"), ag::error);
  CHECK_THROWS_WITH(ag::parse_device("cuda:4294967296"), Catch::Contains("cuda:4294967296"));
}

TEST_CASE("an unknown name inside a device list throws ag::error naming that entry", "[graph]") {
  CHECK_THROWS_AS(ag::parse_devices("sim:0,gpu:1"), ag::error);
  CHECK_THROWS_WITH(ag::parse_devices("sim:0,gpu:1"), Catch::Contains("gpu:1"));
  CHECK_THROWS_WITH(ag::parse_devices("sim:0,sim:x,sim:1"), Catch::Contains("sim:x"));
}

TEST_CASE("auto in a list with other devices is refused saying it stands alone", "[graph]") {
  for (const std::string list : {"sim:0,auto", "auto,sim:0", "auto, auto", " auto ,cuda:0"}) {
    INFO("list: \"" << list << "\"");
    CHECK_THROWS_WITH(ag::parse_devices(list),
                      Catch::Contains("auto stands alone") && !Catch::Contains("unknown device"));
  }
  // One device named auto: auto is a whole list, not a device.
  CHECK_THROWS_WITH(ag::parse_device("auto"), Catch::Contains("auto names a whole device list")
                                                && !Catch::Contains("or auto"));
}

TEST_CASE("control characters in a device or node name are escaped in the error, not echoed raw",
          "[graph]") {
  for (const std::string& bad : {std::string{"sim:\x07\x1b[2J"}, std::string{"cu\nda:0"},
                                 std::string{"n\r1/sim:0"}, std::string{"sim:0,\x1b[31mgpu"}}) {
    try {
      ag::parse_devices(bad);
      FAIL("parsed " << bad.size() << " bytes with control characters");
    } catch (const ag::error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(std::none_of(what.begin(), what.end(),
                         [](unsigned char c) { return c < 0x20 || c == 0x7f; }));
      CHECK_THAT(what, Catch::Contains("\\x"));
    }
  }
  CHECK_THROWS_WITH(ag::parse_device("sim:\x1b"), Catch::Contains("\"sim:\\x1b\""));
}

TEST_CASE("an empty entry in a device list throws ag::error naming the list", "[graph]") {
  for (const std::string bad : {"sim:0,,sim:1", ",sim:0", "sim:0,", "sim:0, ,sim:1", ","}) {
    INFO("list: \"" << bad << "\"");
    CHECK_THROWS_AS(ag::parse_devices(bad), ag::error);
    CHECK_THROWS_WITH(ag::parse_devices(bad),
                      Catch::Contains("\"" + bad + "\"") && Catch::Contains("empty entry"));
  }
}

TEST_CASE("a device listed twice throws ag::error naming the device", "[graph]") {
  CHECK_THROWS_AS(ag::parse_devices("sim:0,sim:0"), ag::error);
  CHECK_THROWS_WITH(ag::parse_devices("sim:0,sim:1,sim:0"),
                    Catch::Contains("sim:0 twice") && Catch::Contains("sim:0,sim:1,sim:0"));
  // The same device written differently is still the same device.
  CHECK_THROWS_WITH(ag::parse_devices("cuda:1, cuda:01"), Catch::Contains("cuda:1 twice"));
  CHECK_THROWS_WITH(ag::parse_devices("cpu,cpu"), Catch::Contains("cpu twice"));
}

TEST_CASE("str() names a device the way parse_device reads it", "[graph]") {
  CHECK(device::cpu().str() == "cpu");
  CHECK(device::cuda(3).str() == "cuda:3");
  CHECK(device::sim(0).str() == "sim:0");
  for (const device d : {device::cpu(), device::cuda(0), device::cuda(5), device::sim(0),
                         device::sim(41)})
    CHECK(ag::parse_device(d.str()) == d);

  std::ostringstream out;
  out << device::sim(2);
  CHECK(out.str() == "sim:2");
}

TEST_CASE("to_string of a device list round-trips through parse_devices", "[graph]") {
  const std::vector<device> list{device::sim(1), device::cuda(0), device::cpu(), device::sim(0)};
  CHECK(ag::to_string(list) == "sim:1,cuda:0,cpu,sim:0");
  CHECK(ag::parse_devices(ag::to_string(list)) == list);
  CHECK(ag::to_string(ag::parse_devices("sim:0, sim:1")) == "sim:0,sim:1");
  CHECK(ag::to_string(std::vector<device>{}).empty());
}

TEST_CASE("devices compare by kind, then by index", "[graph]") {
  CHECK(device::sim(0) != device::cuda(0));
  CHECK(device::sim(0) != device::sim(1));
  CHECK(device::cpu() < device::cuda(0));
  CHECK(device::cuda(9) < device::sim(0));
  CHECK(device::sim(1) < device::sim(2));
  CHECK_FALSE(device::sim(2) < device::sim(2));
  CHECK(device::cpu().is_cpu());
  CHECK_FALSE(device::sim(0).is_cpu());
}

TEST_CASE("NAME/cuda:N and NAME/sim:N name a device on a node", "[graph]") {
  const auto d = ag::parse_device(" n1/cuda:2 ");
  CHECK(d.type == ag::device::kind::cuda);
  CHECK(d.index == 2);
  CHECK_FALSE(d.local());
  CHECK(d.node_name() == "n1");
  CHECK(d.str() == "n1/cuda:2");
  CHECK(d.on_its_node() == ag::device::cuda(2));
  CHECK(d != ag::device::cuda(2));
  CHECK(ag::device::cuda(2).local());
  CHECK(ag::parse_device("gpu-box_7/sim:0") == ag::device::sim(0).on("gpu-box_7"));
  const auto list = ag::parse_devices("cuda:0,n1/cuda:0,n1/cuda:1,n2/sim:0");
  REQUIRE(list.size() == 4);
  CHECK(ag::to_string(list) == "cuda:0,n1/cuda:0,n1/cuda:1,n2/sim:0");
  CHECK(ag::parse_devices(ag::to_string(list)) == list);
}

TEST_CASE("devices on nodes order by node, then kind, then index", "[graph]") {
  const auto here = ag::device::sim(5);
  const auto a = ag::parse_device("a/sim:0");
  const auto b = ag::parse_device("b/cuda:0");
  CHECK(here < a);
  CHECK(a < b);
  CHECK_FALSE(b < a);
}

TEST_CASE("a bad node name or a node's cpu throws ag::error naming it", "[graph]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(ag::parse_device("n1/cpu"), Contains("n1/cpu") && Contains("controller's"));
  CHECK_THROWS_WITH(ag::parse_device("1n/sim:0"), Contains("\"1n\""));
  CHECK_THROWS_WITH(ag::parse_device("a.b/sim:0"), Contains("\"a.b\""));
  CHECK_THROWS_WITH(ag::parse_device("abcdefghijklmnop/sim:0"), Contains("1 to 15"));
  CHECK_THROWS_WITH(ag::parse_device("/sim:0"), Contains("\"/sim:0\""));
  CHECK_THROWS_WITH(ag::parse_device("n1/n2/sim:0"), Contains("n1/n2/sim:0"));
  CHECK_THROWS_WITH(ag::parse_device("n1/gpu:0"), Contains("gpu:0"));
  CHECK_THROWS_WITH(ag::parse_devices("n1/sim:0,n1/sim:0"), Contains("n1/sim:0 twice"));
  CHECK_NOTHROW(ag::parse_devices("n1/sim:0,n2/sim:0,sim:0"));
}

TEST_CASE("parse_nodes reads NAME=tcp://HOST:PORT=PUBLIC_FILE lists", "[graph]") {
  using Catch::Matchers::Contains;
  const auto nodes = ag::parse_nodes("n1=tcp://10.0.0.2:7100=keys/n1.public,n2=tcp://h:1=b.public");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].name == "n1");
  CHECK(nodes[0].endpoint == "tcp://10.0.0.2:7100");
  CHECK(nodes[0].public_key_file == "keys/n1.public");
  CHECK(nodes[1].endpoint == "tcp://h:1");
  CHECK(ag::parse_nodes("").empty());
  CHECK_THROWS_WITH(ag::parse_nodes("n1=tcp://h:1"), Contains("\"n1=tcp://h:1\""));
  CHECK_THROWS_WITH(ag::parse_nodes("n1=tcp://h:1=k,=x=y"), Contains("\"=x=y\""));
}
