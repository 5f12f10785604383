// The model including an actor: the wrong way.
#include "actorgraph/device.hpp"
#include "actors/executor.hpp"
