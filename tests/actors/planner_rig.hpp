// The rig of the planner tests (planner_test.cpp, planner_collective_test.cpp): a planner
// (actors/planner.hpp) over a real store buffer, an outbox that records everything it asks for
// (batches, broadcasts, kills, answers, deadlines), and the requests and operator fields the tests
// submit and compare. No actors, no runners, no clocks waited on.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "ipc/wire.hpp"

namespace ag::test {

// The lanes of a setup_of: the cpu, then a sim device each.
inline constexpr uint32_t cpu = 0;
inline constexpr uint32_t sim0 = 1;
inline constexpr uint32_t sim1 = 2;
inline constexpr uint64_t no_offset = ag::operand_ref::no_offset;

// "#id@offset", or "#id@dev" for a device operand.
inline std::string ref_str(const ag::operand_ref& r) {
  return "#" + std::to_string(r.id) + "@"
         + (r.offset == no_offset ? std::string{"dev"} : std::to_string(r.offset));
}

// Every field of an operator but its scalar, to compare one with what a test expects in one check.
inline std::string fields(const ag::op_desc& op) {
  return ag::to_string(op.kind) + " out=" + ref_str(op.out) + " a=" + ref_str(op.a)
         + " b=" + ref_str(op.b) + " count=" + std::to_string(op.count)
         + " m=" + std::to_string(op.m) + " k=" + std::to_string(op.k)
         + " n=" + std::to_string(op.n);
}

// A copy of `count` elements from a to out; with `total`, elements [first, first + count) of a
// `total`-element device operand.
inline std::string copy_fields(ag::operand_ref out, ag::operand_ref a, uint64_t count,
                               uint64_t first = 0, uint64_t total = 0) {
  return fields(ag::make_op(ag::op_kind::copy, out, a, {}, count, first, 0, total));
}

// Stores everything the planner asks for, in order.
struct recording_outbox final : ag::planner_outbox {
  std::map<uint32_t, std::vector<ag::batch>> runs; // by lane
  std::vector<ag::wire::execute_msg> broadcasts;
  std::vector<uint32_t> kills;
  std::map<uint64_t, std::vector<ag::wait_answer>> answers; // by wait id: each is answered once
  std::vector<uint64_t> answered;                           // wait ids, in answer order
  std::map<uint64_t, std::chrono::milliseconds> expiring;   // wait id -> after
  uint64_t last_expiring = 0;
  uint64_t flush_requests = 0;
  bool flush_pending = false;
  std::vector<std::chrono::milliseconds> progress_checks;
  struct restart_call {
    uint32_t lane;
    uint32_t generation;
    uint64_t entries_before;
  };
  std::vector<restart_call> restarts;

  void run(uint32_t lane, ag::batch b) override { runs[lane].push_back(std::move(b)); }
  void broadcast(ag::wire::execute_msg m) override { broadcasts.push_back(std::move(m)); }
  void kill(uint32_t lane) override { kills.push_back(lane); }
  void answer(uint64_t wait, ag::wait_answer a) override {
    answers[wait].push_back(std::move(a));
    answered.push_back(wait);
  }
  void flush_soon() override {
    ++flush_requests;
    flush_pending = true;
  }
  void expire_after(uint64_t wait, std::chrono::milliseconds after) override {
    expiring[wait] = after;
    last_expiring = wait;
  }
  void check_progress_after(std::chrono::milliseconds after) override {
    progress_checks.push_back(after);
  }
  void restart(uint32_t lane, uint32_t generation, uint64_t entries_before) override {
    restarts.push_back({lane, generation, entries_before});
  }

