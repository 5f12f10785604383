// Stop signals: makes SIGINT, SIGTERM, SIGHUP and SIGQUIT end the program without leaving children
// or shared memory behind (as a user's Ctrl-C or `kill PID` would otherwise, until the next runtime
// cleans up after dead ones). The handler kills every runtime's children and removes their shared
// memory, sockets and runtime directories; then the signal does what it did before.
// Opt-in: a library does not take signals from an application that did not ask.
#pragma once

namespace ag {

// Installs the handlers (once; later calls do nothing), for each of the four signals as it was:
// - ignored (SIG_IGN; SIGHUP under nohup, SIGINT in a background job): left ignored, untouched;
// - default (SIG_DFL): after the clean-up, the signal ends the program as it would have;
// - the application's handler (plain or SA_SIGINFO), installed before this call: called after the
//   clean-up, with its own mask; if it returns, the program goes on (and its runtimes' children
//   are gone, so their later waits fail naming them).
// A handler the application installs after this call replaces the clean-up for that signal.
void install_stop_signals();

} // namespace ag
