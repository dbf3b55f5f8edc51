// AdamW and SGD(momentum) updates: elementwise, parallel, vectorized.
#include "kernels/cpu/optimizer.h"

#include <cmath>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

void check_adamw(const char* op, int64_t n, int64_t step) {
  require_non_negative(op, "n", n);
  require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
}

void check_sgd(const char* op, int64_t n, bool has_buffer, double momentum) {
  require_non_negative(op, "n", n);
  require(momentum == 0.0 || has_buffer, op,
          "momentum = " + std::to_string(momentum) + " needs a momentum buffer");
}

}  // namespace

namespace {

constexpr int64_t kScaledBlock = 256;

// The updated parameter rounded into P (see ParameterRounding); the test on `stochastic` is
// compiled only for 16-bit P.
template <typename P>
inline P round_parameter(float x, const ParameterRounding& rounding, int64_t i) {
  if constexpr (std::is_same_v<P, bf16_t>) {
    if (rounding.stochastic)
      return bf16_t{f32_to_bf16_bits_stochastic(
          x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  } else if constexpr (std::is_same_v<P, f16_t>) {
    if (rounding.stochastic)
      return f16_t{
          f32_to_f16_bits_stochastic(x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  }
  return narrow<P>(x);
}

// Calls body(i, g) for every element, g = widen(grad[i]) (kScaled false: the f32 kernels' loop)
// or g = grad_multiplier · widen(grad[i]) rounded to f32 (kScaled true). The scaled gradients go
// through a small block in memory first: left in registers, GCC would fuse the product into the
// update's FMAs (fma(multiplier, grad, ·)), and the update would no longer be the f32 kernel's
// on the unscaled gradient (other bits, and other bits again where the loop runs scalar).
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
#pragma omp simd
      for (int64_t j = 0; j < count; j++) scaled[j] = grad_multiplier * widen(grad[begin + j]);
#pragma omp simd
      for (int64_t j = 0; j < count; j++) body(begin + j, scaled[j]);
    }
  }
}

// kWorking: the working copy is rewritten with round(param) after the update.
template <bool kScaled, bool kWorking, typename P, typename Gr, typename S, typename W>
void adamw_loop(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                const AdamWHyperparameters& hp, int64_t step, float grad_multiplier,
                const ParameterRounding& rounding) {
  const double s = static_cast<double>(step);
  const float correction1 = static_cast<float>(1.0 / (1.0 - std::pow(hp.beta1, s)));
  const float correction2 = static_cast<float>(1.0 / (1.0 - std::pow(hp.beta2, s)));
  const float decay = 1.0f - hp.learning_rate * hp.weight_decay;
  const float beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate, eps = hp.epsilon;
  for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float g) {
    const float m_new = beta1 * widen(m[i]) + (1.0f - beta1) * g;
    const float v_new = beta2 * widen(v[i]) + (1.0f - beta2) * g * g;
    m[i] = narrow<S>(m_new);
    v[i] = narrow<S>(v_new);
    const float updated = widen(param[i]) * decay -
                          lr * (m_new * correction1) / (std::sqrt(v_new * correction2) + eps);
    param[i] = round_parameter<P>(updated, rounding, i);
    if constexpr (kWorking) working[i] = narrow<W>(updated);
  });
}

template <bool kScaled, bool kWorking, typename P, typename Gr, typename S, typename W>
void sgd_loop(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
              float learning_rate, float momentum, float weight_decay, bool nesterov,
              float grad_multiplier, const ParameterRounding& rounding) {
  if (momentum == 0.0f) {
    for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float g) {
      const float p = widen(param[i]);
      const float updated = p - learning_rate * (g + weight_decay * p);
      param[i] = round_parameter<P>(updated, rounding, i);
      if constexpr (kWorking) working[i] = narrow<W>(updated);
    });
    return;
  }
  for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float unscaled) {
    const float p = widen(param[i]);
    const float g = unscaled + weight_decay * p;
    const float buffer = momentum * widen(momentum_buffer[i]) + g;
    momentum_buffer[i] = narrow<S>(buffer);
    const float updated = p - learning_rate * (nesterov ? g + momentum * buffer : buffer);
    param[i] = round_parameter<P>(updated, rounding, i);
    if constexpr (kWorking) working[i] = narrow<W>(updated);
  });
}

}  // namespace

template <typename P, typename Gr, typename S, typename W>
void adamw_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step, float grad_multiplier,
                  const ParameterRounding& rounding) {
  check_adamw("adamw_update", n, step);
  const bool scaled = grad_multiplier != 1.0f;
  if (working == nullptr) {
    if (scaled) {
      adamw_loop<true, false>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
    } else {
      adamw_loop<false, false>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
    }
  } else if (scaled) {
    adamw_loop<true, true>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
  } else {
    adamw_loop<false, true>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
  }
}

template <typename P, typename Gr, typename S, typename W>
void sgd_update(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov,
                float grad_multiplier, const ParameterRounding& rounding) {
  check_sgd("sgd_update", n, momentum_buffer != nullptr, momentum);
  const bool scaled = grad_multiplier != 1.0f;
  if (working == nullptr) {
    if (scaled) {
      sgd_loop<true, false>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                            weight_decay, nesterov, grad_multiplier, rounding);
    } else {
      sgd_loop<false, false>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                             weight_decay, nesterov, grad_multiplier, rounding);
    }
  } else if (scaled) {
    sgd_loop<true, true>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                         weight_decay, nesterov, grad_multiplier, rounding);
  } else {
    sgd_loop<false, true>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                          weight_decay, nesterov, grad_multiplier, rounding);
  }
}

