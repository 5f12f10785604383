// Stop signals: makes SIGINT, SIGTERM and SIGHUP end the program without leaving children or
// shared memory behind (as a user's Ctrl-C or `kill PID` would otherwise, until the next runtime
// cleans up after dead ones). The handler kills every runtime's children, removes their shared
// memory, sockets and runtime directories, then lets the signal end the program as it would have.
// Opt-in: a library does not take signals from an application that did not ask.
#pragma once

namespace ag {

// Installs the handlers (once; later calls do nothing). Handlers the application installed
// before are replaced for these three signals.
void install_stop_signals();

} // namespace ag
