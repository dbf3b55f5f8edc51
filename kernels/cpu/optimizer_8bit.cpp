// 8-bit AdamW: the dynamic map, block-wise quantization and the update (see optimizer_8bit.h).
#include "kernels/cpu/optimizer_8bit.h"

#include "common/platform/errors.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {

// TODO(helper): everything below.
const std::array<float, kQuantizationCodes>& dynamic_quantization_map(bool) {
  throw InternalError("dynamic_quantization_map: not implemented yet");
}
uint8_t nearest_code(const std::array<float, kQuantizationCodes>&, float) {
  throw InternalError("nearest_code: not implemented yet");
}
void quantize_blockwise(uint8_t*, float*, const float*, int64_t, int64_t,
                        const std::array<float, kQuantizationCodes>&) {
  throw InternalError("quantize_blockwise: not implemented yet");
}
void dequantize_blockwise(float*, const uint8_t*, const float*, int64_t, int64_t,
                          const std::array<float, kQuantizationCodes>&) {
  throw InternalError("dequantize_blockwise: not implemented yet");
}
template <typename P, typename Gr, typename W>
void adamw_8bit_update(P*, const Gr*, uint8_t*, uint8_t*, float*, float*, W*, int64_t, int64_t,
                       const AdamWHyperparameters&, int64_t, float, const ParameterRounding&) {
  throw InternalError("adamw_8bit_update: not implemented yet");
}

#define VRAMLAB_INSTANTIATE_8BIT(P, Gr, W)                                                         \
  template void adamw_8bit_update<P, Gr, W>(P*, const Gr*, uint8_t*, uint8_t*, float*, float*, W*, \
                                            int64_t, int64_t, const AdamWHyperparameters&,         \
                                            int64_t, float, const ParameterRounding&);
#define VRAMLAB_INSTANTIATE_8BIT_WORKING(P, Gr) \
  VRAMLAB_INSTANTIATE_8BIT(P, Gr, bf16_t)       \
  VRAMLAB_INSTANTIATE_8BIT(P, Gr, f16_t)
#define VRAMLAB_INSTANTIATE_8BIT_GRAD(P)      \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, float)  \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, bf16_t) \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, f16_t)
VRAMLAB_INSTANTIATE_8BIT_GRAD(float)
VRAMLAB_INSTANTIATE_8BIT_GRAD(bf16_t)
#undef VRAMLAB_INSTANTIATE_8BIT_GRAD
#undef VRAMLAB_INSTANTIATE_8BIT_WORKING
#undef VRAMLAB_INSTANTIATE_8BIT

}  // namespace vramlab::kernels::cpu
