// Low-memory optimizer CUDA kernels: Lion, Adam-mini, Adafactor and 8-bit AdamW (see ops.h).
#include <cmath>
#include <string>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {

// TODO(helper): the kernels.
template <class P, class R, class S>
void lion_update(P*, const R*, S*, void*, DType, int64_t, const cpu::LionHyperparameters&, float,
                 KernelVersion, const cpu::ParameterRounding&) {
  throw InternalError("cuda::lion_update: not implemented yet");
}
template <class P, class R, class S>
void adam_mini_update(P*, const R*, S*, S*, void*, DType, int64_t, int64_t,
                      const cpu::AdamWHyperparameters&, int64_t, float, KernelVersion,
                      const cpu::ParameterRounding&) {
  throw InternalError("cuda::adam_mini_update: not implemented yet");
}
template <class P, class R, class S>
void adafactor_update(P*, const R*, S*, NoDeduce<S>*, void*, DType, int64_t, int64_t, bool,
                      const cpu::AdafactorHyperparameters&, int64_t, float, KernelVersion,
                      const cpu::ParameterRounding&) {
  throw InternalError("cuda::adafactor_update: not implemented yet");
}
template <class P, class R>
void adamw_8bit_update(P*, const R*, uint8_t*, uint8_t*, float*, float*, void*, DType, int64_t,
                       int64_t, const cpu::AdamWHyperparameters&, int64_t, float, KernelVersion,
                       const cpu::ParameterRounding&) {
  throw InternalError("cuda::adamw_8bit_update: not implemented yet");
}

// Every OptimizerTypes combination: param f32/bf16 × grad f32/bf16/f16 × state f32/bf16 (8-bit
// AdamW: param × grad).
#define VRAMLAB_INSTANTIATE_PRS(P, R, S)                                                         \
  template void lion_update<P, R, S>(P*, const R*, S*, void*, DType, int64_t,                    \
                                     const cpu::LionHyperparameters&, float, KernelVersion,      \
                                     const cpu::ParameterRounding&);                             \
  template void adam_mini_update<P, R, S>(P*, const R*, S*, S*, void*, DType, int64_t, int64_t,  \
                                          const cpu::AdamWHyperparameters&, int64_t, float,      \
                                          KernelVersion, const cpu::ParameterRounding&);         \
  template void adafactor_update<P, R, S>(P*, const R*, S*, NoDeduce<S>*, void*, DType, int64_t, \
                                          int64_t, bool, const cpu::AdafactorHyperparameters&,   \
                                          int64_t, float, KernelVersion,                         \
                                          const cpu::ParameterRounding&);
#define VRAMLAB_INSTANTIATE_PR(P, R)                                                               \
  VRAMLAB_INSTANTIATE_PRS(P, R, float)                                                             \
  VRAMLAB_INSTANTIATE_PRS(P, R, ::vramlab::bf16_t)                                                 \
  template void adamw_8bit_update<P, R>(P*, const R*, uint8_t*, uint8_t*, float*, float*, void*,   \
                                        DType, int64_t, int64_t, const cpu::AdamWHyperparameters&, \
                                        int64_t, float, KernelVersion,                             \
                                        const cpu::ParameterRounding&);
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
