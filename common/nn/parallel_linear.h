/// \file
/// \brief The linear layer's GEMMs split over the OpenMP threads, each thread calling
/// single-threaded OpenBLAS on its band of rows.
///
/// Why: Debian's OpenBLAS runs its own pthread pool. Alternating OpenBLAS calls with OpenMP
/// kernels leaves two pools of busy-waiting threads fighting for the same cores (measured: more
/// than half of a gpt2-tiny step spent spinning in libgomp on 2 cores). With one OpenMP pool that
/// owns every core and OpenBLAS pinned to one thread (set by Runtime), the GEMMs stay large (a
/// few bands, fixed by the shape so that the bits do not depend on the thread count: Note [Bands
/// fixed by the shape] in parallel_linear.cpp) and nothing spins against them.
#pragma once

#include <cstdint>

namespace vramlab::nn {

/// out = inp · weightᵀ + bias, rows split over the threads. Shapes: out (N, OC), inp (N, C),
/// weight (OC, C), bias (OC) or nullptr.
/// \throws vramlab::UsageError on a size OpenBLAS cannot index (checked before any thread starts).
void parallel_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                             int64_t N, int64_t C, int64_t OC);

/// dinp += dout · weight (rows split), dweight += doutᵀ · inp and dbias += Σ dout (output
/// features split; each dbias column summed over rows in order, so deterministic).
/// Shapes as parallel_linear_forward; dinp and dbias may be nullptr.
/// \throws vramlab::UsageError on a size OpenBLAS cannot index.
void parallel_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                              const float* inp, const float* weight, int64_t N, int64_t C,
                              int64_t OC);

}  // namespace vramlab::nn
