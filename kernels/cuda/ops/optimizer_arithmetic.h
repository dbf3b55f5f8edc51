/// \file
/// \brief The per-element arithmetic every CUDA optimizer shares (optimizer.cu and
/// optimizer_low_memory.cu): AdamW's f32 update with the bias corrections folded on the host, the
/// rounding of an updated parameter into its storage type, and the 16-bit working copy.
///
/// One copy, so AdamW, Adam-mini and 8-bit AdamW cannot drift apart: the 8-bit kernel is AdamW's
/// arithmetic on dequantised moments, and Adam-mini is AdamW's with one v per block.
/// Included by the .cu files only (nvcc, or g++ for the SIMT emulator).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace detail {

/// AdamW's hyper-parameters with the step's bias corrections, as the kernels use them.
struct AdamWFactors {
  float learning_rate;  ///< lr
  float beta1;          ///< β1
  float beta2;          ///< β2
  float epsilon;        ///< added to √v̂
  float decay;          ///< 1 − lr·weight_decay
  float correction1;    ///< 1 / (1 − β1^step)
  float correction2;    ///< 1 / (1 − β2^step)
};

/// The bias corrections in double on the host, rounded once to f32, as the CPU kernels do.
/// \param hp the step's hyper-parameters. \param step 1-based. \return the kernels' factors.
inline AdamWFactors adamw_factors(const cpu::AdamWHyperparameters& hp, int64_t step) {
  const double s = static_cast<double>(step);
  return AdamWFactors{hp.learning_rate,
                      hp.beta1,
                      hp.beta2,
                      hp.epsilon,
                      1.0f - hp.learning_rate * hp.weight_decay,
                      static_cast<float>(1.0 / (1.0 - std::pow(hp.beta1, s))),
                      static_cast<float>(1.0 / (1.0 - std::pow(hp.beta2, s)))};
}

/// \param m the first moment. \param grad the gradient (already times the multiplier).
/// \param f the factors. \return β1·m + (1 − β1)·grad.
__device__ inline float adamw_first_moment(float m, float grad, const AdamWFactors& f) {
  return f.beta1 * m + (1.0f - f.beta1) * grad;
}

/// \param v the second moment. \param grad_squared what v averages (g², or Adam-mini's block
/// mean of g²). \param f the factors. \return β2·v + (1 − β2)·grad_squared.
__device__ inline float adamw_second_moment(float v, float grad_squared, const AdamWFactors& f) {
  return f.beta2 * v + (1.0f - f.beta2) * grad_squared;
}

/// AdamW's step of the moments, in place.
/// \param grad the gradient (already times the multiplier). \param m first moment. \param v second
/// moment. \param f the factors.
__device__ inline void adamw_moments(float grad, float& m, float& v, const AdamWFactors& f) {
  m = adamw_first_moment(m, grad, f);
  v = f.beta2 * v + (1.0f - f.beta2) * grad * grad;
}

/// The parameter after AdamW's step from the already updated moments.
/// \param param before the step. \param m updated first moment. \param v updated second moment
/// (for Adam-mini: the block's). \param f the factors. \return the updated parameter in f32.
__device__ inline float adamw_parameter(float param, float m, float v, const AdamWFactors& f) {
  return param * f.decay -
         f.learning_rate * (m * f.correction1) / (sqrtf(v * f.correction2) + f.epsilon);
}

/// One AdamW element: the moments and the parameter, in place.
/// \param param the parameter. \param grad the gradient. \param m first moment. \param v second
/// moment. \param f the factors. \return the updated parameter.
__device__ inline float adamw_element(float& param, float grad, float& m, float& v,
                                      const AdamWFactors& f) {
  adamw_moments(grad, m, v, f);
  param = adamw_parameter(param, m, v, f);
  return param;
}

/// working[i] = round(value) into the working copy's 16-bit type (bf16 or f16: checked on the
/// host). \param working the copy. \param type its type. \param i the element. \param value f32.
__device__ inline void write_working(void* working, DType type, std::int64_t i, float value) {
  if (type == DType::bf16) {
    static_cast<bf16_t*>(working)[i] = to_bf16(value);
  } else {
    static_cast<f16_t*>(working)[i] = to_f16(value);
  }
}

/// The updated parameter rounded into P (kernels/cpu/optimizer.h's ParameterRounding): element i
/// of a stochastically rounded bf16 parameter takes the random bits stochastic_bits(seed, i).
/// \param x the f32 result. \param rounding how. \param i the element's index in the tensor.
/// \return x in P.
template <class P>
__device__ inline P round_parameter(float x, const cpu::ParameterRounding& rounding,
                                    std::int64_t i) {
  if constexpr (std::is_same_v<P, bf16_t>) {
    if (rounding.stochastic)
      return bf16_t{f32_to_bf16_bits_stochastic(
          x, stochastic_bits(rounding.seed, static_cast<std::uint64_t>(i)))};
  }
  return narrow<P>(x);
}

/// Stores an updated parameter: param[i] rounded into P, and the working copy (when there is one)
/// rewritten from the stored value. \param param the parameter. \param working nullptr or the
/// copy. \param working_type its type. \param i the element. \param updated the f32 result.
/// \param rounding how a bf16 param rounds.
template <class P>
__device__ inline void store_parameter(P* param, void* working, DType working_type, std::int64_t i,
                                       float updated, const cpu::ParameterRounding& rounding) {
  param[i] = round_parameter<P>(updated, rounding, i);
  if (working != nullptr) write_working(working, working_type, i, widen(param[i]));
}

/// \throws vramlab::UsageError naming \p working_type unless a working copy is bf16 or f16.
/// \param op the launcher. \param working nullptr or the copy. \param working_type its type.
inline void check_working(const char* op, const void* working, DType working_type) {
  cpu::require(working == nullptr || working_type == DType::bf16 || working_type == DType::f16, op,
               "a working copy must be bf16 or f16, not " + std::string(dtype_name(working_type)));
}

}  // namespace detail
}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
