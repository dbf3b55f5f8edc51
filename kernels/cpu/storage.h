/// \file
/// \brief Storage types of the CPU kernels (lesson 03, mixed precision): a kernel templated on
/// its storage type A ∈ {float, bf16_t, f16_t} loads each element widened to f32 (exact), computes
/// in f32 exactly as the f32 kernel does, and stores each result rounded once to nearest-even
/// (common/dtype/convert.h). For A = float widen and narrow are the identity, so the float
/// instantiation compiles to the same loop as a kernel written on float alone: the same bits and
/// the same speed.
#pragma once

#include <type_traits>

#include "common/dtype/convert.h"

namespace vramlab::kernels::cpu {

/// \return x itself (f32 storage).
inline float widen(float x) {
  return x;
}
/// \return the bf16 value as f32, exactly.
inline float widen(bf16_t x) {
  return to_f32(x);
}
/// \return the f16 value as f32, exactly.
inline float widen(f16_t x) {
  return to_f32(x);
}

/// Rounds an f32 result into storage type T (nearest-even; overflow to ±inf, NaN stays NaN).
/// \tparam T float, bf16_t or f16_t. \param x the f32 result. \return x in T.
template <typename T>
inline T narrow(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return to_bf16(x);
  } else {
    static_assert(std::is_same_v<T, f16_t>, "storage is float, bf16_t or f16_t");
    return to_f16(x);
  }
}

/// True for the 16-bit storage types, whose kernels need f32 scratch where the float kernel
/// works in place.
template <typename T>
inline constexpr bool kNarrowStorage = !std::is_same_v<T, float>;

}  // namespace vramlab::kernels::cpu
