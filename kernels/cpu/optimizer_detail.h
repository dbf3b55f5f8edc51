/// \file
/// \brief Internals shared by the optimizer kernels (optimizer.cpp, optimizer_8bit.cpp): how a
/// scaled gradient is formed, how an updated parameter is rounded, and AdamW's per-element
/// arithmetic, written once so that every optimizer treats them exactly as adamw_update does.
/// Not part of the kernel API.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"

#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu::detail {

/// Elements per chunk of the scaled gradient (see for_each_gradient).
inline constexpr int64_t kScaledBlock = 256;

/// The updated parameter rounded into P (see ParameterRounding); the test on `stochastic` is
/// compiled only for 16-bit P. \p i is the element's index, the stream position of its bits.
template <typename P>
inline P round_parameter(float x, const ParameterRounding& rounding, int64_t i) {
  if constexpr (std::is_same_v<P, bf16_t>) {
    if (rounding.stochastic)
      return bf16_t{
          f32_to_bf16_bits_stochastic(x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  } else if constexpr (std::is_same_v<P, f16_t>) {
    if (rounding.stochastic)
      return f16_t{
          f32_to_f16_bits_stochastic(x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  }
  return narrow<P>(x);
}

/// Writes scaled[j] = grad_multiplier · widen(grad[j]) rounded to f32, j < count: the scaled
/// gradients go through memory so that GCC cannot fuse the product into the update's FMAs
/// (fma(multiplier, grad, ·)); fused, the update would no longer be the f32 kernel's on the
/// unscaled gradient (other bits, and other bits again where the loop runs scalar).
template <typename Gr>
inline void scale_gradient(float* scaled, const Gr* grad, int64_t count, float grad_multiplier) {
#pragma omp simd
  for (int64_t j = 0; j < count; j++) scaled[j] = grad_multiplier * widen(grad[j]);
}

/// Calls body(i, g) for every element in parallel, g = widen(grad[i]) (kScaled false: the f32
/// kernels' loop) or g = grad_multiplier · widen(grad[i]) rounded to f32 (kScaled true, through
/// scale_gradient in chunks of kScaledBlock).
template <bool kScaled, typename Gr, typename Body>
void for_each_gradient(const Gr* grad, int64_t n, float grad_multiplier, const Body& body) {
  if constexpr (!kScaled) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) body(i, widen(grad[i]));
  } else {
    const int64_t blocks = (n + kScaledBlock - 1) / kScaledBlock;
#pragma omp parallel for schedule(static)
    for (int64_t block = 0; block < blocks; block++) {
      const int64_t begin = block * kScaledBlock;
      const int64_t count = n - begin < kScaledBlock ? n - begin : kScaledBlock;
      float scaled[kScaledBlock];  // (kScaledBlock) multiplier · grad of this block
      scale_gradient(scaled, grad + begin, count, grad_multiplier);
#pragma omp simd
      for (int64_t j = 0; j < count; j++) body(begin + j, scaled[j]);
    }
  }
}

/// AdamW's per-element f32 arithmetic (PyTorch's torch.optim.AdamW order: decoupled decay of the
/// old parameter, then the bias-corrected step), its step constants computed once per call.
struct AdamWArithmetic {
  float beta1, beta2, learning_rate, epsilon;
  float correction1;  ///< 1 / (1 - β1^step), rounded once from double
  float correction2;  ///< 1 / (1 - β2^step), rounded once from double
  float decay;        ///< 1 - lr·weight_decay

  AdamWArithmetic(const AdamWHyperparameters& hp, int64_t step)
      : beta1(hp.beta1),
        beta2(hp.beta2),
        learning_rate(hp.learning_rate),
        epsilon(hp.epsilon),
        correction1(static_cast<float>(
            1.0 / (1.0 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(step))))),
        correction2(static_cast<float>(
            1.0 / (1.0 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(step))))),
        decay(1.0f - hp.learning_rate * hp.weight_decay) {}

  /// m ← β1·m + (1-β1)·g.
  float first_moment(float m, float g) const { return beta1 * m + (1.0f - beta1) * g; }
  /// v ← β2·v + (1-β2)·g².
  float second_moment(float v, float g) const { return beta2 * v + (1.0f - beta2) * g * g; }
  /// The updated parameter from the old one and the new moments.
  float parameter(float param, float m_new, float v_new) const {
    return param * decay -
           learning_rate * (m_new * correction1) / (std::sqrt(v_new * correction2) + epsilon);
  }
};

}  // namespace vramlab::kernels::cpu::detail
