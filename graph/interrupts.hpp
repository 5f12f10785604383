// What a wait on the user's thread asks of actorgraph/interrupt.hpp: whether its thread is inside
// an interrupt_scope, and the check itself.
#pragma once

#include <chrono>
#include <string>

#include "actorgraph/interrupt.hpp"

namespace ag::detail {

// True when the calling thread is inside an interrupt_scope.
bool interruptible() noexcept;

// Throws ag::interrupted ("<what>: interrupted") when the calling thread's scope's check says so.
void check_interrupt(const std::string& what);

// The deadline of one slice of a wait until `deadline`: interrupt_period from now, or the
// deadline itself when the thread is not interruptible or the deadline comes first.
std::chrono::steady_clock::time_point slice_end(std::chrono::steady_clock::time_point deadline);

} // namespace ag::detail
