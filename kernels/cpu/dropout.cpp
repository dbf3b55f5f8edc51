// Dropout with a counter-based mask: each element's decision is computed from its own index, so
// the loop is parallel over fixed static chunks and the result does not depend on the threads.
#include "kernels/cpu/dropout.h"

#include "common/dtype/dropout_mask.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

template <typename A>
void apply_mask(A* out, const A* inp, int64_t n, float p, uint64_t seed, uint64_t offset) {
  if (p == 0.0f) {
    // An exact copy, whatever the values (a signalling NaN would be quieted by a multiply).
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = inp[i];
    return;
  }
  const float scale = dropout_scale(p);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    out[i] = narrow<A>(
        dropout_keep(seed, offset + static_cast<uint64_t>(i), p) ? widen(inp[i]) * scale : 0.0f);
  }
}

template <typename Real>
void apply_mask_reference(Real* out, const Real* inp, int64_t n, float p, uint64_t seed,
                          uint64_t offset) {
  const Real scale = Real(1) / (Real(1) - static_cast<Real>(p));
  for (int64_t i = 0; i < n; i++) {
    const bool keep = dropout_uniform(seed, offset + static_cast<uint64_t>(i)) >= p;
    out[i] = keep ? inp[i] * scale : Real(0);
  }
}

}  // namespace

template <typename A>
void dropout_forward(A* out, const A* inp, int64_t n, float p, uint64_t seed, uint64_t offset) {
  require_non_negative("dropout_forward", "n", n);
  require_dropout_probability("dropout_forward", p);
  apply_mask(out, inp, n, p, seed, offset);
}

template <typename A>
void dropout_backward(A* dinp, const A* dout, int64_t n, float p, uint64_t seed, uint64_t offset) {
  require_non_negative("dropout_backward", "n", n);
  require_dropout_probability("dropout_backward", p);
  apply_mask(dinp, dout, n, p, seed, offset);
}

void dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                     uint64_t offset) {
  dropout_forward<float>(out, inp, n, p, seed, offset);
}

void dropout_backward(float* dinp, const float* dout, int64_t n, float p, uint64_t seed,
                      uint64_t offset) {
  dropout_backward<float>(dinp, dout, n, p, seed, offset);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                \
  template void dropout_forward<A>(A*, const A*, int64_t, float, uint64_t, uint64_t); \
  template void dropout_backward<A>(A*, const A*, int64_t, float, uint64_t, uint64_t);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

template <typename Real>
void dropout_forward_reference(Real* out, const Real* inp, int64_t n, float p, uint64_t seed,
                               uint64_t offset) {
  require_non_negative("dropout_forward_reference", "n", n);
  require_dropout_probability("dropout_forward_reference", p);
  apply_mask_reference(out, inp, n, p, seed, offset);
}

template <typename Real>
void dropout_backward_reference(Real* dinp, const Real* dout, int64_t n, float p, uint64_t seed,
                                uint64_t offset) {
  require_non_negative("dropout_backward_reference", "n", n);
  require_dropout_probability("dropout_backward_reference", p);
  apply_mask_reference(dinp, dout, n, p, seed, offset);
}

template void dropout_forward_reference<float>(float*, const float*, int64_t, float, uint64_t,
                                               uint64_t);
template void dropout_forward_reference<double>(double*, const double*, int64_t, float, uint64_t,
                                                uint64_t);
template void dropout_backward_reference<float>(float*, const float*, int64_t, float, uint64_t,
                                                uint64_t);
template void dropout_backward_reference<double>(double*, const double*, int64_t, float, uint64_t,
                                                 uint64_t);

}  // namespace vramlab::kernels::cpu
