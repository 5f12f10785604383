// Includes a file of the cycle without being part of it.
#include "actorgraph/device.hpp"
