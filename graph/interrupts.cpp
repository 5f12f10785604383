#include "graph/interrupts.hpp"

namespace ag {

namespace {

thread_local const interrupt_scope* current = nullptr;

} // namespace

struct interrupt_access {
  static bool check(const interrupt_scope& s) { return s.check_ && s.check_(s.context_); }
};

interrupt_scope::interrupt_scope(bool (*check)(void*), void* context) noexcept
  : check_(check), context_(context), outer_(current) {
  current = this;
}

interrupt_scope::~interrupt_scope() { current = outer_; }

namespace detail {

bool interruptible() noexcept { return current != nullptr; }

void check_interrupt(const std::string& what) {
  if (current && interrupt_access::check(*current))
    throw interrupted(what + ": interrupted");
}

std::chrono::steady_clock::time_point slice_end(std::chrono::steady_clock::time_point deadline) {
  if (!current)
    return deadline;
  const auto now = std::chrono::steady_clock::now();
  return deadline - now > interrupt_period ? now + interrupt_period : deadline;
}

} // namespace detail

} // namespace ag
