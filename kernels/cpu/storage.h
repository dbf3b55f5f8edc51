/// \file
/// \brief Storage types of the CPU kernels (lesson 03, mixed precision): a kernel templated on
/// its storage type A ∈ {float, bf16_t, f16_t} loads each element widened to f32 (exact), computes
/// in f32 exactly as the f32 kernel does, and stores each result rounded once to nearest-even
/// (common/dtype/convert.h). For A = float widen and narrow are the identity, so the float
/// instantiation compiles to the same loop as a kernel written on float alone: the same bits and
/// the same speed.
#pragma once

#include <bit>
#include <cstdint>
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
/// \return the f16 value as f32, exactly: the bits of f16_bits_to_f32 (common/dtype/convert.h),
/// NaN payloads included, without its branches, so that loops over f16 vectorize. The magnitude
/// bits moved to the f32 positions (em << 13) read as the value times 2^-112, subnormals
/// included; one exact multiply by 2^112 restores it. Infinity and NaN (em >= 0x7C00) take the
/// all-ones f32 exponent with the payload shifted as they are.
inline float widen(f16_t x) {
  const uint32_t bits = x.bits;
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t magnitude = bits & 0x7FFFu;
  const float finite = std::bit_cast<float>(magnitude << 13) * 0x1p112f;
  const uint32_t special = (magnitude << 13) | 0x7F800000u;
  const uint32_t result = magnitude >= 0x7C00u ? special : std::bit_cast<uint32_t>(finite);
  return std::bit_cast<float>(result | sign);
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
