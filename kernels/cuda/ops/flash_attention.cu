// Flash attention CUDA kernels (see ops.h). INTERFACE STUB: the kernels are being written; both
// launchers throw until then.
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {

template <class A>
void flash_attention_forward(A*, float*, const A*, const A*, const A*, int64_t, int64_t, int64_t,
                             int64_t, int64_t, const cpu::AttentionDropout&, KernelVersion) {
  cpu::require(false, "cuda::flash_attention_forward", "not implemented yet");
}

template <class A>
void flash_attention_backward(A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*,
                              const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                              const cpu::AttentionDropout&, KernelVersion) {
  cpu::require(false, "cuda::flash_attention_backward", "not implemented yet");
}

#define VRAMLAB_INSTANTIATE(A)                                                                     \
  template void flash_attention_forward<A>(A*, float*, const A*, const A*, const A*, int64_t,      \
                                           int64_t, int64_t, int64_t, int64_t,                     \
                                           const cpu::AttentionDropout&, KernelVersion);           \
  template void flash_attention_backward<A>(                                                       \
      A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*, const float*, int64_t, \
      int64_t, int64_t, int64_t, int64_t, const cpu::AttentionDropout&, KernelVersion);
VRAMLAB_FOR_EACH_ACTIVATION_TYPE(VRAMLAB_INSTANTIATE)
#undef VRAMLAB_INSTANTIATE

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
