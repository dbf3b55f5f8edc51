// Embedding lookup and its deterministic scatter-add backward.
#include "kernels/cpu/embedding.h"

#include <vector>

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/storage.h"

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

template <typename A>
void embedding_forward(A* out, const int32_t* tokens, const A* wte, const A* wpe, int64_t B,
                       int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_forward", tokens, B, T, C, V);
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * T; bt++) {
    const A* token_row = wte + static_cast<int64_t>(tokens[bt]) * C;  // (C)
    A* out_row = out + bt * C;                                        // (C)
    if (wpe != nullptr) {
      const A* position_row = wpe + (bt % T) * C;  // (C)
#pragma omp simd
      for (int64_t c = 0; c < C; c++)
        out_row[c] = narrow<A>(widen(token_row[c]) + widen(position_row[c]));
    } else {
#pragma omp simd
      for (int64_t c = 0; c < C; c++) out_row[c] = token_row[c];
    }
  }
}

template <typename A, typename G>
void embedding_backward(G* dwte, G* dwpe, const A* dout, const int32_t* tokens, int64_t B,
                        int64_t T, int64_t C, int64_t V) {
  check_arguments("embedding_backward", tokens, B, T, C, V);
  if constexpr (!kNarrowStorage<G>) {
#pragma omp parallel for schedule(static)
    for (int64_t block = 0; block < (C + kChannelBlock - 1) / kChannelBlock; block++) {
      const int64_t begin = block * kChannelBlock;
      const int64_t end = begin + kChannelBlock < C ? begin + kChannelBlock : C;
      for (int64_t bt = 0; bt < B * T; bt++) {
        float* dtoken_row = dwte + static_cast<int64_t>(tokens[bt]) * C;  // (C)
        const A* dout_row = dout + bt * C;                                // (C)
#pragma omp simd
        for (int64_t c = begin; c < end; c++) dtoken_row[c] += widen(dout_row[c]);
      }
    }
  } else {
    // A 16-bit dwte must be rounded once per step, not once per occurrence of a token: each
    // distinct token gets an f32 slot that sums its rows in the same order as the f32 kernel.
    std::vector<int64_t> slot_of_token(static_cast<size_t>(V), -1);  // (V)
    std::vector<int64_t> slot(static_cast<size_t>(B * T));           // (B·T)
    std::vector<int32_t> slot_token;                                 // (slots)
    for (int64_t bt = 0; bt < B * T; bt++) {
      int64_t& s = slot_of_token[static_cast<size_t>(tokens[bt])];
      if (s < 0) {
        s = static_cast<int64_t>(slot_token.size());
        slot_token.push_back(tokens[bt]);
      }
      slot[static_cast<size_t>(bt)] = s;
    }
    const auto slots = static_cast<int64_t>(slot_token.size());
#pragma omp parallel
    {
      std::vector<float> sums(static_cast<size_t>(slots * kChannelBlock));  // (slots, block)
#pragma omp for schedule(static)
      for (int64_t block = 0; block < (C + kChannelBlock - 1) / kChannelBlock; block++) {
        const int64_t begin = block * kChannelBlock;
        const int64_t end = begin + kChannelBlock < C ? begin + kChannelBlock : C;
        for (int64_t j = 0; j < slots; j++) {
          const G* row = dwte + static_cast<int64_t>(slot_token[static_cast<size_t>(j)]) * C;
          for (int64_t c = begin; c < end; c++) sums[j * kChannelBlock + c - begin] = widen(row[c]);
        }
        for (int64_t bt = 0; bt < B * T; bt++) {
          float* sum_row = sums.data() + slot[static_cast<size_t>(bt)] * kChannelBlock - begin;
          const A* dout_row = dout + bt * C;  // (C)
#pragma omp simd
          for (int64_t c = begin; c < end; c++) sum_row[c] += widen(dout_row[c]);
        }
        for (int64_t j = 0; j < slots; j++) {
          G* row = dwte + static_cast<int64_t>(slot_token[static_cast<size_t>(j)]) * C;
          for (int64_t c = begin; c < end; c++)
            row[c] = narrow<G>(sums[j * kChannelBlock + c - begin]);
        }
      }
    }
  }
  if (dwpe == nullptr) return;
#pragma omp parallel
  {
    std::vector<float> sums(kNarrowStorage<G> ? static_cast<size_t>(C) : 0);  // (C)
#pragma omp for schedule(static)
    for (int64_t t = 0; t < T; t++) {
      G* dposition_row = dwpe + t * C;  // (C)
      float* sum_row;
      if constexpr (kNarrowStorage<G>) {
        sum_row = sums.data();
        for (int64_t c = 0; c < C; c++) sum_row[c] = widen(dposition_row[c]);
      } else {
        sum_row = dposition_row;
      }
      for (int64_t b = 0; b < B; b++) {
        const A* dout_row = dout + (b * T + t) * C;  // (C)
#pragma omp simd
        for (int64_t c = 0; c < C; c++) sum_row[c] += widen(dout_row[c]);
      }
      if constexpr (kNarrowStorage<G>) {
        for (int64_t c = 0; c < C; c++) dposition_row[c] = narrow<G>(sum_row[c]);
      }
    }
  }
}

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                       int64_t B, int64_t T, int64_t C, int64_t V) {
  embedding_forward<float>(out, tokens, wte, wpe, B, T, C, V);
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                        int64_t B, int64_t T, int64_t C, int64_t V) {
  embedding_backward<float, float>(dwte, dwpe, dout, tokens, B, T, C, V);
}

#define VRAMLAB_INSTANTIATE_STORAGE(A)                                                         \
  template void embedding_forward<A>(A*, const int32_t*, const A*, const A*, int64_t, int64_t, \
                                     int64_t, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t)
#undef VRAMLAB_INSTANTIATE_STORAGE
#define VRAMLAB_INSTANTIATE_STORAGE(A, G)                                                    \
  template void embedding_backward<A, G>(G*, G*, const A*, const int32_t*, int64_t, int64_t, \
                                         int64_t, int64_t);
VRAMLAB_INSTANTIATE_STORAGE(float, float)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t, bf16_t)
VRAMLAB_INSTANTIATE_STORAGE(bf16_t, float)
VRAMLAB_INSTANTIATE_STORAGE(f16_t, f16_t)
VRAMLAB_INSTANTIATE_STORAGE(f16_t, float)
#undef VRAMLAB_INSTANTIATE_STORAGE

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
