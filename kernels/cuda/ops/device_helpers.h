/// \file
/// \brief Device-side helpers shared by the kernels of kernels/cuda/ops: grid sizes, warp
/// reductions, the float4 alignment test of the vectorized (v2) paths, and the storage-type
/// conversions (widen to f32, round once to the output's type) and four-element loads of the
/// typed kernels.
///
/// Included by the .cu files only (under nvcc it is CUDA, under g++ the SIMT emulator).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/dtype/convert.h"
#include "kernels/cuda/ops.h"
#include "kernels/simt/simt.h"

/// Expands X(A) for every activation storage type (explicit instantiations of the launchers).
#define VRAMLAB_FOR_EACH_ACTIVATION_TYPE(X) X(float) X(::vramlab::bf16_t) X(::vramlab::f16_t)
/// Expands X(A, G) for every (activation, parameter-gradient) storage pair: G is float or A.
#define VRAMLAB_FOR_EACH_OP_TYPES(X)                                  \
  X(float, float)                                                     \
  X(::vramlab::bf16_t, ::vramlab::bf16_t) X(::vramlab::bf16_t, float) \
      X(::vramlab::f16_t, ::vramlab::f16_t) X(::vramlab::f16_t, float)

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

/// \param pointer a device pointer (may be nullptr). \param bytes a power of two.
/// \return true when it is a multiple of \p bytes, so vector loads of that width are legal.
inline bool aligned_to(const void* pointer, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(pointer) % bytes == 0;
}

/// \param x a stored value. \return it in f32 (exact for every storage type).
__device__ inline float widen(float x) {
  return x;
}
/// \param x a stored value. \return it in f32 (exact).
__device__ inline float widen(bf16_t x) {
  return to_f32(x);
}
/// \param x a stored value. \return it in f32 (exact).
__device__ inline float widen(f16_t x) {
  return to_f32(x);
}

/// \param x an f32 result. \return x rounded once, to nearest even, into storage type T
/// (identity for float; overflow to ±inf, NaN kept: common/dtype/convert.h).
template <class T>
__device__ inline T narrow(float x) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    return to_bf16(x);
  } else if constexpr (std::is_same_v<T, f16_t>) {
    return to_f16(x);
  } else {
    static_assert(std::is_same_v<T, float>, "storage types are float, bf16_t and f16_t");
    return x;
  }
}

/// \param x a stored value. \return x as a double, for the double-accumulated reductions.
template <class T>
__device__ inline double widen_double(T x) {
  return static_cast<double>(widen(x));
}

/// Bytes of four elements of T: a 16-byte float4 for float, an 8-byte uint2 for 16-bit types.
template <class T>
inline constexpr std::size_t kQuadBytes = 4 * sizeof(T);

/// Loads elements 4·quad .. 4·quad+3 of \p x with one vector load, widened to f32.
/// \param x a kQuadBytes<T>-aligned device pointer. \param quad the group of four.
/// \return the four values.
template <class T>
__device__ inline float4 load_quad(const T* x, std::int64_t quad) {
  if constexpr (std::is_same_v<T, float>) {
    return reinterpret_cast<const float4*>(x)[quad];
  } else {
    // One 8-byte load of four 16-bit patterns; the emulator copies the bytes instead of aliasing
    // them, which g++'s strict aliasing would not allow.
    T four[4];
#if VRAMLAB_SIMT_EMULATED
    std::memcpy(four, x + quad * 4, sizeof four);
#else
    const uint2 raw = reinterpret_cast<const uint2*>(x)[quad];
    four[0].bits = static_cast<std::uint16_t>(raw.x & 0xFFFFu);
    four[1].bits = static_cast<std::uint16_t>(raw.x >> 16);
    four[2].bits = static_cast<std::uint16_t>(raw.y & 0xFFFFu);
    four[3].bits = static_cast<std::uint16_t>(raw.y >> 16);
#endif
    return make_float4(widen(four[0]), widen(four[1]), widen(four[2]), widen(four[3]));
  }
}

/// Rounds four f32 values into storage type T and stores them as elements 4·quad .. 4·quad+3 of
/// \p x with one vector store. \param x a kQuadBytes<T>-aligned device pointer. \param quad the
/// group of four. \param value the four results.
template <class T>
__device__ inline void store_quad(T* x, std::int64_t quad, float4 value) {
  if constexpr (std::is_same_v<T, float>) {
    reinterpret_cast<float4*>(x)[quad] = value;
  } else {
    const T four[4] = {narrow<T>(value.x), narrow<T>(value.y), narrow<T>(value.z),
                       narrow<T>(value.w)};
#if VRAMLAB_SIMT_EMULATED
    std::memcpy(x + quad * 4, four, sizeof four);
#else
    uint2 raw;
    raw.x = static_cast<unsigned>(four[0].bits) | (static_cast<unsigned>(four[1].bits) << 16);
    raw.y = static_cast<unsigned>(four[2].bits) | (static_cast<unsigned>(four[3].bits) << 16);
    reinterpret_cast<uint2*>(x)[quad] = raw;
#endif
  }
}

}  // namespace detail
}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
