// bf16/f16-storage matmul: sbgemm when OpenBLAS has it, else widen to f32 and call the f32 kernels.
#include "kernels/cpu/matmul_low_precision.h"

#include <cblas.h>

#include <vector>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/matmul.h"

namespace vramlab::kernels::cpu {
namespace {

template <typename Storage>
std::vector<float> widened(const Storage* values, int64_t n) {
  std::vector<float> result(static_cast<size_t>(n));
  widen_to_f32(result.data(), values, n);
  return result;
}

template <typename Storage>
void check_and_widen_forward(float* out, const Storage* inp, const Storage* weight,
                             const float* bias, int64_t N, int64_t C, int64_t OC) {
  require_non_negative("matmul_forward", "N", N);
  require_non_negative("matmul_forward", "C", C);
  require_non_negative("matmul_forward", "OC", OC);
  const auto inp32 = widened(inp, N * C), weight32 = widened(weight, OC * C);
  matmul_forward(out, inp32.data(), weight32.data(), bias, N, C, OC);
}

template <typename Storage>
void check_and_widen_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                              const Storage* inp, const Storage* weight, int64_t N, int64_t C,
                              int64_t OC) {
  require_non_negative("matmul_backward", "N", N);
  require_non_negative("matmul_backward", "C", C);
  require_non_negative("matmul_backward", "OC", OC);
  const auto inp32 = widened(inp, N * C), weight32 = widened(weight, OC * C);
  matmul_backward(dinp, dweight, dbias, dout, inp32.data(), weight32.data(), N, C, OC);
}

}  // namespace

void widen_to_f32(float* out, const bf16_t* inp, int64_t n) {
  require_non_negative("widen_to_f32", "n", n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = bf16_bits_to_f32(inp[i].bits);
}

void widen_to_f32(float* out, const f16_t* inp, int64_t n) {
  require_non_negative("widen_to_f32", "n", n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = f16_bits_to_f32(inp[i].bits);
}

void matmul_forward(float* out, const bf16_t* inp, const bf16_t* weight, const float* bias,
                    int64_t N, int64_t C, int64_t OC) {
#if defined(VRAMLAB_HAVE_CBLAS_SBGEMM)
  require_non_negative("matmul_forward", "N", N);
  require_non_negative("matmul_forward", "C", C);
  require_non_negative("matmul_forward", "OC", OC);
  require(N * C <= INT32_MAX && OC * C <= INT32_MAX && N * OC <= INT32_MAX, "matmul_forward",
          "operands exceed OpenBLAS's 32-bit index");
  if (N == 0 || OC == 0) return;
  if (C == 0 || bias != nullptr) {
    for (int64_t row = 0; row < N; row++) {
      for (int64_t o = 0; o < OC; o++) out[row * OC + o] = bias != nullptr ? bias[o] : 0.0f;
    }
  }
  if (C == 0) return;
  static_assert(sizeof(bf16_t) == sizeof(bfloat16));
  cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(N),
               static_cast<blasint>(OC), static_cast<blasint>(C), 1.0f,
               reinterpret_cast<const bfloat16*>(inp), static_cast<blasint>(C),
               reinterpret_cast<const bfloat16*>(weight), static_cast<blasint>(C),
               bias != nullptr ? 1.0f : 0.0f, out, static_cast<blasint>(OC));
#else
  check_and_widen_forward(out, inp, weight, bias, N, C, OC);
#endif
}

void matmul_forward(float* out, const f16_t* inp, const f16_t* weight, const float* bias, int64_t N,
                    int64_t C, int64_t OC) {
  check_and_widen_forward(out, inp, weight, bias, N, C, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const bf16_t* inp, const bf16_t* weight, int64_t N, int64_t C, int64_t OC) {
  check_and_widen_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const f16_t* inp,
                     const f16_t* weight, int64_t N, int64_t C, int64_t OC) {
  check_and_widen_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

}  // namespace vramlab::kernels::cpu
