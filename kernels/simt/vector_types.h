/// \file
/// \brief `dim3`, `uint3` and the vector types vectorized kernels use (`float2`, `float4`,
/// `int2`, `int4`, `uint2`, `uint4`, `double2` and their `make_*` functions) for emulated kernels.
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
#include <vector_functions.h>
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
  unsigned int x;  ///< fastest-varying: consecutive threadIdx.x share a warp
  unsigned int y;  ///< 1 unless given
  unsigned int z;  ///< 1 unless given
  /// Implicit, as CUDA's: `dim3 block = 256;` means (256, 1, 1).
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  /// From threadIdx/blockIdx-style values, as CUDA allows.
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  /// Lets a dim3 be passed where CUDA code expects a uint3.
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

/// Two floats, 8-byte aligned like CUDA's (one 64-bit load).
struct alignas(8) float2 {
  float x;  ///< first component
  float y;  ///< second component
};
/// Four floats, 16-byte aligned like CUDA's (one 128-bit load).
struct alignas(16) float4 {
  float x;  ///< first component
  float y;  ///< second component
  float z;  ///< third component
  float w;  ///< fourth component
};
/// Two ints, 8-byte aligned.
struct alignas(8) int2 {
  int x;  ///< first component
  int y;  ///< second component
};
/// Four ints, 16-byte aligned.
struct alignas(16) int4 {
  int x;  ///< first component
  int y;  ///< second component
  int z;  ///< third component
  int w;  ///< fourth component
};
/// Two unsigned ints, 8-byte aligned.
struct alignas(8) uint2 {
  unsigned int x;  ///< first component
  unsigned int y;  ///< second component
};
/// Four unsigned ints, 16-byte aligned.
struct alignas(16) uint4 {
  unsigned int x;  ///< first component
  unsigned int y;  ///< second component
  unsigned int z;  ///< third component
  unsigned int w;  ///< fourth component
};
/// Two doubles, 16-byte aligned.
struct alignas(16) double2 {
  double x;  ///< first component
  double y;  ///< second component
};

/// \return float2{x, y}.
constexpr float2 make_float2(float x, float y) {
  return float2{x, y};
}
/// \return float4{x, y, z, w}.
constexpr float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}
/// \return int2{x, y}.
constexpr int2 make_int2(int x, int y) {
  return int2{x, y};
}
/// \return int4{x, y, z, w}.
constexpr int4 make_int4(int x, int y, int z, int w) {
  return int4{x, y, z, w};
}
/// \return uint2{x, y}.
constexpr uint2 make_uint2(unsigned int x, unsigned int y) {
  return uint2{x, y};
}
/// \return uint3{x, y, z}.
constexpr uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return uint3{x, y, z};
}
/// \return uint4{x, y, z, w}.
constexpr uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  return uint4{x, y, z, w};
}
/// \return double2{x, y}.
constexpr double2 make_double2(double x, double y) {
  return double2{x, y};
}

#endif
