// log_limit (ipc/log_limit.hpp): a burst of lines a window goes out, the rest of the window is
// counted, and one line at the window's end says how many were held back; on a clock the tests
// drive.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ipc/log_limit.hpp"

using namespace std::chrono_literals;
using Catch::Contains;

TEST_CASE("a log limit lets a burst through each window and sums up the rest once it is over",
          "[ipc]") {
  std::vector<std::string> out;
  ag::log_limit limit{[&](const std::string& l) { out.push_back(l); }, "refused peers", 3, 1000ms};
  const auto t0 = ag::log_limit::clock::now();
  for (int i = 0; i < 10; ++i)
    limit.line("line " + std::to_string(i), t0 + std::chrono::milliseconds{i});
  REQUIRE(out.size() == 3); // the burst
  CHECK(out[2] == "line 2");
  CHECK(limit.held() == 7);
  limit.tick(t0 + 500ms); // still the same window: nothing yet
  CHECK(out.size() == 3);
  limit.tick(t0 + 1000ms);
  REQUIRE(out.size() == 4);
  CHECK_THAT(out[3], Contains("... and 7 more refused peers in 1000 ms")
                       && Contains("at most 3 every 1000 ms"));
  CHECK(limit.held() == 0);
  limit.line("next", t0 + 1200ms); // a new window: goes out
  CHECK(out.back() == "next");
  limit.tick(t0 + 5000ms); // nothing held: no summary
  CHECK(out.size() == 5);
}
