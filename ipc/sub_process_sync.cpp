#include "ipc/sub_process_sync.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/date_time/posix_time/posix_time_types.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <boost/interprocess/sync/interprocess_mutex.hpp>
#include <boost/interprocess/sync/scoped_lock.hpp>

#include "actorgraph/error.hpp"

namespace bip = boost::interprocess;

namespace ag {

namespace {

constexpr uint32_t block_magic = 0x41475359; // "AGSY"
constexpr uint32_t block_version = 3;
constexpr std::size_t max_error_bytes = 1024;
constexpr std::size_t max_driver_files_bytes = 1024;

struct block {
  uint32_t magic = block_magic;
  uint32_t version = block_version;
  bip::interprocess_mutex mutex; // guards the error and the arguments, never held while waiting
  // The two flags are atomics, read without the mutex: a waiter polls them, so that a peer
  // stopped (SIGSTOP) or killed at any point cannot hold it in a wait. (A condition variable
  // cannot: its waiter must take the mutex back, with no deadline, before it returns.)
  std::atomic<uint32_t> started{0};
  std::atomic<uint32_t> exit_requested{0};
  uint32_t error_size = 0;
  char error[max_error_bytes] = {};
  uint32_t driver_files_size = 0; // names, each ending in '\n'
  char driver_files[max_driver_files_bytes] = {};
  uint32_t args_size = 0;
  char args[sub_process_sync::max_args_bytes] = {};
};

// Locks and waits use absolute times on the clock Boost.Interprocess waits on.
boost::posix_time::ptime abs_in(std::chrono::milliseconds d) {
  return boost::posix_time::microsec_clock::universal_time()
         + boost::posix_time::milliseconds(d.count());
}

// Lock attempts never wait for long: a peer that died holding the mutex must not hang us.
constexpr std::chrono::milliseconds lock_timeout{1000};

// How often a wait looks at a flag.
constexpr std::chrono::milliseconds poll_interval{1};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "the flags are shared between processes");

// A segment this process inherited as a descriptor (its name already gone), for
// Boost.Interprocess to map as it maps a shared_memory_object.
using mapping_handle =
  decltype(std::declval<const bip::shared_memory_object&>().get_mapping_handle());
struct inherited_segment {
  int fd = -1;
  mapping_handle get_mapping_handle() const noexcept { return mapping_handle{fd, false}; }
};

} // namespace

struct sub_process_sync::impl {
  std::string name;
  bool owner = false;
  bip::shared_memory_object shm;
  bip::mapped_region region;
  block* b = nullptr;
  int inherited = -1; // the child's descriptor of it, closed with it

  // The block is never destroyed in place: removing the segment is all the clean-up the mutex
  // needs, whatever state a killed peer left it in.
  ~impl() {
    if (owner)
      bip::shared_memory_object::remove(name.c_str());
    region = bip::mapped_region{};
    if (inherited >= 0)
      ::close(inherited);
  }

  bip::scoped_lock<bip::interprocess_mutex> lock() const {
    bip::scoped_lock<bip::interprocess_mutex> l(b->mutex, abs_in(lock_timeout));
    if (!l.owns())
      throw error("start-up segment " + name + ": lock not acquired within "
                  + std::to_string(lock_timeout.count()) + " ms (its peer died holding it?)");
    return l;
  }
};

