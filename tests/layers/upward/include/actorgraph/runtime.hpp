// A public header of the actors layer.
#pragma once
#include "actorgraph/device.hpp"
