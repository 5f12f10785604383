// Tests of ipc/store_allocator: offsets are aligned and disjoint, a full store says so with an
// empty optional, and freed ranges coalesce back into one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ipc/store_allocator.hpp"

using ag::store_allocator;

namespace {

constexpr std::size_t align = store_allocator::alignment;

struct range {
  uint64_t offset;
  std::size_t bytes;
};

// The bytes a range really occupies: at least one alignment unit, rounded up to it.
std::size_t footprint(std::size_t bytes) {
  return bytes == 0 ? align : (bytes + align - 1) / align * align;
}

// Every range is aligned, inside the capacity and overlaps no other.
void check_disjoint(std::vector<range> ranges, std::size_t capacity) {
  std::sort(ranges.begin(), ranges.end(),
            [](const range& x, const range& y) { return x.offset < y.offset; });
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    INFO("range " << i << " at " << ranges[i].offset << ", " << ranges[i].bytes << " bytes");
    CHECK(ranges[i].offset % align == 0);
    CHECK(ranges[i].offset + footprint(ranges[i].bytes) <= capacity);
    if (i > 0)
      CHECK(ranges[i - 1].offset + footprint(ranges[i - 1].bytes) <= ranges[i].offset);
  }
}

} // namespace

TEST_CASE("store offsets are aligned, distinct and do not overlap", "[ipc]") {
  const std::size_t capacity = std::size_t{1} << 20;
  store_allocator alloc{capacity};
  CHECK(alloc.capacity() == capacity);
  CHECK(alloc.live_bytes() == 0);

  std::vector<range> ranges;
  std::size_t live = 0;
  for (std::size_t bytes : {1, 4, 255, 256, 257, 511, 512, 1000, 4096, 3, 0, 12345}) {
    const auto offset = alloc.allocate(bytes);
    REQUIRE(offset);
    ranges.push_back({*offset, bytes});
    live += footprint(bytes);
    CHECK(alloc.live_bytes() == live);
  }
  check_disjoint(ranges, capacity);
}

TEST_CASE("the store capacity is rounded down to the alignment", "[ipc]") {
  CHECK(store_allocator{1000}.capacity() == 3 * align);
  CHECK(store_allocator{align}.capacity() == align);
  CHECK(store_allocator{align - 1}.capacity() == 0);
}

TEST_CASE("allocating until the store is full ends in an empty optional, not an overlap", "[ipc]") {
  const std::size_t capacity = 64 * align;
  store_allocator alloc{capacity};
  std::vector<range> ranges;
  // 300 bytes take two alignment units each: 32 fit.
  for (int i = 0; i < 32; ++i) {
    const auto offset = alloc.allocate(300);
    REQUIRE(offset);
    ranges.push_back({*offset, 300});
  }
  CHECK(alloc.live_bytes() == capacity);
  CHECK_FALSE(alloc.allocate(300));
  CHECK_FALSE(alloc.allocate(1));
  CHECK_FALSE(alloc.allocate(0));
  // A failed allocation changes nothing.
  CHECK(alloc.live_bytes() == capacity);
  check_disjoint(ranges, capacity);

  // Freeing one range makes exactly that much room again.
  alloc.deallocate(ranges[7].offset, ranges[7].bytes);
  CHECK(alloc.live_bytes() == capacity - 2 * align);
  CHECK_FALSE(alloc.allocate(2 * align + 1));
  const auto again = alloc.allocate(2 * align);
  REQUIRE(again);
  CHECK(*again == ranges[7].offset);
}

TEST_CASE("a request larger than the store gets an empty optional", "[ipc]") {
  store_allocator alloc{16 * align};
  CHECK_FALSE(alloc.allocate(16 * align + 1));
  CHECK_FALSE(alloc.allocate(std::size_t{1} << 40));
  // Rounding these up would wrap around to a small size.
  CHECK_FALSE(alloc.allocate(std::numeric_limits<std::size_t>::max()));
  CHECK_FALSE(alloc.allocate(std::numeric_limits<std::size_t>::max() - align + 2));
  CHECK(alloc.live_bytes() == 0);
  // The store is still whole.
  CHECK(alloc.allocate(16 * align) == std::optional<uint64_t>{0});
}

TEST_CASE("a store smaller than the alignment cannot allocate anything", "[ipc]") {
  store_allocator alloc{align - 1};
  CHECK_FALSE(alloc.allocate(0));
  CHECK_FALSE(alloc.allocate(1));
  store_allocator none{0};
  CHECK_FALSE(none.allocate(0));
}

