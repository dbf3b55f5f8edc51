/// \file
/// \brief Exact conversions between f32 and the narrow float formats: f16, bf16, fp8 e4m3, fp8
/// e5m2.
///
/// Every f32 -> narrow conversion rounds to nearest, ties to even, handles subnormals of both
/// sides, infinities and NaN, and matches NVIDIA's host-side conversions bit for bit
/// (`__float2half_rn`,
/// `__float2bfloat16_rn`, `__nv_cvt_float_to_fp8`), which tests/dtype checks:
/// - a NaN input becomes the canonical NaN with the sign bit clear: f16 0x7FFF, bf16 0x7FFF,
///   fp8 0x7F (NaN payloads and signs are not kept);
/// - f16 and bf16 overflow to infinity;
/// - fp8 e4m3 (OCP: no infinity, only S.1111.111 is NaN, max 448): saturating conversion clamps
///   overflow and infinity to +-448; non-saturating conversion gives NaN (sign kept, so -overflow
///   is 0xFF);
/// - fp8 e5m2 (has infinity, max 57344): saturating conversion clamps overflow and infinity to
///   +-57344; non-saturating conversion gives +-infinity.
/// Every narrow -> f32 conversion is exact (f32 holds every value of every narrow format); NaN
/// stays NaN with its sign and payload shifted into the f32 mantissa.
///
/// The stochastic variants round to one of the two neighbours of x with probabilities that make the
/// expected result equal x (see counter_rng.h for reproducible random bits).
///
/// Everything is constexpr and callable from host and CUDA device code (VRAMLAB_HOST_DEVICE).
#pragma once

#include <cstdint>

#include "common/dtype/counter_rng.h"
#include "common/dtype/float_bits.h"
#include "common/dtype/host_device.h"