sub_process_sync::sub_process_sync() noexcept = default;
sub_process_sync::sub_process_sync(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
sub_process_sync::sub_process_sync(sub_process_sync&&) noexcept = default;
sub_process_sync& sub_process_sync::operator=(sub_process_sync&&) noexcept = default;
sub_process_sync::~sub_process_sync() = default;

const std::string& sub_process_sync::name() const noexcept { return impl_->name; }

void sub_process_sync::unlink_name() noexcept {
  if (!impl_ || !impl_->owner)
    return;
  impl_->owner = false; // removed: the destructor has nothing more to remove
  bip::shared_memory_object::remove(impl_->name.c_str());
}

std::size_t sub_process_sync::segment_bytes() noexcept { return sizeof(block); }

sub_process_sync sub_process_sync::create(const std::string& name, const std::vector<char>& args) {
  if (args.size() > max_args_bytes)
    throw error("start-up segment " + name + ": arguments of " + std::to_string(args.size())
                + " bytes exceed " + std::to_string(max_args_bytes));
  auto p = std::make_unique<impl>();
  p->name = name;
  try {
    bip::permissions perm;
    perm.set_permissions(0600);
    p->shm = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perm);
    p->owner = true;
    p->shm.truncate(sizeof(block));
    // Its pages now: a full /dev/shm is an error here, not SIGBUS at the first write below.
    if (const int err = ::posix_fallocate(p->shm.get_mapping_handle().handle, 0, sizeof(block));
        err != 0)
      throw error("start-up segment " + name + ": /dev/shm cannot hold its "
                  + std::to_string(sizeof(block)) + " bytes: " + std::strerror(err)
                  + "; enlarge /dev/shm (docker: --shm-size)");
    p->region = bip::mapped_region(p->shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw error("start-up segment " + name + ": cannot create: " + e.what());
  }
  p->b = new (p->region.get_address()) block;
  p->b->args_size = static_cast<uint32_t>(args.size());
  if (!args.empty()) // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(p->b->args, args.data(), args.size());
  return sub_process_sync{std::move(p)};
}

int sub_process_sync::fd() const noexcept {
  return impl_ ? static_cast<int>(impl_->shm.get_mapping_handle().handle) : -1;
}

sub_process_sync sub_process_sync::open_inherited(int fd) {
  auto p = std::make_unique<impl>();
  p->name = "on descriptor " + std::to_string(fd);
  p->inherited = fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw error("start-up segment " + p->name + ": " + std::strerror(errno));
  if (static_cast<std::size_t>(st.st_size) != sizeof(block))
    throw error("start-up segment " + p->name + ": holds " + std::to_string(st.st_size)
                + " bytes, not a segment of this version");
  ::fcntl(fd, F_SETFD, FD_CLOEXEC); // no further child of this one gets it
  try {
    p->region = bip::mapped_region(inherited_segment{fd}, bip::read_write, 0, sizeof(block));
  } catch (const bip::interprocess_exception& e) {
    throw error("start-up segment " + p->name + ": cannot map: " + e.what());
  }
  p->b = static_cast<block*>(p->region.get_address());
  if (p->b->magic != block_magic || p->b->version != block_version)
    throw error("start-up segment " + p->name + ": not a segment of this version");
  return sub_process_sync{std::move(p)};
}

sub_process_sync sub_process_sync::open(const std::string& name) {
  auto p = std::make_unique<impl>();
  p->name = name;
  try {
    p->shm = bip::shared_memory_object(bip::open_only, name.c_str(), bip::read_write);
    bip::offset_t size = 0;
    if (!p->shm.get_size(size) || static_cast<std::size_t>(size) != sizeof(block))
      throw error("start-up segment " + name + ": holds " + std::to_string(size)
                  + " bytes, not a segment of this version");
    p->region = bip::mapped_region(p->shm, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw error("start-up segment " + name + ": cannot open: " + e.what());
  }
  p->b = static_cast<block*>(p->region.get_address());
  if (p->b->magic != block_magic || p->b->version != block_version)
    throw error("start-up segment " + name + ": not a segment of this version");
  return sub_process_sync{std::move(p)};
}

std::vector<char> sub_process_sync::args() const {
  auto l = impl_->lock();
  const auto n = std::min<std::size_t>(impl_->b->args_size, max_args_bytes);
  return std::vector<char>(impl_->b->args, impl_->b->args + n);
}

void sub_process_sync::notify_started() { impl_->b->started.store(1, std::memory_order_release); }

void sub_process_sync::report_error(const std::string& what) noexcept {
  try {
    auto l = impl_->lock();
    const auto n = std::min(what.size(), max_error_bytes);
    std::memcpy(impl_->b->error, what.data(), n);
    impl_->b->error_size = static_cast<uint32_t>(n);
  } catch (...) {
    // Nothing to report it through: the controller still sees the exit status.
  }
}

bool sub_process_sync::wait_for_exit(std::chrono::milliseconds slice) {
  const auto until = std::chrono::steady_clock::now() + slice;
  while (impl_->b->exit_requested.load(std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(poll_interval);
  }
  return true;
}

bool sub_process_sync::wait_started(std::chrono::steady_clock::time_point deadline,
                                    const std::function<bool()>& alive) {
  while (impl_->b->started.load(std::memory_order_acquire) == 0) {
    if (!alive() || std::chrono::steady_clock::now() >= deadline)
      return impl_->b->started.load(std::memory_order_acquire) != 0;
    std::this_thread::sleep_for(poll_interval);
  }
  return true;
}

void sub_process_sync::notify_exit() noexcept {
  impl_->b->exit_requested.store(1, std::memory_order_release);
}

void sub_process_sync::record_driver_files(const std::vector<std::string>& names) noexcept {
  try {
    std::string text;
    for (const auto& n : names)
      if (text.size() + n.size() + 1 <= max_driver_files_bytes)
        text += n + '\n';
    auto l = impl_->lock();
    std::memcpy(impl_->b->driver_files, text.data(), text.size());
    impl_->b->driver_files_size = static_cast<uint32_t>(text.size());
  } catch (...) {
    // Not recorded: the clean-up by pid (ipc/leftovers.hpp) is what is left.
  }
}

std::vector<std::string> sub_process_sync::driver_files() const {
  auto l = impl_->lock();
  const auto n = std::min<std::size_t>(impl_->b->driver_files_size, max_driver_files_bytes);
  std::vector<std::string> names;
  std::string name;
  for (std::size_t i = 0; i < n; ++i) {
    if (impl_->b->driver_files[i] != '\n') {
      name += impl_->b->driver_files[i];
    } else if (!name.empty()) {
      names.push_back(std::move(name));
      name.clear();
    }
  }
  return names;
}

std::string sub_process_sync::child_error() const {
  auto l = impl_->lock();
  const auto n = std::min<std::size_t>(impl_->b->error_size, max_error_bytes);
  return std::string(impl_->b->error, n);
}

} // namespace ag
