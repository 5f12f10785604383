// A public header of the graph layer including one of the actors layer: the wrong way.
#pragma once
#include "actorgraph/runtime.hpp"
