// The launchers rows.cu hands the normalisations to (softmax_norm.cu), per value dtype (float32,
// float16, bfloat16). For the .cu files only.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/row_call.hpp"

namespace ag::cuda {

// softmax and log_softmax over k of [m, k, n].
template <dtype T>
void launch_softmax(const row_call& c, cudaStream_t stream);
// layer_norm and rms_norm over rows of k.
template <dtype T>
void launch_norm(const row_call& c, cudaStream_t stream);

} // namespace ag::cuda
