/// \file
/// \brief The loss scaler's check of the gradients (lesson 03): are they all finite once unscaled,
/// and what is their squared norm (for clipping), in one read of gradients of any storage type.
///
/// The unscale itself is not applied here: the optimizer takes the same multiplier as its
/// grad_multiplier (a fused unscale, as apex's and DeepSpeed's fused optimizers do), so 16-bit
/// gradients are never copied to f32.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// What check_gradients found.
struct GradientCheck {
  bool found_inf = false;     ///< some multiplier·g (in f32) is ±inf or NaN
  double sum_of_squares = 0;  ///< Σ (multiplier·g)², each product in f32, squares summed in double
};

/// Checks grads (n) for inf/NaN after scaling by \p multiplier (1/scale) and sums the squares of
/// the scaled values, the gradients unchanged. Fixed 4096-element chunks summed in double, the
/// chunk sums added in order: the same bits for any thread count.
/// \tparam T float, bf16_t or f16_t. \throws vramlab::InternalError when n < 0.
template <typename T>
GradientCheck check_gradients(const T* grads, int64_t n, float multiplier);

}  // namespace vramlab::kernels::cpu
