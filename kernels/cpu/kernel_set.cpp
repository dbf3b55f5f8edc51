// Reports the vector extensions this library was compiled with (it shares the kernels' flags).
#include "kernels/cpu/kernel_set.h"

namespace vramlab::kernels::cpu {

const char* compiled_simd_level() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#else
  return "sse2";
#endif
}

const char* compiled_target() {
#if defined(VRAMLAB_KERNELS_TARGET)
  return VRAMLAB_KERNELS_TARGET;
#else
  return "generic";
#endif
}

}  // namespace vramlab::kernels::cpu
