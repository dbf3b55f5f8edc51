// Host CPU detection for `vramlab doctor` and for choosing OpenBLAS's kernel set.
#include "common/platform/cpu_features.h"

#include <unistd.h>

#include <fstream>

namespace vramlab::platform {

namespace {

std::string read_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  f.model_name = read_model_name();
  f.logical_cores = static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN));
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.sse42 = __builtin_cpu_supports("sse4.2");
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  // g++ 12 has no builtin name for F16C; CPUID leaf 1, ECX bit 29.
  unsigned eax = 1, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
  f.f16c = (ecx >> 29) & 1u;
#endif
  return f;
}

std::string simd_level(const CpuFeatures& features) {
  if (features.avx512f && features.avx512bw && features.avx512vl && features.avx512dq)
    return "avx512";
  if (features.avx2 && features.fma) return "avx2";
  if (features.avx) return "avx";
  return "sse";
}

}  // namespace vramlab::platform
