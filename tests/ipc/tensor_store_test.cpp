// Tests of ipc/tensor_store: bounds checks that cannot overflow, a shared store whose creator and
// opener see each other's writes, and a shared-memory object (mode 0600) that goes with its
// creator only, however the stores are moved.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/tensor_store.hpp"

using ag::tensor_store;

namespace {

constexpr std::size_t max = std::numeric_limits<std::size_t>::max();

// "/ag-test-<pid>-store-<n>": a name no other test run uses.
std::string unique_name() {
  static std::atomic<int> counter{0};
  return "/ag-test-" + std::to_string(::getpid()) + "-store-" + std::to_string(++counter);
}

std::string shm_path(const std::string& name) { return "/dev/shm" + name; }

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void put(const tensor_store& s, std::size_t offset, uint64_t value) {
  std::memcpy(s.base() + offset, &value, sizeof value);
}

uint64_t get(const tensor_store& s, std::size_t offset) {
  uint64_t value;
  std::memcpy(&value, s.base() + offset, sizeof value);
  return value;
}

} // namespace

TEST_CASE("an anonymous store has its size, no name and zeroed writable memory", "[ipc]") {
  const std::size_t size = 1 << 20;
  auto s = tensor_store::anonymous(size);
  REQUIRE(s.base() != nullptr);
  CHECK(s.size() == size);
  CHECK(s.name().empty());
  CHECK(get(s, 0) == 0);
  CHECK(get(s, size - 8) == 0);
  put(s, 0, 11);
  put(s, size - 8, 22);
  CHECK(get(s, 0) == 11);
  CHECK(get(s, size - 8) == 22);
}

TEST_CASE("a large anonymous store only reserves address space", "[ipc]") {
  auto s = tensor_store::anonymous(std::size_t{64} << 30);
  CHECK(s.size() == std::size_t{64} << 30);
  put(s, s.size() - 8, 5);
  CHECK(get(s, s.size() - 8) == 5);
}

