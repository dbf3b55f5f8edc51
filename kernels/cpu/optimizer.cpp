// AdamW and SGD(momentum) updates: elementwise, parallel, vectorized.
#include "kernels/cpu/optimizer.h"

#include <cmath>

#include "kernels/cpu/kernel_checks.h"

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

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step) {
  check_adamw("adamw_update", n, step);
  const double s = static_cast<double>(step);
  const float correction1 = static_cast<float>(1.0 / (1.0 - std::pow(hp.beta1, s)));
  const float correction2 = static_cast<float>(1.0 / (1.0 - std::pow(hp.beta2, s)));
  const float decay = 1.0f - hp.learning_rate * hp.weight_decay;
  const float beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate, eps = hp.epsilon;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = grad[i];
    const float m_new = beta1 * m[i] + (1.0f - beta1) * g;
    const float v_new = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = m_new;
    v[i] = v_new;
    param[i] =
        param[i] * decay - lr * (m_new * correction1) / (std::sqrt(v_new * correction2) + eps);
  }
}

void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov) {
  check_sgd("sgd_update", n, momentum_buffer != nullptr, momentum);
  if (momentum == 0.0f) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) param[i] -= learning_rate * (grad[i] + weight_decay * param[i]);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = grad[i] + weight_decay * param[i];
    const float buffer = momentum * momentum_buffer[i] + g;
    momentum_buffer[i] = buffer;
    param[i] -= learning_rate * (nesterov ? g + momentum * buffer : buffer);
  }
}

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