// TODO(helper): the Lion, Adam-mini and Adafactor kernels.
template <typename P, typename Gr, typename S, typename W>
void lion_update(P*, const Gr*, S*, W*, int64_t, const LionHyperparameters&, float,
                 const ParameterRounding&) {
  throw InternalError("lion_update: not implemented yet");
}
template <typename P, typename Gr, typename S, typename W>
void adam_mini_update(P*, const Gr*, S*, S*, W*, int64_t, int64_t, const AdamWHyperparameters&,
                      int64_t, float, const ParameterRounding&) {
  throw InternalError("adam_mini_update: not implemented yet");
}
template <typename P, typename Gr, typename S, typename W>
void adafactor_update(P*, const Gr*, S*, S*, W*, int64_t, int64_t, bool,
                      const AdafactorHyperparameters&, int64_t, float, const ParameterRounding&) {
  throw InternalError("adafactor_update: not implemented yet");
}

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step) {
  adamw_update<float, float, float, bf16_t>(param, grad, m, v, nullptr, n, hp, step, 1.0f);
}

void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov) {
  sgd_update<float, float, float, bf16_t>(param, grad, momentum_buffer, nullptr, n, learning_rate,
                                          momentum, weight_decay, nesterov, 1.0f);
}

#define VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, W)                                                 \
  template void adamw_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t,                      \
                                          const AdamWHyperparameters&, int64_t, float,             \
                                          const ParameterRounding&);                               \
  template void sgd_update<P, Gr, S, W>(P*, const Gr*, S*, W*, int64_t, float, float, float, bool, \
                                        float, const ParameterRounding&);                          \
  template void lion_update<P, Gr, S, W>(P*, const Gr*, S*, W*, int64_t,                           \
                                         const LionHyperparameters&, float,                        \
                                         const ParameterRounding&);                                \
  template void adam_mini_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t, int64_t,         \
                                              const AdamWHyperparameters&, int64_t, float,         \
                                              const ParameterRounding&);                           \
  template void adafactor_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t, int64_t, bool,   \
                                              const AdafactorHyperparameters&, int64_t, float,     \
                                              const ParameterRounding&);
#define VRAMLAB_INSTANTIATE_WORKING(P, Gr, S)     \
  VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, bf16_t) \
  VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, f16_t)
#define VRAMLAB_INSTANTIATE_STATE(P, Gr)    \
  VRAMLAB_INSTANTIATE_WORKING(P, Gr, float) \
  VRAMLAB_INSTANTIATE_WORKING(P, Gr, bf16_t)
#define VRAMLAB_INSTANTIATE_GRAD(P)    \
  VRAMLAB_INSTANTIATE_STATE(P, float)  \
  VRAMLAB_INSTANTIATE_STATE(P, bf16_t) \
  VRAMLAB_INSTANTIATE_STATE(P, f16_t)
VRAMLAB_INSTANTIATE_GRAD(float)
VRAMLAB_INSTANTIATE_GRAD(bf16_t)
#undef VRAMLAB_INSTANTIATE_GRAD
#undef VRAMLAB_INSTANTIATE_STATE
#undef VRAMLAB_INSTANTIATE_WORKING
#undef VRAMLAB_INSTANTIATE_OPTIMIZER

template <typename Real>
void adamw_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t n,
                            const AdamWHyperparameters& hp, int64_t step) {
  check_adamw("adamw_update_reference", n, step);
  const Real beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate, eps = hp.epsilon;
  const Real bias_correction1 = Real(1) - std::pow(beta1, static_cast<Real>(step));
  const Real bias_correction2 = Real(1) - std::pow(beta2, static_cast<Real>(step));
  for (int64_t i = 0; i < n; i++) {
    param[i] *= Real(1) - lr * static_cast<Real>(hp.weight_decay);
    m[i] = beta1 * m[i] + (Real(1) - beta1) * grad[i];
    v[i] = beta2 * v[i] + (Real(1) - beta2) * grad[i] * grad[i];
    const Real m_hat = m[i] / bias_correction1;
    const Real v_hat = v[i] / bias_correction2;
    param[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

template <typename Real>
void sgd_update_reference(Real* param, const Real* grad, Real* momentum_buffer, int64_t n,
                          Real learning_rate, Real momentum, Real weight_decay, bool nesterov) {
  check_sgd("sgd_update_reference", n, momentum_buffer != nullptr, static_cast<double>(momentum));
  for (int64_t i = 0; i < n; i++) {
    Real g = grad[i] + weight_decay * param[i];
    if (momentum != Real(0)) {
      momentum_buffer[i] = momentum * momentum_buffer[i] + g;
      g = nesterov ? g + momentum * momentum_buffer[i] : momentum_buffer[i];
    }
    param[i] -= learning_rate * g;
  }
}

template void adamw_update_reference<float>(float*, const float*, float*, float*, int64_t,
                                            const AdamWHyperparameters&, int64_t);
template void adamw_update_reference<double>(double*, const double*, double*, double*, int64_t,
                                             const AdamWHyperparameters&, int64_t);
template void sgd_update_reference<float>(float*, const float*, float*, int64_t, float, float,
                                          float, bool);
template void sgd_update_reference<double>(double*, const double*, double*, int64_t, double, double,
                                           double, bool);

}  // namespace vramlab::kernels::cpu
