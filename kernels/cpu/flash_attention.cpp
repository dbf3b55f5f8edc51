// Flash attention on the CPU (see flash_attention.h). INTERFACE STUB: the kernels are being
// written; every entry point throws until then.
#include "kernels/cpu/flash_attention.h"

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {

FlashTileCounts flash_tile_counts(int64_t, const FlashTiles&) {
  require(false, "flash_tile_counts", "not implemented yet");
  return {};
}

template <typename A>
void flash_attention_forward(A*, float*, const A*, const A*, const A*, int64_t, int64_t, int64_t,
                             int64_t, int64_t, const AttentionDropout&, const FlashTiles&) {
  require(false, "flash_attention_forward", "not implemented yet");
}

template <typename A>
void flash_attention_backward(A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*,
                              const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                              const AttentionDropout&, const FlashTiles&) {
  require(false, "flash_attention_backward", "not implemented yet");
}

template <typename Real>
void flash_attention_forward_reference(Real*, Real*, const Real*, const Real*, const Real*, int64_t,
                                       int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,
                                       const FlashTiles&) {
  require(false, "flash_attention_forward_reference", "not implemented yet");
}

template <typename Real>
void flash_attention_backward_reference(Real*, Real*, Real*, Real*, const Real*, const Real*,
                                        const Real*, const Real*, const Real*, const Real*, int64_t,
                                        int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,
                                        const FlashTiles&) {
  require(false, "flash_attention_backward_reference", "not implemented yet");
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                             \
  template void flash_attention_forward<A>(A*, float*, const A*, const A*, const A*, int64_t,      \
                                           int64_t, int64_t, int64_t, int64_t,                     \
                                           const AttentionDropout&, const FlashTiles&);            \
  template void flash_attention_backward<A>(                                                       \
      A*, A*, A*, float*, const A*, const A*, const A*, const A*, const A*, const float*, int64_t, \
      int64_t, int64_t, int64_t, int64_t, const AttentionDropout&, const FlashTiles&);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

#define VRAMLAB_INSTANTIATE_REFERENCE(Real)                                                        \
  template void flash_attention_forward_reference<Real>(                                           \
      Real*, Real*, const Real*, const Real*, const Real*, int64_t, int64_t, int64_t, int64_t,     \
      int64_t, const AttentionDropout&, const FlashTiles&);                                        \
  template void flash_attention_backward_reference<Real>(                                          \
      Real*, Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, const Real*, \
      const Real*, int64_t, int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,           \
      const FlashTiles&);
VRAMLAB_INSTANTIATE_REFERENCE(float)
VRAMLAB_INSTANTIATE_REFERENCE(double)
#undef VRAMLAB_INSTANTIATE_REFERENCE

}  // namespace vramlab::kernels::cpu
