// The graph layer's public headers only: allowed.
#pragma once
#include "actorgraph/device.hpp"
