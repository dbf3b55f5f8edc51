// Reports the vector extensions this library was compiled with (it shares the kernels' flags) and
// picks the elementwise optimizers' path at run time.
#include "kernels/cpu/kernel_set.h"

#include <atomic>
#include <string>

#include "common/platform/errors.h"
#include "kernels/cpu/optimizer_detail.h"

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

const char* vector_path_name(VectorPath path) {
  switch (path) {
    case VectorPath::plain:
      return "plain";
    case VectorPath::compiled:
      return compiled_simd_level();
    case VectorPath::avx512:
      return "avx512";
  }
  return "?";
}

namespace {

bool cpu_has_avx512() {
#if VRAMLAB_OPTIMIZER_AVX512_PATH
  // libgcc's and compiler-rt's checks include the operating system's XSAVE support of the
  // registers (XGETBV), not only CPUID.
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return has;
#else
  return false;
#endif
}

// -1: the CPU's choice; else a VectorPath.
std::atomic<int> forced_path{-1};

}  // namespace

bool vector_path_available(VectorPath path) {
  return path != VectorPath::avx512 || cpu_has_avx512();
}

VectorPath optimizer_vector_path() {
  const int forced = forced_path.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<VectorPath>(forced);
  return cpu_has_avx512() ? VectorPath::avx512 : VectorPath::compiled;
}

void force_optimizer_vector_path(std::optional<VectorPath> path) {
  if (path && !vector_path_available(*path))
    throw UsageError(std::string("the ") + vector_path_name(*path) +
                     " path of the optimizers is not available on this CPU or build");
  forced_path.store(path ? static_cast<int>(*path) : -1, std::memory_order_relaxed);
}

}  // namespace vramlab::kernels::cpu
