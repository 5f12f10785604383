// Its own layer: allowed.
#include "actors/executor.hpp"
