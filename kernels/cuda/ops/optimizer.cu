// Optimizer-step CUDA kernels, in place over flat parameter buffers.
//   AdamW v1: one thread per element, the CPU fast path's arithmetic (bias corrections folded
//             into two factors computed on the host in double).
//   AdamW v2: one thread per 4 elements with float4 loads and stores (when param, grad, m, v are
//             16-byte aligned); the n % 4 tail is done by scalar threads. Same arithmetic, so v1
//             and v2 give the same bits.
//   SGD (+momentum, Nesterov): one thread per element.
#include <cmath>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::blocks_for;
using detail::kElementwiseBlockThreads;

struct AdamWFactors {
  float learning_rate, beta1, beta2, epsilon;
  float decay;        // 1 − lr·weight_decay
  float correction1;  // 1 / (1 − β1^step)
  float correction2;  // 1 / (1 − β2^step)
};

__device__ float adamw_element(float& param, float grad, float& m, float& v,
                               const AdamWFactors& f) {
  const float m_new = f.beta1 * m + (1.0f - f.beta1) * grad;
  const float v_new = f.beta2 * v + (1.0f - f.beta2) * grad * grad;
  m = m_new;
  v = v_new;
  param = param * f.decay -
          f.learning_rate * (m_new * f.correction1) / (sqrtf(v_new * f.correction2) + f.epsilon);
  return param;
}

__global__ void adamw_v1_kernel(float* param, const float* grad, float* m, float* v, std::int64_t n,
                                AdamWFactors f) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) adamw_element(param[i], grad[i], m[i], v[i], f);
}

__global__ void adamw_v2_kernel(float* param, const float* grad, float* m, float* v, std::int64_t n,
                                AdamWFactors f) {
  const std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t quads = n / 4;
  if (quad < quads) {
    float4 p = reinterpret_cast<float4*>(param)[quad];
    const float4 g = reinterpret_cast<const float4*>(grad)[quad];
    float4 m4 = reinterpret_cast<float4*>(m)[quad];
    float4 v4 = reinterpret_cast<float4*>(v)[quad];
    adamw_element(p.x, g.x, m4.x, v4.x, f);
    adamw_element(p.y, g.y, m4.y, v4.y, f);
    adamw_element(p.z, g.z, m4.z, v4.z, f);
    adamw_element(p.w, g.w, m4.w, v4.w, f);
    reinterpret_cast<float4*>(param)[quad] = p;
    reinterpret_cast<float4*>(m)[quad] = m4;
    reinterpret_cast<float4*>(v)[quad] = v4;
  } else {
    const std::int64_t i = quads * 4 + (quad - quads);
    if (i < n) adamw_element(param[i], grad[i], m[i], v[i], f);
  }
}

__global__ void sgd_kernel(float* param, const float* grad, float* momentum_buffer, std::int64_t n,
                           float learning_rate, float momentum, float weight_decay, bool nesterov) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = grad[i] + weight_decay * param[i];
  if (momentum != 0.0f) {
    momentum_buffer[i] = momentum * momentum_buffer[i] + g;
    g = nesterov ? g + momentum * momentum_buffer[i] : momentum_buffer[i];
  }
  param[i] -= learning_rate * g;
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const cpu::AdamWHyperparameters& hp, int64_t step, KernelVersion version) {
  cpu::require_non_negative("cuda::adamw_update", "n", n);
  cpu::require(step >= 1, "cuda::adamw_update", "step = " + std::to_string(step) + " must be >= 1");
  if (n == 0) return;
  const double s = static_cast<double>(step);
  const AdamWFactors f{hp.learning_rate,
                       hp.beta1,
                       hp.beta2,
                       hp.epsilon,
                       1.0f - hp.learning_rate * hp.weight_decay,
                       static_cast<float>(1.0 / (1.0 - std::pow(hp.beta1, s))),
                       static_cast<float>(1.0 / (1.0 - std::pow(hp.beta2, s)))};
  const bool vectorized = detail::aligned_16(param) && detail::aligned_16(grad) &&
                          detail::aligned_16(m) && detail::aligned_16(v);
  if (version == KernelVersion::v1 || !vectorized) {
    VRAMLAB_LAUNCH(adamw_v1_kernel, blocks_for(n, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (param, grad, m, v, n, f);
  } else {
    const std::int64_t threads = n / 4 + n % 4;
    VRAMLAB_LAUNCH(adamw_v2_kernel, blocks_for(threads, kElementwiseBlockThreads),
                   kElementwiseBlockThreads, 0, 0)
    (param, grad, m, v, n, f);
  }
}

void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                float learning_rate, float momentum, float weight_decay, bool nesterov) {
  cpu::require_non_negative("cuda::sgd_update", "n", n);
  cpu::require(momentum == 0.0f || momentum_buffer != nullptr, "cuda::sgd_update",
               "momentum = " + std::to_string(momentum) + " needs a momentum buffer");
  if (n == 0) return;
  VRAMLAB_LAUNCH(sgd_kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0,
                 0)
  (param, grad, momentum_buffer, n, learning_rate, momentum, weight_decay, nesterov);
}

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
