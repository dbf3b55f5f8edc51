// Reference solution of exercise 03.1: f32 to bf16 and to f16, round to nearest even
// (lessons/03-mixed-precision/api/narrow_float.h).
#include <bit>
#include <cstdint>

#include "lessons/03-mixed-precision/api/narrow_float.h"

namespace vramlab::lesson03 {

namespace {

constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Infinity = 0x7F800000u;
constexpr uint16_t kCanonicalNaN = 0x7FFF;

// Drops the low `shift` bits of `kept_and_dropped`, rounding to nearest, ties to even. The carry
// out of the kept mantissa is what moves a result to the next binade (or onto infinity).
uint32_t round_shift_right(uint32_t kept_and_dropped, int shift) {
  const uint32_t kept = kept_and_dropped >> shift;
  const uint32_t dropped = kept_and_dropped & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const bool up = dropped > half || (dropped == half && (kept & 1u) != 0u);
  return kept + (up ? 1u : 0u);
}

}  // namespace

//! [reference]
uint16_t to_bf16_bits(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  // Before rounding: a NaN with a small payload would carry into the exponent and read as inf.
  if ((bits & kAbsMask) > kF32Infinity) return kCanonicalNaN;
  // bf16 is the top half of an f32 (same exponent), so rounding the low 16 bits is all there is;
  // subnormals stay subnormals, and the largest values carry onto infinity (0x7F80).
  return static_cast<uint16_t>(round_shift_right(bits, 16));
}

uint16_t to_f16_bits(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t abs_bits = bits & kAbsMask;
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (abs_bits > kF32Infinity) return kCanonicalNaN;
  // 2^16 and above (infinity too) round to infinity whatever the mantissa; below it, 65520 and
  // up carry onto 0x7C00 through the rounding itself.
  if (abs_bits >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7C00u);
  const auto exponent_field = static_cast<int>(abs_bits >> 23);
  // f32 subnormals are below 2^-126, far below half the smallest f16 subnormal (2^-25).
  if (exponent_field == 0) return sign;
  const int exponent = exponent_field - 127;                        // x = 1.m · 2^exponent
  const uint32_t significand = (abs_bits & 0x7FFFFFu) | 0x800000u;  // 24 bits, implicit 1
  if (exponent >= -14) {
    // f16 normal: re-bias the exponent (15 instead of 127) and keep 10 of 23 mantissa bits.
    const uint32_t f16_exponent = static_cast<uint32_t>(exponent + 15);
    const uint32_t unrounded = (f16_exponent << 23) | (abs_bits & 0x7FFFFFu);
    return static_cast<uint16_t>(sign | round_shift_right(unrounded, 13));
  }
  // f16 subnormal: the value in units of 2^-24 is significand · 2^(exponent + 1), so the
  // significand (with its implicit 1) shifts right by 13 plus the distance below 2^-14.
  const int shift = 13 + (-14 - exponent);
  if (shift > 24) return sign;  // below 2^-25: rounds to zero
  return static_cast<uint16_t>(sign | round_shift_right(significand, shift));
}
//! [reference]

}  // namespace vramlab::lesson03
