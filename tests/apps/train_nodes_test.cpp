// ag-train with one of its devices on an ag-node of this machine (TCP with CURVE): the same
// losses, bit for bit, as the same program on two local sim devices in process mode.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/actors/node_helpers.hpp"

namespace {

// The "epoch N  loss X" lines of a log.
std::string epoch_lines(const std::string& log) {
  std::ifstream in{log};
  std::string line, out;
  while (std::getline(in, line))
    if (line.rfind("epoch", 0) == 0)
      out += line + "\n";
  return out;
}

} // namespace

TEST_CASE("ag-train on a device of a node gives the losses of the same devices on this machine",
          "[nodes]") {
  ag::test::key_ring keys;
  const auto ctl = keys.make("ctl");
  const auto n1 = keys.make("n1");
  ag::test::node_process node{"n1", n1, {ctl}};
  const auto n = node.as_node(n1);
  ag::test::temp_dir logs{"train-nodes"};
  const std::vector<std::string> common{AG_TEST_TRAIN, "--mode=process", "--epochs=6",
                                        "--min-accuracy=0.9"};
  auto with = [&](std::vector<std::string> extra) {
    auto argv = common;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  REQUIRE(ag::test::run_program(with({"--devices=sim:0,n1/sim:0", "--key=" + ctl + ".secret",
                                      "--nodes=n1=" + n.endpoint + "=" + n.public_key_file}),
                                logs.file("node"))
          == 0);
  REQUIRE(ag::test::run_program(with({"--devices=sim:0,sim:1"}), logs.file("local")) == 0);
  const auto on_node = epoch_lines(logs.file("node"));
  CHECK(on_node.find("epoch   6  loss") != std::string::npos);
  CHECK(on_node == epoch_lines(logs.file("local")));
}