TEST_CASE("a store of zero bytes is an error", "[ipc]") {
  CHECK_THROWS_AS(tensor_store::anonymous(0), ag::error);
  const auto name = unique_name();
  CHECK_THROWS_WITH(tensor_store::create_shared(name, 0), Catch::Contains(name));
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("contains accepts exactly the ranges inside the store", "[ipc]") {
  auto s = tensor_store::anonymous(4096);
  CHECK(s.contains(0, 4096));
  CHECK(s.contains(0, 0));
  CHECK(s.contains(4095, 1));
  CHECK(s.contains(4096, 0));
  CHECK(s.contains(1000, 3096));
  CHECK_FALSE(s.contains(0, 4097));
  CHECK_FALSE(s.contains(1, 4096));
  CHECK_FALSE(s.contains(4096, 1));
  CHECK_FALSE(s.contains(4097, 0));
  CHECK_FALSE(s.contains(1000, 3097));
}

TEST_CASE("contains does not overflow near SIZE_MAX", "[ipc]") {
  auto s = tensor_store::anonymous(4096);
  CHECK_FALSE(s.contains(max, 0));
  CHECK_FALSE(s.contains(max, 1));
  CHECK_FALSE(s.contains(max, max));
  CHECK_FALSE(s.contains(1, max));
  CHECK_FALSE(s.contains(0, max));
  CHECK_FALSE(s.contains(4096, max));
  CHECK_FALSE(s.contains(8, max - 7)); // offset + bytes wraps to 1
  CHECK_FALSE(s.contains(max - 7, 8)); // wraps to 0
}

TEST_CASE("an empty store contains only the empty range at 0", "[ipc]") {
  tensor_store s;
  CHECK(s.base() == nullptr);
  CHECK(s.size() == 0);
  CHECK(s.contains(0, 0));
  CHECK_FALSE(s.contains(0, 1));
  CHECK_FALSE(s.contains(1, 0));
  CHECK_FALSE(s.contains(max, max));
}

TEST_CASE("a creator and an opener of a shared store see each other's writes", "[ipc]") {
  const auto name = unique_name();
  const std::size_t size = 1 << 20;
  auto creator = tensor_store::create_shared(name, size);
  auto opener = tensor_store::open_shared(name, size);
  CHECK(creator.name() == name);
  CHECK(opener.name() == name);
  CHECK(creator.size() == size);
  CHECK(opener.size() == size);
  put(creator, 256, 0x1234);
  put(opener, size - 8, 0x5678);
  CHECK(get(opener, 256) == 0x1234);
  CHECK(get(creator, size - 8) == 0x5678);
}

TEST_CASE("opening a shared store with the wrong size is an error naming it", "[ipc]") {
  const auto name = unique_name();
  auto creator = tensor_store::create_shared(name, 8192);
  CHECK_THROWS_WITH(tensor_store::open_shared(name, 4096),
                    Catch::Contains(name) && Catch::Contains("holds 8192 bytes")
                      && Catch::Contains("expected 4096"));
  CHECK_THROWS_WITH(tensor_store::open_shared(name, 8193), Catch::Contains(name));
  CHECK(exists(shm_path(name)));
}

TEST_CASE("opening a missing shared store is an error naming it", "[ipc]") {
  const auto name = unique_name();
  CHECK_THROWS_WITH(tensor_store::open_shared(name, 4096),
                    Catch::Contains(name) && Catch::Contains("cannot open"));
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("creating a shared store whose name exists is an error that leaves it intact", "[ipc]") {
  const auto name = unique_name();
  auto first = tensor_store::create_shared(name, 4096);
  put(first, 0, 99);
  CHECK_THROWS_WITH(tensor_store::create_shared(name, 4096),
                    Catch::Contains(name) && Catch::Contains("cannot create"));
  CHECK(exists(shm_path(name)));
  auto opener = tensor_store::open_shared(name, 4096);
  CHECK(get(opener, 0) == 99);
}

TEST_CASE("a shared store has mode 0600 and goes with its creator, not its opener", "[ipc]") {
  const auto name = unique_name();
  {
    auto creator = tensor_store::create_shared(name, 4096);
    struct stat st {};
    REQUIRE(::stat(shm_path(name).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_size == 4096);
    { auto opener = tensor_store::open_shared(name, 4096); }
    CHECK(exists(shm_path(name)));
    { auto again = tensor_store::open_shared(name, 4096); }
    CHECK(exists(shm_path(name)));
  }
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("an opener keeps its mapping after the creator unlinked the object", "[ipc]") {
  const auto name = unique_name();
  auto creator = tensor_store::create_shared(name, 4096);
  auto opener = tensor_store::open_shared(name, 4096);
  put(creator, 8, 7);
  creator = tensor_store{};
  CHECK_FALSE(exists(shm_path(name)));
  CHECK(get(opener, 8) == 7);
}

TEST_CASE("move construction transfers ownership of a shared store", "[ipc]") {
  const auto name = unique_name();
  {
    auto creator = tensor_store::create_shared(name, 4096);
    auto* base = creator.base();
    put(creator, 0, 42);
    tensor_store moved{std::move(creator)};
    CHECK(creator.base() == nullptr);
    CHECK(creator.size() == 0);
    CHECK(moved.base() == base);
    CHECK(moved.size() == 4096);
    CHECK(moved.name() == name);
    { tensor_store dropped{std::move(creator)}; } // the moved-from store unlinks nothing
    CHECK(exists(shm_path(name)));
    CHECK(get(moved, 0) == 42);
  }
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("move assignment transfers ownership and releases what the target held", "[ipc]") {
  const auto first = unique_name();
  const auto second = unique_name();
  {
    auto a = tensor_store::create_shared(first, 4096);
    auto b = tensor_store::create_shared(second, 8192);
    a = std::move(b);
    CHECK_FALSE(exists(shm_path(first)));
    CHECK(exists(shm_path(second)));
    CHECK(a.name() == second);
    CHECK(a.size() == 8192);
    CHECK(b.base() == nullptr);
    b = tensor_store{}; // the moved-from store unlinks nothing
    CHECK(exists(shm_path(second)));
    a = std::move(a); // self-assignment keeps it
    CHECK(exists(shm_path(second)));
    CHECK(a.size() == 8192);
  }
  CHECK_FALSE(exists(shm_path(second)));
}
