// The order in which threads of one process hand store ranges to each other, stated so that
// ThreadSanitizer sees it. A range is written by one thread (the executor storing an upload, a
// runner's stream copying a result) and read or reused by another only after a CAF message says
// so; CAF's mailboxes order that, but Debian's CAF is not instrumented, so TSan would see the
// reuse of a freed range as a race on the store. One release before a hand-over message is sent
// and one acquire after it is received say the same thing in atomics, which TSan follows. (They
// cost an atomic add per batch or acknowledgement, and nothing on x86 for the acquire.)
#pragma once

#include <atomic>
#include <cstdint>

namespace ag::store_fence {

inline std::atomic<uint64_t> fence{0};

// Before a message that hands store ranges (or what a runner did with them) to another thread.
inline void release() noexcept { fence.fetch_add(1, std::memory_order_release); }

// After receiving such a message, before touching the ranges it speaks of.
inline void acquire() noexcept { (void)fence.load(std::memory_order_acquire); }

} // namespace ag::store_fence
