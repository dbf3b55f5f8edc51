/// \file
/// \brief Counter-based random bits: a pure function of (seed, element index), for reproducible
/// stochastic rounding on any number of threads, CPU or GPU.
///
/// stochastic_bits(seed, i) is element i of the SplitMix64 sequence whose starting state is the
/// SplitMix64 hash of `seed`: no state is carried between calls, so any thread can compute any
/// element's bits and a run is bitwise reproducible whatever the thread order.
#pragma once

#include <cstdint>

#include "common/dtype/host_device.h"

namespace vramlab {

/// SplitMix64's increment (2^64 divided by the golden ratio, odd).
inline constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

/// SplitMix64's output function: a bijective 64-bit mix with full avalanche.
VRAMLAB_HOST_DEVICE constexpr inline uint64_t splitmix64_mix(uint64_t state) {
  state = (state ^ (state >> 30)) * 0xBF58476D1CE4E5B9ull;
  state = (state ^ (state >> 27)) * 0x94D049BB133111EBull;
  return state ^ (state >> 31);
}

/// 32 uniform random bits for element `index` of the stream named `seed`.
/// Different seeds give unrelated streams; \p index is e.g. the position of a value in a tensor,
/// so any element's bits can be computed alone, in any order, on any thread.
/// \return the high 32 bits of SplitMix64 element `index` after seeding with splitmix64_mix(seed).
VRAMLAB_HOST_DEVICE constexpr inline uint32_t stochastic_bits(uint64_t seed, uint64_t index) {
  const uint64_t state = splitmix64_mix(seed) + (index + 1u) * kSplitMix64Gamma;
  return static_cast<uint32_t>(splitmix64_mix(state) >> 32);
}

}  // namespace vramlab
