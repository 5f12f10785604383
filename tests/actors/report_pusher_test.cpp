// report_pusher, a node's child's side of its reports, over real CURVE sockets: the store bytes a
// Done's batches wrote go on the reports connection ahead of the Done when they are small, and
// over the return streams, behind a Data-done naming the last piece, when they are not.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "actors/report_pusher.hpp"
#include "ipc/wire.hpp"
#include "ipc/zap_handler.hpp"
#include "ipc/zmq_sockets.hpp"
#include "tests/ipc/curve_test_keys.hpp"

using namespace std::chrono_literals;
namespace zmqs = ag::zmqs;
namespace wire = ag::wire;

namespace {

struct fixture {
  zmq::context_t ctx{3}; // return stream k on I/O thread k + 1
  ag::test::curve_key_pair server, n1;
  std::shared_ptr<ag::zap_handler> zap = std::make_shared<ag::zap_handler>(
    ctx, std::map<std::string, std::string>{{n1.pub, "n1"}}, [](const std::string&) {});
  zmqs::curve_keys keys{server.pub, server.sec, ""};
  zmq::socket_t reports = zmqs::puller(ctx, "tcp://127.0.0.1:0", &keys);
  std::vector<zmq::socket_t> returns;
  std::vector<std::byte> store = std::vector<std::byte>(1 << 20);

  fixture() {
    for (int k = 0; k < 2; ++k)
      returns.push_back(zmqs::puller(ctx, "tcp://127.0.0.1:0", &keys));
    for (std::size_t i = 0; i < store.size(); ++i)
      store[i] = static_cast<std::byte>(i * 7 + 3);
  }

  static std::string at(zmq::socket_t& s) {
    return "tcp://127.0.0.1:" + std::to_string(zmqs::bound_port(s));
  }

  ag::node_child child() {
    ag::node_child c{server.pub, n1.pub, n1.sec, {}, {}, store.data(), store.size()};
    for (auto& r : returns)
      c.return_endpoints.push_back(at(r));
    return c;
  }

  wire::header next_report() {
    auto r = zmqs::receive(reports, 5s);
    REQUIRE(r);
    return r->head;
  }

  // The Data-out bytes the return streams carry, until `bytes` came (each checked in place).
  std::size_t returned(std::size_t bytes) {
    std::size_t got = 0;
    for (int idle = 0; got < bytes && idle < 100;) {
      bool any = false;
      for (auto& s : returns)
        if (auto r = zmqs::receive(s, 50ms)) {
          any = true;
          REQUIRE(r->head.type == wire::msg_type::data_out);
          const auto offset = wire::decode_data_offset(r->body.data(), r->body.size());
          CHECK(std::memcmp(r->data.data(), store.data() + offset, r->data.size()) == 0);
          got += r->data.size();
        }
      idle = any ? 0 : idle + 1;
    }
    return got;
  }
};

} // namespace

TEST_CASE("a node's child sends a Done's small writes on its reports connection, and larger ones "
          "over its return streams behind a Data-done",
          "[nodes]") {
  fixture f;
  ag::report_pusher out{f.ctx, fixture::at(f.reports), 1, ag::device::sim(0), f.child()};

  out.writes(2, {100, 1000});
  out.done(1, 2, 2, 0);
  auto h = f.next_report();
  CHECK(h.type == wire::msg_type::data_out); // ahead of its Done, on the same connection
  CHECK(h.id == 1);
  h = f.next_report();
  CHECK(h.type == wire::msg_type::done);
  CHECK(h.id == 2);
  CHECK(f.returned(1) == 0); // nothing on the return streams

  const std::size_t big = ag::report_pusher::small_writes + 1;
  out.writes(4, {4096, big});
  out.done(1, 4, 4, 0);
  h = f.next_report();
  CHECK(h.type == wire::msg_type::data_done);
  CHECK(h.id == 3);
  h = f.next_report();
  CHECK(h.type == wire::msg_type::done);
  CHECK(h.id == 4);
  CHECK(f.returned(big) == big);
}
