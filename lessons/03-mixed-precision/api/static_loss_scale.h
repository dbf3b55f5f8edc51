/// \file
/// \brief Exercise 03.4: the largest static loss scale that keeps a step's f16 gradients finite,
/// and how many backoffs GradScaler takes to find it.
///
/// The one API shared by the stub (exercises/03-mixed-precision/static_loss_scale.cpp) and the
/// reference (solutions/03-mixed-precision/static_loss_scale.cpp). With loss scaling every
/// gradient of the step, activation gradients and parameter gradients alike, is computed in f16
/// as S·g, the f32 value S·g rounded to f16 (round to nearest even, see exercise 03.1). It is
/// finite exactly when S·g < 65520 = 65504 · (1 + 2^-11), the midpoint between f16's largest
/// value 65504 and the next power of two, which rounds to infinity (ties to even). Loss scales
/// are powers of two, so that scaling and unscaling change no mantissa bit.
#pragma once

#include <cstdint>

namespace vramlab::lesson03 {

/// Exercise 03.4: the largest power of two S with S · max_abs_grad rounding to a finite f16.
/// \param max_abs_grad the largest |g| over every unscaled gradient of the step (finite, > 0).
/// \return S = 2^k (k may be far outside f32's exponent range: 2^164 for the smallest f32
///         subnormal, 2^-113 for the largest f32).
/// \throws vramlab::UsageError naming the value for 0, a negative value, an infinity or a NaN.
double largest_safe_loss_scale(float max_abs_grad);

/// Exercise 03.4: the backoffs GradScaler takes, from its default initial scale 2^16 with its
/// default backoff factor 0.5, before a step with this max |g| no longer overflows: one per
/// step whose scaled gradients held an inf (0 when 2^16 is already safe).
/// \param max_abs_grad as for largest_safe_loss_scale.
/// \return the number of overflowing steps (≥ 0).
/// \throws vramlab::UsageError naming the value for 0, a negative value, an infinity or a NaN.
int64_t gradscaler_backoffs(float max_abs_grad);

}  // namespace vramlab::lesson03