namespace vramlab {

/// IEEE-754 binary16 storage: 1 sign, 5 exponent, 10 mantissa bits.
struct f16_t {
  uint16_t bits;  ///< The raw bit pattern.
};
/// bfloat16 storage: 1 sign, 8 exponent, 7 mantissa bits (the top half of an f32).
struct bf16_t {
  uint16_t bits;  ///< The raw bit pattern.
};
/// OCP FP8 E4M3 storage: 1 sign, 4 exponent, 3 mantissa bits; no infinity, NaN is S.1111.111.
struct fp8_e4m3_t {
  uint8_t bits;  ///< The raw bit pattern.
};
/// OCP FP8 E5M2 storage: 1 sign, 5 exponent, 2 mantissa bits; IEEE-style infinity and NaN.
struct fp8_e5m2_t {
  uint8_t bits;  ///< The raw bit pattern.
};

/// Implementation of the conversions, shared by every narrow format.
namespace detail {

/// What a narrow format does with its all-ones exponent field.
enum class Specials {
  ieee,  ///< all-ones exponent: mantissa 0 is infinity, anything else NaN (f16, bf16, e5m2)
  finite_single_nan  ///< no infinity; only all-ones exponent with all-ones mantissa is NaN (e4m3)
};

/// How the dropped bits of the f32 significand decide between the two neighbours.
enum class Rounding {
  nearest_even,  ///< round to nearest, ties to even
  stochastic     ///< round away from zero with probability (dropped fraction of one ulp)
};

/// A narrow float's bit layout and the bit patterns derived from it.
/// \tparam kExponentBits width of the exponent field.
/// \tparam kMantissaBits width of the stored mantissa (without the implicit bit).
/// \tparam kSpecials what the all-ones exponent encodes.
template <int kExponentBits, int kMantissaBits, Specials kSpecials>
struct NarrowLayout {
  /// Width of the exponent field.
  static constexpr int exponent_bits = kExponentBits;
  /// Width of the stored mantissa.
  static constexpr int mantissa_bits = kMantissaBits;
  /// What the all-ones exponent encodes.
  static constexpr Specials specials = kSpecials;
  /// Exponent bias, 2^(exponent_bits-1) - 1.
  static constexpr int bias = (1 << (kExponentBits - 1)) - 1;
  /// Unbiased exponent of the smallest normal number.
  static constexpr int min_normal_exponent = 1 - bias;
  /// Mask of the stored mantissa.
  static constexpr uint32_t mantissa_mask = (1u << kMantissaBits) - 1u;
  /// The exponent field at all ones, in place.
  static constexpr uint32_t exponent_all_ones = ((1u << kExponentBits) - 1u) << kMantissaBits;
  /// Position of the sign bit.
  static constexpr int sign_shift = kExponentBits + kMantissaBits;
  /// The largest finite magnitude's bits.
  static constexpr uint32_t max_finite_bits = kSpecials == Specials::ieee
                                                  ? exponent_all_ones - 1u
                                                  : exponent_all_ones | (mantissa_mask - 1u);
  /// Infinity's bits (only meaningful for Specials::ieee).
  static constexpr uint32_t infinity_bits = exponent_all_ones;
  /// The NaN a conversion produces: all-ones exponent and mantissa, sign clear.
  static constexpr uint32_t canonical_nan_bits = exponent_all_ones | mantissa_mask;
};

/// f16: 5 exponent bits, 10 mantissa bits, IEEE specials.
using F16Layout = NarrowLayout<5, 10, Specials::ieee>;
/// bf16: 8 exponent bits, 7 mantissa bits, IEEE specials.
using BF16Layout = NarrowLayout<8, 7, Specials::ieee>;
/// fp8 e4m3 (OCP): 4 exponent bits, 3 mantissa bits, no infinity, one NaN per sign.
using E4M3Layout = NarrowLayout<4, 3, Specials::finite_single_nan>;
/// fp8 e5m2 (OCP): 5 exponent bits, 2 mantissa bits, IEEE specials.
using E5M2Layout = NarrowLayout<5, 2, Specials::ieee>;

/// A finite f32 magnitude cut down to a narrow format, toward zero.
struct Truncated {
  /// The narrow magnitude bits toward zero (may exceed the format's range; the caller checks).
  uint32_t magnitude_bits;
  /// The dropped part as a fraction of one narrow ulp, in units of 2^-32 (0x80000000 is a tie).
  /// Exact whenever it is 2^-8 or more; below that the bits beyond 2^-32 are dropped.
  uint32_t remainder;
};

/// Cuts a finite f32 magnitude to layout L toward zero and reports the dropped fraction.
/// \param abs_bits f32 bits with the sign clear, at most 0x7F7FFFFF.
/// \return the truncated magnitude and the dropped fraction of one ulp.
template <class L>
VRAMLAB_HOST_DEVICE constexpr Truncated truncate_magnitude(uint32_t abs_bits) {
  const uint32_t exponent_field = abs_bits >> 23;
  const uint32_t mantissa = abs_bits & 0x7FFFFFu;
  // An f32 subnormal has no implicit bit and the exponent of the smallest normal.
  const uint32_t significand = exponent_field == 0 ? mantissa : (mantissa | 0x800000u);
  const int exponent = exponent_field == 0 ? -126 : static_cast<int>(exponent_field) - 127;
  const int below_normal =
      exponent < L::min_normal_exponent ? L::min_normal_exponent - exponent : 0;
  const int shift = 23 - L::mantissa_bits + below_normal;  // significand bits dropped, >= 13
  const uint32_t exponent_base =
      below_normal > 0 ? 0u : static_cast<uint32_t>(exponent - L::min_normal_exponent);
  // The kept significand's implicit bit lands on the exponent field's lowest bit, adding the 1 that
  // turns exponent_base into the biased exponent.
  const uint32_t kept = shift < 32 ? significand >> shift : 0u;
  uint32_t remainder = 0;
  if (shift <= 32) {
    const uint64_t dropped = static_cast<uint64_t>(significand) & ((uint64_t{1} << shift) - 1u);
    remainder = static_cast<uint32_t>(dropped << (32 - shift));
  } else if (shift - 32 < 64) {
    remainder = static_cast<uint32_t>(static_cast<uint64_t>(significand) >> (shift - 32));
  }
  return Truncated{(exponent_base << L::mantissa_bits) + kept, remainder};
}

/// Converts \p x to layout L's bits. \p saturate clamps overflow and infinity to the largest
/// finite value instead of infinity (ieee) or NaN (finite_single_nan); \p random_bits are uniform
/// random bits for Rounding::stochastic, ignored otherwise.
/// \return the narrow bit pattern in the low sign_shift+1 bits.
template <class L>
VRAMLAB_HOST_DEVICE constexpr uint32_t narrow_from_f32(float x, bool saturate, Rounding rounding,
                                                       uint32_t random_bits) {
  const uint32_t bits = f32_to_bits(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (abs_bits > 0x7F800000u) return L::canonical_nan_bits;
  const uint32_t sign = (bits >> 31) << L::sign_shift;
  uint32_t magnitude = L::max_finite_bits + 1u;  // infinity takes the overflow path below
  if (abs_bits < 0x7F800000u) {
    const Truncated t = truncate_magnitude<L>(abs_bits);
    const bool round_up = rounding == Rounding::nearest_even
                              ? (t.remainder > 0x80000000u ||
                                 (t.remainder == 0x80000000u && (t.magnitude_bits & 1u) != 0u))
                              : t.remainder > random_bits;  // P(up) = remainder / 2^32
    magnitude = t.magnitude_bits + (round_up ? 1u : 0u);
  }
  if (magnitude > L::max_finite_bits) {
    if (saturate) {
      magnitude = L::max_finite_bits;
    } else {
      magnitude = L::specials == Specials::ieee ? L::infinity_bits : L::canonical_nan_bits;
    }
  }
  return sign | magnitude;
}

/// Converts layout L's bits to the f32 of the same value, exactly.
/// \param bits the narrow bit pattern in the low sign_shift+1 bits.
/// \return the value; NaN keeps its sign and payload (shifted into the f32 mantissa).
template <class L>
VRAMLAB_HOST_DEVICE constexpr float narrow_to_f32(uint32_t bits) {
  constexpr uint32_t exponent_max = (1u << L::exponent_bits) - 1u;
  constexpr int mantissa_shift = 23 - L::mantissa_bits;
  const uint32_t sign = ((bits >> L::sign_shift) & 1u) << 31;
  const uint32_t exponent_field = (bits >> L::mantissa_bits) & exponent_max;
  uint32_t mantissa = bits & L::mantissa_mask;
  if constexpr (L::exponent_bits == 8) {
    // Same exponent range as f32 (bf16): every pattern, subnormal and special included, widens in
    // place.
    return bits_to_f32(sign | (exponent_field << 23) | (mantissa << mantissa_shift));
  } else {
    if (exponent_field == exponent_max) {
      if (L::specials == Specials::ieee) {
        return bits_to_f32(sign | 0x7F800000u | (mantissa << mantissa_shift));
      }
      if (mantissa == L::mantissa_mask) {
        return bits_to_f32(sign | 0x7FC00000u | (mantissa << mantissa_shift));
      }
    }
    if (exponent_field == 0) {
      if (mantissa == 0) return bits_to_f32(sign);
      // A narrow subnormal is an f32 normal: shift the leading one up to the implicit position.
      int exponent = L::min_normal_exponent;
      while ((mantissa & (1u << L::mantissa_bits)) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      return bits_to_f32(sign | (static_cast<uint32_t>(exponent + 127) << 23) |
                         ((mantissa & L::mantissa_mask) << mantissa_shift));
    }
    const uint32_t f32_exponent = exponent_field + static_cast<uint32_t>(127 - L::bias);
    return bits_to_f32(sign | (f32_exponent << 23) | (mantissa << mantissa_shift));
  }
}

}  // namespace detail

/// f32 -> f16 bits, round to nearest even; overflow gives infinity, NaN gives 0x7FFF.
VRAMLAB_HOST_DEVICE constexpr inline uint16_t f32_to_f16_bits(float x) {
  // Branch-free (selects, no jumps) so loops over it vectorize; equals narrow_from_f32<F16Layout>.
  const uint32_t bits = f32_to_bits(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  // f16 normals: round the 13 dropped bits to nearest even (0x0FFF plus the kept lowest bit carries
  // exactly when they exceed a tie or tie to odd), then re-bias the exponent from 127 to 15. A
  // carry past 65504 (0x7BFF) lands exactly on infinity (0x7C00).
  const uint32_t normal =
      ((abs_bits + 0x0FFFu + ((abs_bits >> 13) & 1u)) >> 13) - ((127u - 15u) << 10);
  // f16 subnormals (below 2^-14): the significand with its implicit bit, shifted into place with
  // the same rounding; shifts of 25 or more leave 0 (f32 subnormals included, capped at 31).
  const uint32_t exponent = abs_bits >> 23;
  const uint32_t shift = exponent >= 112u ? 14u : (exponent <= 95u ? 31u : 126u - exponent);
  const uint32_t significand = (abs_bits & 0x7FFFFFu) | 0x800000u;
  const uint32_t subnormal =
      (significand + (1u << (shift - 1u)) - 1u + ((significand >> shift) & 1u)) >> shift;
  uint32_t magnitude = abs_bits < 0x38800000u ? subnormal : normal;
  magnitude = abs_bits >= 0x47800000u ? 0x7C00u : magnitude;  // 2^16 and beyond, infinity too
  const uint32_t sign = (bits >> 16) & 0x8000u;
  return static_cast<uint16_t>(abs_bits > 0x7F800000u ? detail::F16Layout::canonical_nan_bits
                                                      : sign | magnitude);
}
/// f16 bits -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float f16_bits_to_f32(uint16_t bits) {
  return detail::narrow_to_f32<detail::F16Layout>(bits);
}
/// f32 -> bf16 bits, round to nearest even; overflow gives infinity, NaN gives 0x7FFF.
VRAMLAB_HOST_DEVICE constexpr inline uint16_t f32_to_bf16_bits(float x) {
  // bf16 is the top half of an f32, so round to nearest even is one add: 0x7FFF plus the kept
  // lowest bit carries into bit 16 exactly when the dropped half exceeds a tie, or ties to odd. The
  // carry may bump the exponent, and the largest finite values round up to infinity, as they
  // should. Branch-free, so loops over it vectorize; it equals narrow_from_f32<BF16Layout>.
  const uint32_t bits = f32_to_bits(x);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(is_nan ? detail::BF16Layout::canonical_nan_bits : rounded);
}
/// bf16 bits -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float bf16_bits_to_f32(uint16_t bits) {
  return detail::narrow_to_f32<detail::BF16Layout>(bits);
}
/// f32 -> fp8 e4m3 bits, round to nearest even (NVIDIA `__nv_cvt_float_to_fp8(x, sat, __NV_E4M3)`).
/// \p saturate true (`__NV_SATFINITE`): overflow and +-inf give +-448; false (`__NV_NOSAT`):
/// they give NaN (0x7F, or 0xFF when negative). NaN gives 0x7F either way.
VRAMLAB_HOST_DEVICE constexpr inline uint8_t f32_to_e4m3_bits(float x, bool saturate) {
  return static_cast<uint8_t>(
      detail::narrow_from_f32<detail::E4M3Layout>(x, saturate, detail::Rounding::nearest_even, 0));
}
/// fp8 e4m3 bits -> f32, exact (S.1111.111 is NaN).
VRAMLAB_HOST_DEVICE constexpr inline float e4m3_bits_to_f32(uint8_t bits) {
  return detail::narrow_to_f32<detail::E4M3Layout>(bits);
}
/// f32 -> fp8 e5m2 bits, round to nearest even (NVIDIA `__nv_cvt_float_to_fp8(x, sat, __NV_E5M2)`).
/// \p saturate true (`__NV_SATFINITE`): overflow and +-inf give +-57344; false (`__NV_NOSAT`):
/// they give +-inf. NaN gives 0x7F either way.
VRAMLAB_HOST_DEVICE constexpr inline uint8_t f32_to_e5m2_bits(float x, bool saturate) {
  return static_cast<uint8_t>(
      detail::narrow_from_f32<detail::E5M2Layout>(x, saturate, detail::Rounding::nearest_even, 0));
}
/// fp8 e5m2 bits -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float e5m2_bits_to_f32(uint8_t bits) {
  return detail::narrow_to_f32<detail::E5M2Layout>(bits);
}

/// f32 -> f16 bits with stochastic rounding: x goes to the neighbour away from zero with
/// probability (distance from the neighbour toward zero) / (spacing), so E[result] = x. Overflow
/// past 65504 can round to infinity; NaN gives 0x7FFF. \p random_bits are 32 uniform bits,
/// e.g. stochastic_bits(seed, element_index).
VRAMLAB_HOST_DEVICE constexpr inline uint16_t f32_to_f16_bits_stochastic(float x,
                                                                         uint32_t random_bits) {
  return static_cast<uint16_t>(detail::narrow_from_f32<detail::F16Layout>(
      x, false, detail::Rounding::stochastic, random_bits));
}
/// f32 -> bf16 bits with stochastic rounding (unbiased: E[result] = x); NaN gives 0x7FFF.
/// \p random_bits as f32_to_f16_bits_stochastic.
VRAMLAB_HOST_DEVICE constexpr inline uint16_t f32_to_bf16_bits_stochastic(float x,
                                                                          uint32_t random_bits) {
  return static_cast<uint16_t>(detail::narrow_from_f32<detail::BF16Layout>(
      x, false, detail::Rounding::stochastic, random_bits));
}

/// f32 -> f16 storage, round to nearest even (f32_to_f16_bits in a type).
VRAMLAB_HOST_DEVICE constexpr inline f16_t to_f16(float x) {
  return f16_t{f32_to_f16_bits(x)};
}
/// f32 -> bf16 storage, round to nearest even (f32_to_bf16_bits in a type).
VRAMLAB_HOST_DEVICE constexpr inline bf16_t to_bf16(float x) {
  return bf16_t{f32_to_bf16_bits(x)};
}
/// f32 -> fp8 e4m3 storage, round to nearest even; \p saturate as f32_to_e4m3_bits.
VRAMLAB_HOST_DEVICE constexpr inline fp8_e4m3_t to_fp8_e4m3(float x, bool saturate) {
  return fp8_e4m3_t{f32_to_e4m3_bits(x, saturate)};
}
/// f32 -> fp8 e5m2 storage, round to nearest even; \p saturate as f32_to_e5m2_bits.
VRAMLAB_HOST_DEVICE constexpr inline fp8_e5m2_t to_fp8_e5m2(float x, bool saturate) {
  return fp8_e5m2_t{f32_to_e5m2_bits(x, saturate)};
}
/// f16 -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float to_f32(f16_t h) {
  return f16_bits_to_f32(h.bits);
}
/// bf16 -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float to_f32(bf16_t b) {
  return bf16_bits_to_f32(b.bits);
}
/// fp8 e4m3 -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float to_f32(fp8_e4m3_t v) {
  return e4m3_bits_to_f32(v.bits);
}
/// fp8 e5m2 -> f32, exact.
VRAMLAB_HOST_DEVICE constexpr inline float to_f32(fp8_e5m2_t v) {
  return e5m2_bits_to_f32(v.bits);
}

}  // namespace vramlab
