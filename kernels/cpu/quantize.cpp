// Int8 block quantisation: one task per block when there are many blocks, and the threads inside
// each block when there are few (a per-tensor scale is one block of the whole tensor, which one
// thread would quantise alone at a memory-bound crawl). Either way the amax is a max, exact in any
// order, so the result is the same bits for any thread count and equal to the reference's.
#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "common/dtype/int8_block.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

// Below this many blocks the threads split each block instead of taking whole blocks.
constexpr int64_t kFewBlocks = 64;

void check_arguments(const char* op, int64_t n, int64_t block) {
  require_non_negative(op, "n", n);
  require(block >= 1, op, "block = " + std::to_string(block) + " must be >= 1");
}

}  // namespace

template <typename A>
void quantize_int8(int8_t* q, float* scales, const A* x, int64_t n, int64_t block) {
  check_arguments("quantize_int8", n, block);
  const int64_t blocks = int8_block_count(n, block);
  if (blocks < kFewBlocks) {
    for (int64_t j = 0; j < blocks; j++) {
      const int64_t first = j * block, count = std::min(block, n - first);
      const A* xb = x + first;  // (count)
      int8_t* qb = q + first;   // (count)
      float amax = 0.0f;
      int finite = 1;
#pragma omp parallel for simd schedule(static) reduction(max : amax) reduction(& : finite)
      for (int64_t i = 0; i < count; i++) {
        const float a = std::fabs(widen(xb[i]));
        amax = a > amax ? a : amax;
        finite &= a <= FLT_MAX ? 1 : 0;
      }
      const float scale = int8_block_scale(amax, finite != 0);
      scales[j] = scale;
#pragma omp parallel for simd schedule(static)
      for (int64_t i = 0; i < count; i++) qb[i] = int8_quantize(widen(xb[i]), scale);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < blocks; j++) {
    const int64_t first = j * block, count = std::min(block, n - first);
    const A* xb = x + first;  // (count)
    int8_t* qb = q + first;   // (count)
    float amax = 0.0f;
    int finite = 1;
    // A NaN never wins `a > amax`; the finite flag catches it (and ±inf).
#pragma omp simd reduction(max : amax) reduction(& : finite)
    for (int64_t i = 0; i < count; i++) {
      const float a = std::fabs(widen(xb[i]));
      amax = a > amax ? a : amax;
      finite &= a <= FLT_MAX ? 1 : 0;
    }
    const float scale = int8_block_scale(amax, finite != 0);
    scales[j] = scale;
#pragma omp simd
    for (int64_t i = 0; i < count; i++) qb[i] = int8_quantize(widen(xb[i]), scale);
  }
}

template <typename A>
void dequantize_int8(A* x, const int8_t* q, const float* scales, int64_t n, int64_t block) {
  check_arguments("dequantize_int8", n, block);
  const int64_t blocks = int8_block_count(n, block);
  if (blocks < kFewBlocks) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] = narrow<A>(static_cast<float>(q[i]) * scales[i / block]);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < blocks; j++) {
    const int64_t first = j * block, count = std::min(block, n - first);
    const float scale = scales[j];
#pragma omp simd
    for (int64_t i = first; i < first + count; i++)
      x[i] = narrow<A>(static_cast<float>(q[i]) * scale);
  }
}

void quantize_int8(int8_t* q, float* scales, const float* x, int64_t n, int64_t block) {
  quantize_int8<float>(q, scales, x, n, block);
}

void dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n, int64_t block) {
  dequantize_int8<float>(x, q, scales, n, block);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                         \
  template void quantize_int8<A>(int8_t*, float*, const A*, int64_t, int64_t); \
  template void dequantize_int8<A>(A*, const int8_t*, const float*, int64_t, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE

void quantize_int8_reference(int8_t* q, float* scales, const float* x, int64_t n, int64_t block) {
  check_arguments("quantize_int8_reference", n, block);
  for (int64_t j = 0; j < int8_block_count(n, block); j++) {
    const int64_t first = j * block, last = std::min(n, first + block);
    float amax = 0.0f;
    bool finite = true;
    for (int64_t i = first; i < last; i++) {
      if (!std::isfinite(x[i])) finite = false;
      amax = std::max(amax, std::fabs(x[i]));
    }
    scales[j] = int8_block_scale(amax, finite);
    for (int64_t i = first; i < last; i++) q[i] = int8_quantize(x[i], scales[j]);
  }
}

void dequantize_int8_reference(float* x, const int8_t* q, const float* scales, int64_t n,
                               int64_t block) {
  check_arguments("dequantize_int8_reference", n, block);
  for (int64_t i = 0; i < n; i++) x[i] = static_cast<float>(q[i]) * scales[i / block];
}

}  // namespace vramlab::kernels::cpu
