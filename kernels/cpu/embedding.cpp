// Embedding lookup and its deterministic scatter-add backward.
#include "kernels/cpu/embedding.h"

#include "kernels/cpu/kernel_checks.h"

namespace vramlab::kernels::cpu {
namespace {

constexpr int64_t kChannelBlock = 64;

void check_arguments(const char* op, const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                     int64_t V) {
  require_non_negative(op, "B", B);
  require_non_negative(op, "T", T);
  require_non_negative(op, "C", C);
  require_non_negative(op, "V", V);
  for (int64_t i = 0; i < B * T; i++) {
    require(tokens[i] >= 0 && tokens[i] < V, op,
            "token " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                " is outside [0, V = " + std::to_string(V) + ")");
  }
}

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_forward", tokens, B, T, C, V);
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * T; bt++) {
    const float* token_row = wte + static_cast<int64_t>(tokens[bt]) * C;
    float* out_row = out + bt * C;
    if (wpe != nullptr) {
      const float* position_row = wpe + (bt % T) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; c++) out_row[c] = token_row[c] + position_row[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < C; c++) out_row[c] = token_row[c];
    }
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int64_t B, int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_backward", tokens, B, T, C, V);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (C + kChannelBlock - 1) / kChannelBlock; block++) {
    const int64_t begin = block * kChannelBlock;
    const int64_t end = begin + kChannelBlock < C ? begin + kChannelBlock : C;
    for (int64_t bt = 0; bt < B * T; bt++) {
      float* dtoken_row = dwte + static_cast<int64_t>(tokens[bt]) * C;
      const float* dout_row = dout + bt * C;
#pragma omp simd
      for (int64_t c = begin; c < end; c++) dtoken_row[c] += dout_row[c];
    }
  }
  if (dwpe == nullptr) return;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; t++) {
    float* dposition_row = dwpe + t * C;
    for (int64_t b = 0; b < B; b++) {
      const float* dout_row = dout + (b * T + t) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; c++) dposition_row[c] += dout_row[c];
    }
  }
}

template <typename Real>
void embedding_forward_reference(Real* out, const int32_t* tokens, const Real* wte, const Real* wpe,
                                 int64_t B, int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_forward_reference", tokens, B, T, C, V);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      const int64_t token = tokens[b * T + t];
      for (int64_t c = 0; c < C; c++) {
        out[(b * T + t) * C + c] = wte[token * C + c] + (wpe != nullptr ? wpe[t * C + c] : Real(0));
      }
    }
  }
}

template <typename Real>
void embedding_backward_reference(Real* dwte, Real* dwpe, const Real* dout, const int32_t* tokens,
                                  int64_t B, int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_backward_reference", tokens, B, T, C, V);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < T; t++) {
      const int64_t token = tokens[b * T + t];
      for (int64_t c = 0; c < C; c++) {
        dwte[token * C + c] += dout[(b * T + t) * C + c];
        if (dwpe != nullptr) dwpe[t * C + c] += dout[(b * T + t) * C + c];
      }
    }
  }
}

template void embedding_forward_reference<float>(float*, const int32_t*, const float*, const float*,
                                                 int64_t, int64_t, int64_t, int64_t);
template void embedding_forward_reference<double>(double*, const int32_t*, const double*,
                                                  const double*, int64_t, int64_t, int64_t,
                                                  int64_t);
template void embedding_backward_reference<float>(float*, float*, const float*, const int32_t*,
                                                  int64_t, int64_t, int64_t, int64_t);
template void embedding_backward_reference<double>(double*, double*, const double*, const int32_t*,
                                                   int64_t, int64_t, int64_t, int64_t);

}  // namespace vramlab::kernels::cpu