TEST_CASE("zero-byte allocations get distinct offsets", "[ipc]") {
  store_allocator alloc{16 * align};
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 16; ++i) {
    const auto offset = alloc.allocate(0);
    REQUIRE(offset);
    offsets.push_back(*offset);
  }
  std::sort(offsets.begin(), offsets.end());
  CHECK(std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end());
  CHECK(alloc.live_bytes() == 16 * align);
  CHECK_FALSE(alloc.allocate(0));
  for (auto offset : offsets)
    alloc.deallocate(offset, 0);
  CHECK(alloc.live_bytes() == 0);
}

TEST_CASE("freeing everything in any order coalesces the store back into one range", "[ipc]") {
  const std::size_t capacity = 4096 * align;
  store_allocator alloc{capacity};
  std::mt19937_64 rng{20240601};
  std::uniform_int_distribution<std::size_t> size{0, 5000};

  std::vector<range> ranges;
  while (true) {
    const std::size_t bytes = size(rng);
    const auto offset = alloc.allocate(bytes);
    if (!offset)
      break;
    ranges.push_back({*offset, bytes});
  }
  REQUIRE(ranges.size() > 100);
  check_disjoint(ranges, capacity);

  std::shuffle(ranges.begin(), ranges.end(), rng);
  for (const auto& r : ranges)
    alloc.deallocate(r.offset, r.bytes);

  CHECK(alloc.live_bytes() == 0);
  const auto whole = alloc.allocate(capacity);
  REQUIRE(whole);
  CHECK(*whole == 0);
  CHECK(alloc.live_bytes() == capacity);
}

TEST_CASE("interleaved allocations and frees never overlap and coalesce in the end", "[ipc]") {
  const std::size_t capacity = 1024 * align;
  store_allocator alloc{capacity};
  std::mt19937_64 rng{7};
  std::uniform_int_distribution<std::size_t> size{0, 3 * align};
  std::bernoulli_distribution free_one{0.45};

  std::vector<range> live;
  std::size_t expected_live = 0;
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && free_one(rng)) {
      std::uniform_int_distribution<std::size_t> pick{0, live.size() - 1};
      const std::size_t i = pick(rng);
      alloc.deallocate(live[i].offset, live[i].bytes);
      expected_live -= footprint(live[i].bytes);
      live[i] = live.back();
      live.pop_back();
    } else {
      const std::size_t bytes = size(rng);
      if (const auto offset = alloc.allocate(bytes)) {
        live.push_back({*offset, bytes});
        expected_live += footprint(bytes);
      }
    }
    REQUIRE(alloc.live_bytes() == expected_live);
  }
  check_disjoint(live, capacity);

  std::shuffle(live.begin(), live.end(), rng);
  for (const auto& r : live)
    alloc.deallocate(r.offset, r.bytes);
  CHECK(alloc.live_bytes() == 0);
  CHECK(alloc.allocate(capacity) == std::optional<uint64_t>{0});
}

TEST_CASE("a range past the high-water mark is reserved before it is handed out, once, and one "
          "that cannot be reserved is not handed out, saying why",
          "[ipc]") {
  std::vector<uint64_t> asked;
  bool room = true;
  ag::store_allocator alloc{4096, [&](uint64_t end) -> std::string {
                              asked.push_back(end);
                              return room ? std::string{} : "no room up to " + std::to_string(end);
                            }};
  const auto a = alloc.allocate(1000); // [0, 1024)
  REQUIRE(a == std::optional<uint64_t>{0});
  CHECK(asked == std::vector<uint64_t>{1024});
  const auto b = alloc.allocate(256); // [1024, 1280)
  REQUIRE(b == std::optional<uint64_t>{1024});
  CHECK(asked == std::vector<uint64_t>{1024, 1280});
  alloc.deallocate(*a, 1000);
  CHECK(alloc.allocate(512) == std::optional<uint64_t>{0}); // below the mark: asks nothing
  CHECK(asked.size() == 2);
  room = false;
  CHECK_FALSE(alloc.allocate(2048)); // would end at 3328
  CHECK(alloc.refusal() == "no room up to 3328");
  CHECK(alloc.live_bytes() == 768); // nothing of the refused range is held
  room = true;
  CHECK(alloc.allocate(2048) == std::optional<uint64_t>{1280});
  CHECK(alloc.refusal().empty());
}
