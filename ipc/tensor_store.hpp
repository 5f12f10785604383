// tensor_store: the host memory that cpu tensors and the host half of every move live in, addressed
// by byte offsets so that every process can map it at its own address. kMemory (this process's
// anonymous memory, thread mode) or kFile (a POSIX shared-memory object every process maps,
// process mode). Only the controller allocates, through store_allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

namespace ag {

class tensor_store {
public:
  // kMemory: reserves `bytes` of address space; pages are touched only as tensors are written.
  static tensor_store anonymous(std::size_t bytes);

  // How a shared object's pages are reserved in /dev/shm (tmpfs backs a page only once written,
  // and a write that finds no room there ends the program with SIGBUS).
  enum class pages {
    on_demand, // sparse: reserve_to() reserves them as offsets are handed out
    all,       // every page reserved at creation (small objects that are used whole)
  };

  // kFile, controller side: creates the shared-memory object `name` ("/ag-...", mode 0600, must
  // not exist) of `bytes` bytes and maps it; the object is unlinked when this store is destroyed.
  // Refuses (ag::error, see shm_space_refusal) an object larger than /dev/shm has free, and with
  // pages::all one whose pages /dev/shm cannot give now.
  static tensor_store create_shared(const std::string& name, std::size_t bytes,
                                    pages reserve = pages::on_demand);

  // kFile, child side: maps the existing object `name`, which must hold exactly `bytes` bytes.
  static tensor_store open_shared(const std::string& name, std::size_t bytes);
  // kFile, child side: maps the object it inherited as descriptor `fd` (its creator's fd(), its
  // name already gone), which must hold exactly `bytes` bytes; `name` names it in errors. The
  // descriptor is closed once mapped.
  static tensor_store open_inherited(int fd, std::size_t bytes, const std::string& name);

  tensor_store() noexcept = default;
  tensor_store(tensor_store&& other) noexcept;
  tensor_store& operator=(tensor_store&& other) noexcept;
  ~tensor_store();

  std::byte* base() const noexcept { return base_; }
  // The shared-memory object's name; empty for kMemory.
  const std::string& name() const noexcept { return name_; }
  // The creator's descriptor of the object (close-on-exec), which its children inherit
  // (sub_process::spawn) once its name is gone (unlink()); -1 for kMemory and a mapped store.
  int fd() const noexcept { return fd_; }
  std::size_t size() const noexcept { return size_; }

  // Reserves the pages of [0, end) in /dev/shm (in steps of reserve_step, at most size()), so that
  // no write below `end` can find them missing; empty when they are, otherwise why not (/dev/shm
  // full). kMemory and mapped (child side) stores have nothing to reserve.
  std::string reserve_to(uint64_t end);
  static constexpr uint64_t reserve_step = uint64_t{4} << 20;

  // Removes the shared-memory object's name now (a creator's store): what maps it keeps it until
  // unmapped, nothing else can open it. Nothing for kMemory or a mapped store.
  void unlink() noexcept;

  // True when [offset, offset + bytes) lies inside the store.
  bool contains(std::size_t offset, std::size_t bytes) const noexcept {
    return offset <= size_ && bytes <= size_ - offset;
  }

private:
  tensor_store(std::byte* base, std::size_t size, std::string name = {}, bool owner = false,
               int fd = -1) noexcept
    : base_(base), size_(size), name_(std::move(name)), owner_(owner), fd_(fd) {}

  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::string name_;
  bool owner_ = false; // unlinks name_ when destroyed
  int fd_ = -1;        // the creator's descriptor
  uint64_t reserved_ = 0;
};

static_assert(std::is_nothrow_move_constructible_v<tensor_store>);

// Why a shared store `name` of `bytes` bytes cannot be created when the file system of /dev/shm
// has `free_bytes` free (statvfs: f_bavail * f_frsize), or nullopt when it fits. The message says
// what was asked, what is free and what to change.
std::optional<std::string> shm_space_refusal(const std::string& name, std::size_t bytes,
                                             std::uint64_t free_bytes);

} // namespace ag
