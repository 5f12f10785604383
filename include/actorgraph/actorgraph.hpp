// actorgraph: eager tensor operators on several devices from one controller, on CAF actors.
#pragma once

#include "actorgraph/collectives.hpp"
#include "actorgraph/device.hpp"
#include "actorgraph/error.hpp"
#include "actorgraph/graph_option.hpp"
#include "actorgraph/interrupt.hpp"
#include "actorgraph/node.hpp"
#include "actorgraph/ops.hpp"
#include "actorgraph/runtime.hpp"
#include "actorgraph/stop_signals.hpp"
#include "actorgraph/tensor.hpp"
