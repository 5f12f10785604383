// ipc/trace.hpp's read_file: it reads regular files only, with a bound, and refuses anything else
// at once with an error naming the path.
#include <catch2/catch.hpp>

#include <string>

#include "actorgraph/error.hpp"
#include "ipc/trace.hpp"
#include "tests/temp_files.hpp"

using namespace ag::test;
using Catch::Contains;

// A device and a FIFO are checked through ag-replay (tests/apps/apps_test.cpp), under a deadline:
// read here, a regression would hang the tests.
TEST_CASE("read_file refuses a directory and a missing file, naming the path", "[trace]") {
  temp_dir dir{"trace-file-test"};
  CHECK_THROWS_WITH(ag::trace::read_file(dir.path()),
                    Contains("trace " + dir.path() + ": is a directory"));
  CHECK_THROWS_WITH(ag::trace::read_file(dir.file("missing")),
                    Contains("trace " + dir.file("missing") + ": cannot open it"));
}

TEST_CASE("read_file reads a golden trace whole, and a copy cut short is refused as truncated",
          "[trace]") {
  const std::string golden = AG_TEST_TRACES "/random-thread.trace";
  const auto t = ag::trace::read_file(golden);
  CHECK(t.records.size() > 2);
  temp_dir dir{"trace-file-test"};
  auto bytes = slurp(golden);
  bytes.resize(bytes.size() - 3);
  spit(dir.file("cut"), bytes);
  CHECK_THROWS_WITH(ag::trace::read_file(dir.file("cut")), Contains("truncated"));
}
