// Optimizer-step CUDA kernels, in place over flat parameter buffers.
//   AdamW v1: one thread per element, the CPU fast path's arithmetic (bias corrections folded
//             into two factors computed on the host in double).
//   AdamW v2: one thread per 4 elements with float4 loads and stores (when param, grad, m, v are
//             16-byte aligned); the n % 4 tail is done by scalar threads. Same arithmetic, so v1
//             and v2 give the same bits.
//   SGD (+momentum, Nesterov): one thread per element.
// The mixed-storage launchers run the same arithmetic on widened values (param f32 or bf16, grad
// f32/bf16/f16 times the loss scaler's grad_multiplier, state f32 or bf16), round each stored
// value once, and overwrite the optional 16-bit working copy with round(param). With every type
// float and a multiplier of 1 they are the float kernels bit for bit (1·g is exact).
#include <cmath>
#include <string>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"
#include "kernels/cuda/ops/optimizer_arithmetic.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::adamw_element;
using detail::adamw_factors;
using detail::AdamWFactors;
using detail::blocks_for;
using detail::check_working;
using detail::kElementwiseBlockThreads;
using detail::narrow;
using detail::round_parameter;
using detail::widen;
using detail::write_working;

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

template <class P, class R, class S>
__device__ inline void mixed_adamw_element(P* param, const R* grad, S* m, S* v, void* working,
                                           DType working_type, std::int64_t i,
                                           const AdamWFactors& f, float grad_multiplier,
                                           const cpu::ParameterRounding& rounding) {
  float p = widen(param[i]), m_value = widen(m[i]), v_value = widen(v[i]);
  adamw_element(p, grad_multiplier * widen(grad[i]), m_value, v_value, f);
  param[i] = round_parameter<P>(p, rounding, i);
  m[i] = narrow<S>(m_value);
  v[i] = narrow<S>(v_value);
  if (working != nullptr) write_working(working, working_type, i, widen(param[i]));
}

template <class P, class R, class S>
__global__ void mixed_adamw_v1_kernel(P* param, const R* grad, S* m, S* v, void* working,
                                      DType working_type, std::int64_t n, AdamWFactors f,
                                      float grad_multiplier, cpu::ParameterRounding rounding) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    mixed_adamw_element(param, grad, m, v, working, working_type, i, f, grad_multiplier, rounding);
}

// Four elements per thread, one vector load or store per buffer; the n % 4 tail is scalar.
template <class P, class R, class S>
__global__ void mixed_adamw_v2_kernel(P* param, const R* grad, S* m, S* v, void* working,
                                      DType working_type, std::int64_t n, AdamWFactors f,
                                      float grad_multiplier) {
  const std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t quads = n / 4;
  if (quad < quads) {
    const float4 p = detail::load_quad(param, quad), g = detail::load_quad(grad, quad);
    const float4 m4 = detail::load_quad(m, quad), v4 = detail::load_quad(v, quad);
    float pv[4] = {p.x, p.y, p.z, p.w}, mv[4] = {m4.x, m4.y, m4.z, m4.w};
    float vv[4] = {v4.x, v4.y, v4.z, v4.w};
    const float gv[4] = {g.x, g.y, g.z, g.w};
    for (int e = 0; e < 4; e++) adamw_element(pv[e], grad_multiplier * gv[e], mv[e], vv[e], f);
    detail::store_quad(param, quad, make_float4(pv[0], pv[1], pv[2], pv[3]));
    detail::store_quad(m, quad, make_float4(mv[0], mv[1], mv[2], mv[3]));
    detail::store_quad(v, quad, make_float4(vv[0], vv[1], vv[2], vv[3]));
    if (working != nullptr) {
      const float4 stored = detail::load_quad(param, quad);
      if (working_type == DType::bf16) {
        detail::store_quad(static_cast<bf16_t*>(working), quad, stored);
      } else {
        detail::store_quad(static_cast<f16_t*>(working), quad, stored);
      }
    }
  } else {
    const std::int64_t i = quads * 4 + (quad - quads);
    if (i < n)
      mixed_adamw_element(param, grad, m, v, working, working_type, i, f, grad_multiplier, {});
  }
}

