/// \file
/// \brief `dim3` and `uint3` for emulated kernels.
///
/// When the CUDA toolkit's headers are on the include path (CMake adds them when it finds them,
/// even without nvcc) the emulator uses CUDA's own `vector_types.h`, so a kernel may also include
/// `cuda_fp16.h` or `cuda_bf16.h` host-side. Without the toolkit (or with
/// VRAMLAB_SIMT_OWN_VECTOR_TYPES defined) it defines minimal equivalents with the same layout and
/// constructors. The CUDA decorators (`__host__`, `__device__`, ...) must be defined before this
/// header; simt.h does that.
#pragma once

#if !defined(VRAMLAB_SIMT_OWN_VECTOR_TYPES) && __has_include(<vector_types.h>) && \
    __has_include(<crt/host_defines.h>)
#include <vector_types.h>
#else

/// Three unsigned coordinates: the type of `threadIdx` and `blockIdx`.
struct uint3 {
  unsigned int x;  ///< fastest-varying coordinate
  unsigned int y;  ///< middle coordinate
  unsigned int z;  ///< slowest-varying coordinate
};

/// A launch extent: the type of `blockDim` and `gridDim`; missing coordinates default to 1.
struct dim3 {
  unsigned int x;  ///< extent along x
  unsigned int y;  ///< extent along y
  unsigned int z;  ///< extent along z
  /// \param vx extent along x \param vy extent along y \param vz extent along z
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  /// \param v the three extents.
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  /// \return the extents as a uint3.
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#endif
