// Every layer below: allowed.
#pragma once
#include "actorgraph/runtime.hpp"
#include "cuda/kernel_stream.hpp"
