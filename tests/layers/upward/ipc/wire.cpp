// ipc including cuda: beside it, not below it.
#include "actorgraph/device.hpp"
#include "cuda/kernel_stream.hpp"
