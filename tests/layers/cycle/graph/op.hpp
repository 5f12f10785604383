// Part of a cycle: op.hpp -> tensor.hpp -> device.hpp -> op.hpp (tests/layers/check_includes_test.cmake).
#pragma once
#include "actorgraph/tensor.hpp"
