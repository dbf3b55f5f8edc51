/// \file
/// \brief Symmetric int8 quantisation of one block of floats: the scale from the block's largest
/// magnitude and the rounding of one element, shared by the CPU and CUDA kernels so both give the
/// same bits.
///
/// scale = amax / 127 (float division) and q = round-half-to-even(x / scale) clamped to
/// [−127, 127], as the per-tensor and per-block symmetric schemes of LLM.int8() (Dettmers et al.,
/// 2022) and of torch.ao.quantization's symmetric qint8 observers (which also leave −128 unused so
/// that the range is symmetric). An all-zero block has scale 0; a block holding a NaN or ±inf has
/// scale NaN, so it dequantises to NaN instead of to plausible numbers.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/dtype/host_device.h"

namespace vramlab {

/// The largest |q| of the symmetric int8 scheme (−128 is never produced).
inline constexpr int kInt8QuantMax = 127;

/// \param amax max |x| over the block's finite elements. \param finite whether every element of
/// the block is finite. \return amax / 127, or NaN when the block is not finite.
VRAMLAB_HOST_DEVICE inline float int8_block_scale(float amax, bool finite) {
  return finite ? amax / static_cast<float>(kInt8QuantMax) : NAN;
}

/// \param x one element. \param scale its block's int8_block_scale.
/// \return round-half-to-even(x / scale) clamped to [−127, 127]; 0 when scale is 0 or NaN (an
/// all-zero or a non-finite block).
VRAMLAB_HOST_DEVICE inline int8_t int8_quantize(float x, float scale) {
  if (!(scale > 0.0f)) return 0;
  // rintf rounds half to even in the default rounding mode, on the host and on the device.
  const float rounded = rintf(x / scale);
  const float limit = static_cast<float>(kInt8QuantMax);
  return static_cast<int8_t>(rounded > limit ? limit : (rounded < -limit ? -limit : rounded));
}

}  // namespace vramlab
