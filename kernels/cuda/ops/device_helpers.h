/// \file
/// \brief Device-side helpers shared by the kernels of kernels/cuda/ops: grid sizes, warp
/// reductions, and the float4 alignment test of the vectorized (v2) paths.
///
/// Included by the .cu files only (under nvcc it is CUDA, under g++ the SIMT emulator).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ops.h"
#include "kernels/simt/simt.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace detail {

/// Threads per block of the one-thread-per-element (v1) kernels.
inline constexpr unsigned kElementwiseBlockThreads = 256;
/// Threads per block of the one-warp-per-row (v2) kernels: 8 rows per block.
inline constexpr unsigned kRowBlockThreads = 256;
/// Every lane of a full warp.
inline constexpr unsigned kFullWarpMask = 0xffffffffu;

/// \param count work items. \param per_block items per block (> 0). \return blocks to cover count.
inline unsigned blocks_for(std::int64_t count, std::int64_t per_block) {
  return static_cast<unsigned>((count + per_block - 1) / per_block);
}

/// \param pointer a device pointer (may be nullptr). \return true when it is 16-byte aligned, so
/// float4 loads from it are legal.
inline bool aligned_16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

/// Sum over the 32 lanes of a full warp; every lane receives it (butterfly: same order on every
/// lane, so every lane holds the same bits).
/// \param value this lane's value. \return the warp's sum.
template <class Real>
__device__ inline Real warp_sum(Real value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullWarpMask, value, offset);
  }
  return value;
}

/// Maximum over the 32 lanes of a full warp; every lane receives it.
/// \param value this lane's value. \return the warp's maximum.
__device__ inline float warp_max(float value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(kFullWarpMask, value, offset));
  }
  return value;
}

}  // namespace detail
}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
