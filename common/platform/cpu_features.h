/// \file
/// \brief The host CPU: model name, core count and the SIMD features the kernels care about.
#pragma once

#include <cstdint>
#include <string>

namespace vramlab::platform {

/// SIMD features of the host CPU, read with CPUID (through the compiler's builtins).
struct CpuFeatures {
  std::string model_name;     ///< e.g. "AMD EPYC 9454P" (from /proc/cpuinfo; "unknown" if absent)
  int64_t logical_cores = 0;  ///< online logical CPUs
  bool sse42 = false;         ///< SSE4.2
  bool avx = false;           ///< AVX
  bool avx2 = false;          ///< AVX2
  bool fma = false;           ///< FMA3
  bool f16c = false;          ///< F16C (hardware f16 <-> f32 conversion)
  bool avx512f = false;       ///< AVX-512 Foundation
  bool avx512bw = false;      ///< AVX-512 Byte and Word
  bool avx512vl = false;      ///< AVX-512 Vector Length
  bool avx512dq = false;      ///< AVX-512 Doubleword and Quadword
  bool avx512_bf16 = false;   ///< AVX-512 BF16 (vdpbf16ps)
};

/// Reads the host CPU's features. Never throws.
CpuFeatures detect_cpu_features();

/// The widest SIMD level the CPU supports, as a short name: "avx512", "avx2", "avx" or "sse".
std::string simd_level(const CpuFeatures& features);

}  // namespace vramlab::platform
