#include "actorgraph/stop_signals.hpp"

#include <cerrno>
#include <csignal>
#include <mutex>

#include <signal.h>

#include "ipc/cleanup_registry.hpp"

namespace ag {

namespace {

constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// What each signal did before install_stop_signals(); written once, before our handler is
// installed for that signal, and only read by the handler.
struct sigaction previous[NSIG];

extern "C" void on_stop_signal(int sig, siginfo_t* info, void* context) {
  // The interrupted code may be about to read errno: what the clean-up's calls set is undone.
  const int saved_errno = errno;
  struct errno_restorer {
    int value;
    ~errno_restorer() { errno = value; }
  } restore{saved_errno};
  cleanup::run();
  const struct sigaction& before = previous[sig];
  // sa_handler and sa_sigaction share storage: SIG_DFL reads the same through either, whatever
  // the flags say.
  if (before.sa_handler != SIG_DFL) {
    // The application's handler decides what happens next: if it returns, the program goes on
    // (its children and shared memory are gone; a runtime's later waits fail naming them).
    sigset_t saved;
    ::pthread_sigmask(SIG_BLOCK, &before.sa_mask, &saved);
    if (before.sa_flags & SA_SIGINFO)
      before.sa_sigaction(sig, info, context);
    else
      before.sa_handler(sig);
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    return;
  }
  // End the program as the signal would have: default action, signal raised again (it is blocked
  // while this handler runs, so it arrives as the handler returns).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

} // namespace

void install_stop_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : stop_signals) {
      struct sigaction before {};
      if (::sigaction(sig, nullptr, &before) != 0)
        continue;
      // Ignored (SIGHUP under nohup, SIGINT in a background job, or by the application's choice):
      // it stays ignored.
      if (before.sa_handler == SIG_IGN)
        continue;
      previous[sig] = before;
      struct sigaction ours {};
      ours.sa_sigaction = on_stop_signal;
      // Interrupted system calls restart if they did under the application's handler.
      ours.sa_flags = SA_SIGINFO | (before.sa_flags & SA_RESTART);
      sigemptyset(&ours.sa_mask);
      ::sigaction(sig, &ours, nullptr);
    }
  });
}

} // namespace ag
