#include "ipc/tensor_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <new>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "actorgraph/error.hpp"

namespace ag {

tensor_store tensor_store::anonymous(std::size_t bytes) {
  if (bytes == 0)
    throw error("tensor store: size must be positive");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw error("tensor store: cannot reserve " + std::to_string(bytes)
                + " bytes: " + std::strerror(errno));
  return tensor_store{static_cast<std::byte*>(p), bytes};
}

namespace {

// Maps the object; closes fd unless `keep` (then the caller owns it, also on failure).
std::byte* map_shared(int fd, std::size_t bytes, const std::string& name, bool keep = false) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int saved = errno;
  if (!keep)
    ::close(fd);
  if (p == MAP_FAILED)
    throw error("tensor store " + name + ": cannot map " + std::to_string(bytes)
                + " bytes: " + std::strerror(saved));
  return static_cast<std::byte*>(p);
}

// Free bytes of the file system behind POSIX shared memory; nullopt when it has no size limit
// (a tmpfs mounted with size=0 reports no blocks at all) or cannot be asked.
std::optional<uint64_t> shm_free_bytes() {
  struct statvfs vfs {};
  if (::statvfs("/dev/shm", &vfs) != 0 || vfs.f_blocks == 0)
    return std::nullopt;
  return uint64_t{vfs.f_bavail} * uint64_t{vfs.f_frsize};
}

} // namespace

std::optional<std::string> shm_space_refusal(const std::string& name, std::size_t bytes,
                                             uint64_t free_bytes) {
  if (bytes <= free_bytes)
    return std::nullopt;
  return "tensor store " + name + ": " + std::to_string(bytes) + " bytes asked but /dev/shm has only "
         + std::to_string(free_bytes) + " bytes free; set graph_option::store_bytes lower or "
         "enlarge /dev/shm (docker: --shm-size)";
}

tensor_store tensor_store::create_shared(const std::string& name, std::size_t bytes,
                                         pages reserve) {
  if (bytes == 0)
    throw error("tensor store " + name + ": size must be positive");
  // A sparse object larger than /dev/shm's free space is created without complaint, and the first
  // write past the limit kills the program with SIGBUS (Docker gives a container 64 MiB).
  // posix_fallocate turns that into an error, but on tmpfs it commits the pages it reserves: the
  // default 1 GiB store reserved whole would cost 1 GiB of memory before the first tensor. So a
  // store is refused when it does not fit the free space now, and its pages are reserved as
  // the allocator first hands them out (reserve_to); small objects used whole are reserved now.
  if (const auto free_bytes = shm_free_bytes())
    if (auto why = shm_space_refusal(name, bytes, *free_bytes))
      throw error(*why);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw error("tensor store " + name + ": cannot create: " + std::strerror(errno));
  // A sparse object: tmpfs backs pages only as tensors are written.
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int saved = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw error("tensor store " + name + ": cannot size to " + std::to_string(bytes)
                + " bytes: " + std::strerror(saved));
  }
  if (reserve == pages::all) {
    if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
      ::close(fd);
      ::shm_unlink(name.c_str());
      throw error("tensor store " + name + ": /dev/shm cannot hold its " + std::to_string(bytes)
                  + " bytes: " + std::strerror(err) + "; enlarge /dev/shm (docker: --shm-size)");
    }
  }
  const bool all = reserve == pages::all;
  try {
    tensor_store s{map_shared(fd, bytes, name, true), bytes, name, true, fd};
    s.reserved_ = all ? bytes : 0;
    return s;
  } catch (...) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw;
  }
}

std::string tensor_store::reserve_to(uint64_t end) {
  if (fd_ < 0 || end <= reserved_)
    return {};
  const uint64_t to = std::min<uint64_t>(size_, (end + reserve_step - 1) / reserve_step * reserve_step);
  const int err = ::posix_fallocate(fd_, static_cast<off_t>(reserved_),
                                    static_cast<off_t>(to - reserved_));
  if (err != 0)
    return "/dev/shm cannot hold the store's pages up to byte " + std::to_string(to) + " ("
           + std::strerror(err) + "): other programs use the space it had at start-up; free "
           "/dev/shm or enlarge it (docker: --shm-size)";
  reserved_ = to;
  return {};
}

tensor_store tensor_store::open_shared(const std::string& name, std::size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    throw error("tensor store " + name + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) {
    ::close(fd);
    throw error("tensor store " + name + ": holds " + std::to_string(st.st_size)
                + " bytes, expected " + std::to_string(bytes));
  }
  return tensor_store{map_shared(fd, bytes, name), bytes, name, false};
}

tensor_store tensor_store::open_inherited(int fd, std::size_t bytes, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw error("tensor store " + name + " (descriptor " + std::to_string(fd)
                + "): " + std::strerror(errno));
  if (static_cast<std::size_t>(st.st_size) != bytes)
    throw error("tensor store " + name + " (descriptor " + std::to_string(fd) + "): holds "
                + std::to_string(st.st_size) + " bytes, expected " + std::to_string(bytes));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC); // no child of this process gets it
  auto* base = map_shared(fd, bytes, name, true);
  ::close(fd); // the mapping keeps the object
  return tensor_store{base, bytes, name, false};
}

tensor_store::tensor_store(tensor_store&& other) noexcept
  : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)),
    name_(std::move(other.name_)), owner_(std::exchange(other.owner_, false)),
    fd_(std::exchange(other.fd_, -1)), reserved_(std::exchange(other.reserved_, 0)) {}

tensor_store& tensor_store::operator=(tensor_store&& other) noexcept {
  if (this != &other) {
    this->~tensor_store();
    new (this) tensor_store(std::move(other));
  }
  return *this;
}

void tensor_store::unlink() noexcept {
  if (owner_)
    ::shm_unlink(name_.c_str());
  owner_ = false;
}

tensor_store::~tensor_store() {
  if (base_ != nullptr)
    ::munmap(base_, size_);
  if (fd_ >= 0)
    ::close(fd_);
  if (owner_)
    ::shm_unlink(name_.c_str());
}

} // namespace ag