  std::size_t batches(uint32_t lane) const {
    auto it = runs.find(lane);
    return it == runs.end() ? 0 : it->second.size();
  }
  bool was_answered(uint64_t wait) const { return answers.count(wait) > 0; }
  // The one answer of `wait`.
  const ag::wait_answer& answer_of(uint64_t wait) const {
    auto it = answers.find(wait);
    REQUIRE(it != answers.end());
    REQUIRE(it->second.size() == 1);
    return it->second.front();
  }
};

// Credits for the three lanes, with the default bounds.
inline std::shared_ptr<ag::flow_control> lanes_flow() {
  return std::make_shared<ag::flow_control>(std::vector<std::string>{"cpu", "sim:0", "sim:1"},
                                            ag::flow_control::limits{});
}

// The cpu and lanes - 1 sim devices, over a store of store_bytes; in process mode or not.
inline ag::planner_setup setup_of(std::size_t store_bytes = 64 << 10, bool process = false,
                                  std::size_t lanes = 3) {
  ag::planner_setup s;
  s.devices = {ag::device::cpu()};
  for (std::size_t l = 1; l < lanes; ++l)
    s.devices.push_back(ag::device::sim(static_cast<int32_t>(l) - 1));
  s.process = process;
  s.store_size = store_bytes;
  s.wait_timeout = std::chrono::milliseconds{500};
  return s;
}

inline ag::planner_setup on_store(std::vector<std::byte>& store, ag::planner_setup s) {
  s.store_base = store.data();
  return s;
}

// A planner over a real store, and the outbox it talks to.
struct rig {
  explicit rig(ag::planner_setup s = setup_of())
    : lanes(static_cast<uint32_t>(s.devices.size())), store(s.store_size),
      plan(on_store(store, std::move(s)), out) {}

  void submit(ag::op_request req) { plan.submit(req); }
  void submit(ag::collective_request c) { plan.submit(c); }

  // What the executor does at the end of a mailbox drain.
  void drain() {
    while (out.flush_pending) {
      out.flush_pending = false;
      plan.flush();
    }
  }

  uint64_t sync() {
    const uint64_t w = plan.new_wait();
    plan.sync(w);
    return w;
  }

  uint64_t fetch(ag::operand_id id) {
    const uint64_t w = plan.new_wait();
    plan.fetch(w, id);
    return w;
  }

  std::vector<float> floats_at(uint64_t offset, std::size_t n) const {
    REQUIRE(offset <= store.size());
    REQUIRE(n * sizeof(float) <= store.size() - offset);
    std::vector<float> v(n);
    std::memcpy(v.data(), store.data() + offset, n * sizeof(float));
    return v;
  }

  const ag::batch& last_batch(uint32_t lane) {
    REQUIRE(out.batches(lane) > 0);
    return out.runs[lane].back();
  }

  // Every operator lane l was sent, in order.
  std::vector<ag::op_desc> ops_of(uint32_t l) const {
    std::vector<ag::op_desc> v;
    auto it = out.runs.find(l);
    if (it != out.runs.end())
      for (const auto& b : it->second)
        v.insert(v.end(), b.ops.begin(), b.ops.end());
    return v;
  }

  uint32_t lanes; // the devices of its setup
  std::vector<std::byte> store;
  recording_outbox out;
  ag::planner plan;
};

inline ag::device dev(uint32_t lane) {
  return lane == cpu ? ag::device::cpu() : ag::device::sim(static_cast<int32_t>(lane) - 1);
}

inline ag::op_request upload(uint32_t lane, ag::operand_id out, std::vector<float> data) {
  ag::op_request r;
  r.kind = ag::op_kind::upload;
  r.where = dev(lane);
  r.out = out;
  r.count = data.size();
  const auto* p = reinterpret_cast<const char*>(data.data());
  r.data.assign(p, p + data.size() * sizeof(float));
  return r;
}

inline ag::op_request move_to(uint32_t lane, ag::operand_id out, ag::operand_id a,
                              uint64_t count) {
  ag::op_request r;
  r.kind = ag::op_kind::copy;
  r.where = dev(lane);
  r.out = out;
  r.a = a;
  r.count = count;
  return r;
}

inline ag::op_request compute(ag::op_kind kind, uint32_t lane, ag::operand_id out,
                              ag::operand_id a, ag::operand_id b, uint64_t count) {
  ag::op_request r;
  r.kind = kind;
  r.where = dev(lane);
  r.out = out;
  r.a = a;
  r.b = b;
  r.count = count;
  return r;
}

inline std::vector<float> filled(std::size_t n, float x) { return std::vector<float>(n, x); }

} // namespace ag::test
