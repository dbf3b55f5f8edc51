/// \file
/// \brief The dropout mask as a pure function of (seed, element index), on host and device.
///
/// Gradient checkpointing re-runs a forward pass and must drop exactly the elements the first run
/// dropped. A stateful generator (Philox with a per-launch offset, as PyTorch's CUDA dropout) would
/// have to be rewound; a counter-based one needs nothing saved: element i of a tensor keeps or
/// drops by `dropout_uniform(seed, offset + i) >= p` on any thread, CPU or GPU, in any order. Every
/// dropout kernel (kernels/cpu, kernels/cuda) decides through these functions, so the masks of all
/// backends are the same bits.
#pragma once

#include <cstdint>

#include "common/dtype/counter_rng.h"
#include "common/dtype/host_device.h"

namespace vramlab {

/// A uniform float in [0, 1) for element \p index of the stream \p seed: the top 24 bits of
/// stochastic_bits(seed, index) times 2^-24. 24 bits is a float's significand, so every value
/// k · 2^-24 is exact and equally likely (no rounding towards 1, which a 32-bit conversion has).
/// \param seed the stream (e.g. one per training step and layer). \param index the counter.
/// \return k · 2^-24 for a k uniform in [0, 2^24).
VRAMLAB_HOST_DEVICE constexpr inline float dropout_uniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(stochastic_bits(seed, index) >> 8) * (1.0f / 16777216.0f);
}

/// Whether dropout with probability \p p keeps element \p index of stream \p seed:
/// dropout_uniform(seed, index) >= p, so p = 0 keeps everything and each element is kept with
/// probability 1 − p (rounded up to a multiple of 2^-24).
/// \param seed the stream. \param index the counter (offset + element index). \param p in [0, 1).
/// \return true when the element is kept.
VRAMLAB_HOST_DEVICE constexpr inline bool dropout_keep(uint64_t seed, uint64_t index, float p) {
  return dropout_uniform(seed, index) >= p;
}

/// The factor a kept element is multiplied by, 1 / (1 − p) in float (exactly 1 for p = 0, so
/// dropout with p = 0 is a copy), computed the same way by every kernel.
/// \param p the drop probability, in [0, 1). \return 1 / (1 − p).
VRAMLAB_HOST_DEVICE constexpr inline float dropout_scale(float p) {
  return 1.0f / (1.0f - p);
}

}  // namespace vramlab
