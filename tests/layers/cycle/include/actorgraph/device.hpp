// Part of a cycle: op.hpp -> tensor.hpp -> device.hpp -> op.hpp.
#pragma once
#include "graph/op.hpp"
