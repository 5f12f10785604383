#include "actorgraph/stop_signals.hpp"

#include <csignal>
#include <mutex>

#include "ipc/cleanup_registry.hpp"

namespace ag {

namespace {

extern "C" void on_stop_signal(int sig) {
  cleanup::run();
  // End the program as the signal would have: default action, signal raised again.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

} // namespace

void install_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      ::sigaction(sig, &sa, nullptr);
  });
}

} // namespace ag
