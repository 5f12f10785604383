// Compiled with the graph layer's include root alone (compile_upward_test.cmake): it compiles, and
// with AG_INCLUDE_UPWARD it must not, since the graph layer cannot see the actors.
#include "graph/op.hpp"

#ifdef AG_INCLUDE_UPWARD
#include "actors/executor.hpp"
#endif
