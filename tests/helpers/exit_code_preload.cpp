// Preloaded into an ag-runner by a test: whatever the program's own exit code, the process ends
// with code 7 as it exits, so that a child's non-zero exit at an orderly shutdown can be checked.
#include <unistd.h>

__attribute__((destructor)) static void exit_with_seven() { ::_exit(7); }