template <class P, class R, class S>
__global__ void mixed_sgd_kernel(P* param, const R* grad, S* momentum_buffer, void* working,
                                 DType working_type, std::int64_t n, float learning_rate,
                                 float momentum, float weight_decay, bool nesterov,
                                 float grad_multiplier, cpu::ParameterRounding rounding) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float p = widen(param[i]);
  float g = grad_multiplier * widen(grad[i]) + weight_decay * p;
  if (momentum != 0.0f) {
    const float buffer = momentum * widen(momentum_buffer[i]) + g;
    momentum_buffer[i] = narrow<S>(buffer);
    g = nesterov ? g + momentum * buffer : buffer;
  }
  param[i] = round_parameter<P>(p - learning_rate * g, rounding, i);
  if (working != nullptr) write_working(working, working_type, i, widen(param[i]));
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const cpu::AdamWHyperparameters& hp, int64_t step, KernelVersion version) {
  cpu::require_non_negative("cuda::adamw_update", "n", n);
  cpu::require(step >= 1, "cuda::adamw_update", "step = " + std::to_string(step) + " must be >= 1");
  if (n == 0) return;
  const AdamWFactors f = adamw_factors(hp, step);
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
                const cpu::SgdHyperparameters& hp) {
  cpu::require_non_negative("cuda::sgd_update", "n", n);
  cpu::require(hp.momentum == 0.0f || momentum_buffer != nullptr, "cuda::sgd_update",
               "momentum = " + std::to_string(hp.momentum) + " needs a momentum buffer");
  if (n == 0) return;
  VRAMLAB_LAUNCH(sgd_kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0,
                 0)
  (param, grad, momentum_buffer, n, hp.learning_rate, hp.momentum, hp.weight_decay, hp.nesterov);
}

template <class P, class R, class S>
void adamw_update(P* param, const R* grad, S* m, S* v, void* working, DType working_type, int64_t n,
                  const cpu::AdamWHyperparameters& hp, const cpu::UpdateStep& at,
                  KernelVersion version) {
  const char* op = "cuda::adamw_update";
  const int64_t step = at.step;
  const float grad_multiplier = at.grad_multiplier;
  const cpu::ParameterRounding& rounding = at.rounding;
  cpu::require_non_negative(op, "n", n);
  cpu::require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
  check_working(op, working, working_type);
  if (n == 0) return;
  const AdamWFactors f = adamw_factors(hp, step);
  const bool vectorized = detail::aligned_to(param, detail::kQuadBytes<P>) &&
                          detail::aligned_to(grad, detail::kQuadBytes<R>) &&
                          detail::aligned_to(m, detail::kQuadBytes<S>) &&
                          detail::aligned_to(v, detail::kQuadBytes<S>) &&
                          detail::aligned_to(working, 8);
  // v2's vector stores round to nearest: stochastic rounding takes v1's scalar path.
  if (version == KernelVersion::v1 || !vectorized || rounding.stochastic) {
    auto* const kernel = mixed_adamw_v1_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
    (param, grad, m, v, working, working_type, n, f, grad_multiplier, rounding);
  } else {
    auto* const kernel = mixed_adamw_v2_kernel<P, R, S>;
    const std::int64_t threads = n / 4 + n % 4;
    VRAMLAB_LAUNCH(kernel, blocks_for(threads, kElementwiseBlockThreads), kElementwiseBlockThreads,
                   0, 0)
    (param, grad, m, v, working, working_type, n, f, grad_multiplier);
  }
}

template <class P, class R, class S>
void sgd_update(P* param, const R* grad, NoDeduce<S>* momentum_buffer, void* working,
                DType working_type, int64_t n, const cpu::SgdHyperparameters& hp,
                const cpu::UpdateStep& at) {
  const char* op = "cuda::sgd_update";
  cpu::require_non_negative(op, "n", n);
  cpu::require(hp.momentum == 0.0f || momentum_buffer != nullptr, op,
               "momentum = " + std::to_string(hp.momentum) + " needs a momentum buffer");
  check_working(op, working, working_type);
  if (n == 0) return;
  auto* const kernel = mixed_sgd_kernel<P, R, S>;
  VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
  (param, grad, momentum_buffer, working, working_type, n, hp.learning_rate, hp.momentum,
   hp.weight_decay, hp.nesterov, at.grad_multiplier, at.rounding);
}

// Every OptimizerTypes combination: param f32/bf16 × grad f32/bf16/f16 × state f32/bf16.
#define VRAMLAB_INSTANTIATE_PRS(P, R, S)                                                        \
  template void adamw_update<P, R, S>(P*, const R*, S*, S*, void*, DType, int64_t,              \
                                      const cpu::AdamWHyperparameters&, const cpu::UpdateStep&, \
                                      KernelVersion);                                           \
  template void sgd_update<P, R, S>(P*, const R*, NoDeduce<S>*, void*, DType, int64_t,          \
                                    const cpu::SgdHyperparameters&, const cpu::UpdateStep&);
#define VRAMLAB_INSTANTIATE_PR(P, R)   \
  VRAMLAB_INSTANTIATE_PRS(P, R, float) \
  VRAMLAB_INSTANTIATE_PRS(P, R, ::vramlab::bf16_t)
#define VRAMLAB_INSTANTIATE_P(P)               \
  VRAMLAB_INSTANTIATE_PR(P, float)             \
  VRAMLAB_INSTANTIATE_PR(P, ::vramlab::bf16_t) \
  VRAMLAB_INSTANTIATE_PR(P, ::vramlab::f16_t)
VRAMLAB_INSTANTIATE_P(float)
VRAMLAB_INSTANTIATE_P(::vramlab::bf16_t)
#undef VRAMLAB_INSTANTIATE_P
#undef VRAMLAB_INSTANTIATE_PR
#undef VRAMLAB_INSTANTIATE_PRS

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
