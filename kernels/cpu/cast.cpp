// Casts between f32, bf16 and f16: one widen and one rounding per element.
#include "kernels/cpu/cast.h"

#include <cstring>
#include <type_traits>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {

template <typename To, typename From>
void cast(To* out, const From* inp, int64_t n) {
  require_non_negative("cast", "n", n);
  if constexpr (std::is_same_v<To, From>) {
    // The bits themselves: a round trip through f32 would canonicalise NaN payloads.
    if (n > 0 && static_cast<const void*>(out) != static_cast<const void*>(inp)) {
      std::memcpy(out, inp, static_cast<size_t>(n) * sizeof(To));
    }
  } else {
#pragma omp parallel for simd schedule(static) if (n >= (int64_t{1} << 15))
    for (int64_t i = 0; i < n; i++) out[i] = narrow<To>(widen(inp[i]));
  }
}

#define VRAMLAB_INSTANTIATE_FROM(To)                           \
  template void cast<To, float>(To*, const float*, int64_t);   \
  template void cast<To, bf16_t>(To*, const bf16_t*, int64_t); \
  template void cast<To, f16_t>(To*, const f16_t*, int64_t);
VRAMLAB_INSTANTIATE_FROM(float)
VRAMLAB_INSTANTIATE_FROM(bf16_t)
VRAMLAB_INSTANTIATE_FROM(f16_t)
#undef VRAMLAB_INSTANTIATE_FROM

}  // namespace vramlab::kernels::cpu
