// Tests of ipc/tensor_store: bounds checks that cannot overflow, a shared store whose creator and
// opener see each other's writes, a shared-memory object (mode 0600) that goes with its creator
// only, however the stores are moved, and a store /dev/shm cannot back refused at creation rather
// than ending in SIGBUS.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/tensor_store.hpp"
#include "tests/actors/process_helpers.hpp"

using ag::tensor_store;
using ag::test::read_until_closed;

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

TEST_CASE("a shared store is refused exactly when it is larger than /dev/shm's free space, "
          "with both sizes and what to set",
          "[ipc]") {
  constexpr std::size_t mib = std::size_t{1} << 20;
  CHECK_FALSE(ag::shm_space_refusal("/s", 64 * mib, 64 * mib));
  CHECK_FALSE(ag::shm_space_refusal("/s", 1, 64 * mib));
  CHECK(ag::shm_space_refusal("/s", 64 * mib + 1, 64 * mib));
  CHECK(ag::shm_space_refusal("/s", 1, 0));
  const auto why = ag::shm_space_refusal("/ag-1-actorgraph-0123456789abcdef-store", 1024 * mib,
                                         64 * mib);
  REQUIRE(why);
  CHECK(*why
        == "tensor store /ag-1-actorgraph-0123456789abcdef-store: 1073741824 bytes asked but "
           "/dev/shm has only 67108864 bytes free; set graph_option::store_bytes lower or enlarge "
           "/dev/shm (docker: --shm-size)");
}

TEST_CASE("a shared store larger than /dev/shm's free space is refused and leaves nothing",
          "[ipc]") {
  struct statvfs vfs {};
  REQUIRE(::statvfs("/dev/shm", &vfs) == 0);
  if (vfs.f_blocks == 0) {
    WARN("skipped: /dev/shm has no size limit, so no store is too large for it");
    return;
  }
  const uint64_t free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  // Sparse, so without the check this would be created and fail only at the first write past the
  // free space, with SIGBUS.
  const std::size_t asked = static_cast<std::size_t>(free_bytes) + (std::size_t{64} << 20);
  const auto name = unique_name();
  CHECK_THROWS_WITH(tensor_store::create_shared(name, asked),
                    Catch::Contains(name) && Catch::Contains(std::to_string(asked) + " bytes asked")
                      && Catch::Contains("graph_option::store_bytes"));
  CHECK_FALSE(exists(shm_path(name)));
}

namespace {

constexpr int child_skipped = 77;

// Runs in a forked child that touches neither CAF nor CUDA: a private mount namespace with a
// 16 MiB tmpfs on /dev/shm, where a 64 MiB store must be refused with ag::error and a 4 MiB one
// must be writable to its last byte. Writes what it saw to `out` and exits 0 (as expected), 1
// (not as expected) or child_skipped (no way to mount: not root, or no unshare).
void small_dev_shm_child(int out, const std::string& name) {
  auto finish = [&](int code, const std::string& text) {
    (void)!::write(out, text.data(), text.size());
    ::_exit(code);
  };
  if (::geteuid() != 0)
    finish(child_skipped, "not root: mounting a tmpfs on /dev/shm needs root");
  if (::unshare(CLONE_NEWNS) != 0)
    finish(child_skipped, std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno));
  // Private first, so that the small tmpfs never shows in the test's own /dev/shm.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    finish(child_skipped, std::string{"making / private: "} + std::strerror(errno));
  if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777") != 0)
    finish(child_skipped, std::string{"mounting a 16 MiB tmpfs: "} + std::strerror(errno));
  std::string refusal;
  try {
    auto s = tensor_store::create_shared(name, std::size_t{64} << 20);
    finish(1, "a 64 MiB store was created in a 16 MiB /dev/shm");
  } catch (const ag::error& e) {
    refusal = e.what();
  }
  struct stat st {};
  if (::stat(shm_path(name).c_str(), &st) == 0)
    finish(1, "the refused store was left in /dev/shm");
  try {
    const std::size_t size = std::size_t{4} << 20;
    auto s = tensor_store::create_shared(name, size);
    std::memset(s.base(), 0xa5, size);
    for (std::size_t i = 0; i < size; ++i)
      if (s.base()[i] != std::byte{0xa5})
        finish(1, "byte " + std::to_string(i) + " of the 4 MiB store did not keep its value");
  } catch (const ag::error& e) {
    finish(1, std::string{"a 4 MiB store failed: "} + e.what());
  }
  if (::stat(shm_path(name).c_str(), &st) == 0)
    finish(1, "the 4 MiB store was left in /dev/shm");
  finish(0, refusal);
}

} // namespace

TEST_CASE("in a 16 MiB /dev/shm a 64 MiB store is an error, not SIGBUS, and a 4 MiB store is "
          "writable to its last byte",
          "[ipc]") {
  using namespace std::chrono;
  const auto name = unique_name();
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::signal(SIGBUS, SIG_DFL); // die of it, without Catch's report in the child
    small_dev_shm_child(pipe_fds[1], name);
    ::_exit(1); // it ends with _exit of its own
  }
  ::close(pipe_fds[1]);
  // Read until the child closes its end, then reap it; 20 s in all, then it is killed.
  const auto deadline = steady_clock::now() + 20s;
  const std::string text = read_until_closed(pipe_fds[0], deadline);
  ::close(pipe_fds[0]);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 && steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  if (reaped == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("the child did not finish within 20 s");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == child_skipped) {
    WARN("skipped: cannot mount a small tmpfs on /dev/shm here (" << text << ")");
    return;
  }
  INFO("the child " << (WIFSIGNALED(status) ? "was killed by signal " : "exited with code ")
                    << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)) << ": "
                    << text);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK(text
        == "tensor store " + name + ": 67108864 bytes asked but /dev/shm has only 16777216 bytes "
           "free; set graph_option::store_bytes lower or enlarge /dev/shm (docker: --shm-size)");
  CHECK_FALSE(exists(shm_path(name)));
}

namespace {

// Bytes /dev/shm backs of shared object `name` (its pages reserved or written).
uint64_t backed_bytes(const std::string& name) {
  struct stat st {};
  return ::stat(shm_path(name).c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
}

} // namespace

TEST_CASE("a store reserved on demand has its pages reserved in steps up to what is asked, never "
          "past its size, and one reserved whole has them all at creation",
          "[ipc]") {
  constexpr uint64_t mib = uint64_t{1} << 20;
  const auto step = tensor_store::reserve_step;
  {
    const auto name = unique_name();
    auto s = tensor_store::create_shared(name, 3 * step + mib);
    CHECK(backed_bytes(name) == 0);
    CHECK(s.reserve_to(1).empty());
    CHECK(backed_bytes(name) >= step);
    CHECK(backed_bytes(name) < 2 * step);
    CHECK(s.reserve_to(step + 1).empty());
    CHECK(backed_bytes(name) >= 2 * step);
    CHECK(s.reserve_to(uint64_t{1} << 40).empty()); // capped at the store's size
    CHECK(backed_bytes(name) >= 3 * step + mib);
    CHECK(backed_bytes(name) < 4 * step + mib);
  }
  {
    const auto name = unique_name();
    auto s = tensor_store::create_shared(name, 2 * mib, tensor_store::pages::all);
    CHECK(backed_bytes(name) >= 2 * mib);
    CHECK(s.reserve_to(2 * mib).empty());
  }
  // A mapped (child side) or anonymous store has nothing to reserve.
  auto anon = tensor_store::anonymous(8 * mib);
  CHECK(anon.reserve_to(8 * mib).empty());
}
