// Collectives: one operator over a group of devices (data-parallel gradients, tensor-parallel
// layers). Each takes its inputs from distinct devices of one runtime (the cpu counts as one) and
// returns ordinary tensors, in the order of the inputs (broadcast: of `to`), usable in further
// operators at once: the runtime orders them after what produced their inputs, and later
// operators after them, with no sync by the user. Tensors are float32; sums add the parts in
// their order.
//
// A shape, dtype, device or runtime mismatch, an empty group, a device named twice or one the
// runtime does not have throws ag::error at the call, naming what was wrong. A device that fails
// inside a collective fails it on every participant: every result reads as an error naming that
// device (ag::error from to_vector, and from the next sync), and no participant waits for it.
#pragma once

#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/tensor.hpp"

namespace ag {

// Result i, on the device of parts[i]: the elementwise sum of every part. Parts: same shape.
std::vector<tensor> all_reduce(const std::vector<tensor>& parts);

// Result i, on to[i]: a copy of t (t itself where to[i] is t's device, as t.to() does).
std::vector<tensor> broadcast(const tensor& t, const std::vector<device>& to);

// Result i, on the device of parts[i]: every part, concatenated along dim 0 in order (parts of
// shape [d0, ...] give [parts.size() * d0, ...]). Parts: same shape, at least one dimension.
std::vector<tensor> all_gather(const std::vector<tensor>& parts);

// Result i, on the device of parts[i]: block i of the sum of the parts, cut along dim 0 into
// parts.size() blocks (parts of shape [d0, ...] give [d0 / parts.size(), ...]). Parts: same shape,
// at least one dimension, d0 divisible by parts.size().
std::vector<tensor> reduce_scatter(const std::vector<tensor>& parts);

} // namespace ag
