/// \file
/// \brief Internals shared by the optimizer kernels (optimizer.cpp, optimizer_8bit.cpp): how a
/// scaled gradient is formed, how an updated parameter is rounded, and AdamW's per-element
/// arithmetic, written once so that every optimizer treats them exactly as adamw_update does.
/// Not part of the kernel API.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"

#include "kernels/cpu/kernel_set.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu::detail {

/// Elements per chunk of the scaled gradient (see for_each_gradient).
inline constexpr int64_t kScaledBlock = 256;

/// The updated parameter rounded into P (see ParameterRounding); the test on `stochastic` is
/// compiled only for 16-bit P. \p i is the element's index, the stream position of its bits.
template <typename P>
inline P round_parameter(float x, const ParameterRounding& rounding, int64_t i) {
  if constexpr (std::is_same_v<P, bf16_t>) {
    if (rounding.stochastic)
      return bf16_t{
          f32_to_bf16_bits_stochastic(x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  } else if constexpr (std::is_same_v<P, f16_t>) {
    if (rounding.stochastic)
      return f16_t{
          f32_to_f16_bits_stochastic(x, stochastic_bits(rounding.seed, static_cast<uint64_t>(i)))};
  }
  return narrow<P>(x);
}

/// Writes scaled[j] = grad_multiplier · widen(grad[j]) rounded to f32, j < count: the scaled
/// gradients go through memory so that GCC cannot fuse the product into the update's FMAs
/// (fma(multiplier, grad, ·)); fused, the update would no longer be the f32 kernel's on the
/// unscaled gradient (other bits, and other bits again where the loop runs scalar).
template <typename Gr>
[[gnu::always_inline]] inline void scale_gradient(float* scaled, const Gr* grad, int64_t count,
                                                  float grad_multiplier) {
#pragma omp simd
  for (int64_t j = 0; j < count; j++) scaled[j] = grad_multiplier * widen(grad[j]);
}

// Note [Vector paths at run time]
// The elementwise optimizers (AdamW, SGD, Lion) are one loop body each, run by for_each_gradient
// over [0, n) in chunks spread over the threads. A chunk takes one of three paths (VectorPath in
// kernel_set.h): the body vectorised for the kernels' compiled target (AVX2 on the x86-64-v3
// build), the same source compiled again inside a function whose target attribute adds AVX-512
// (512-bit vectors preferred), taken when the CPU has it, or a plain loop that calls the body
// one element at a time through a function that is never inlined (so nothing vectorises it).
// The body is inlined into each path's function and compiled with that function's instructions;
// an inline function it calls and the compiler keeps out of line is compiled once, for the
// build's target, so no AVX-512 code can reach a CPU without it (which a separate translation
// unit compiled with -mavx512f would risk: the linker keeps one copy of each inline function). The
// paths compute the same bits: each element's arithmetic is independent of the others, IEEE
// square root and division are exact to the rounding on every path, and the compiled target
// already has FMA, so the compiler fuses the same multiply-adds on all three (the paths are
// offered only then: on a generic build the compiled path is the only one). A chunk is a
// multiple of any vector's width and of kScaledBlock. DeepSpeed's CPU-Adam (csrc/includes/simd.h)
// picks AVX-512 or AVX2 at build time with intrinsics; the loop is at the memory floor either way
// (Note [CPU AdamW: at the memory floor] in optimizer.cpp), where the wider vectors save
// instructions, not time.
/// 1 where the AVX-512 path is compiled (Note [Vector paths at run time]), else 0.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && defined(__FMA__)
#define VRAMLAB_OPTIMIZER_AVX512_PATH 1
#if defined(__clang__)
#define VRAMLAB_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), min_vector_width(512)))
#else
#define VRAMLAB_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512")))
#endif
#else
#define VRAMLAB_OPTIMIZER_AVX512_PATH 0
#endif

/// Elements per chunk of for_each_gradient: a multiple of kScaledBlock and of every vector width.
inline constexpr int64_t kGradientChunk = 16 * 1024;

/// Calls body(i, g) for i in [begin, end), vectorised: g = widen(grad[i]) (kScaled false: the f32
/// kernels' loop) or g = grad_multiplier · widen(grad[i]) rounded to f32 (kScaled true, through
/// scale_gradient in chunks of kScaledBlock). Inlined into each path's function.
template <bool kScaled, typename Gr, typename Body>
[[gnu::always_inline]] inline void gradient_range(const Gr* grad, int64_t begin, int64_t end,
                                                  float grad_multiplier, const Body& body) {
  if constexpr (!kScaled) {
#pragma omp simd
    for (int64_t i = begin; i < end; i++) body(i, widen(grad[i]));
  } else {
    for (int64_t first = begin; first < end; first += kScaledBlock) {
      const int64_t count = end - first < kScaledBlock ? end - first : kScaledBlock;
      float scaled[kScaledBlock];  // (kScaledBlock) multiplier · grad of this block
      scale_gradient(scaled, grad + first, count, grad_multiplier);
#pragma omp simd
      for (int64_t j = 0; j < count; j++) body(first + j, scaled[j]);
    }
  }
}

/// gradient_range compiled for the kernels' target: VectorPath::compiled.
template <bool kScaled, typename Gr, typename Body>
void gradient_range_compiled(const Gr* grad, int64_t begin, int64_t end, float grad_multiplier,
                             const Body& body) {
  gradient_range<kScaled>(grad, begin, end, grad_multiplier, body);
}

#if VRAMLAB_OPTIMIZER_AVX512_PATH
/// gradient_range compiled with AVX-512: VectorPath::avx512.
template <bool kScaled, typename Gr, typename Body>
VRAMLAB_TARGET_AVX512 void gradient_range_avx512(const Gr* grad, int64_t begin, int64_t end,
                                                 float grad_multiplier, const Body& body) {
  gradient_range<kScaled>(grad, begin, end, grad_multiplier, body);
}
#endif

/// The plain path's one element: never inlined, so the loop around it stays scalar.
template <typename Body>
[[gnu::noinline]] void body_at(const Body& body, int64_t i, float g) {
  body(i, g);
}

/// gradient_range one element at a time, no vectors: VectorPath::plain.
template <bool kScaled, typename Gr, typename Body>
void gradient_range_plain(const Gr* grad, int64_t begin, int64_t end, float grad_multiplier,
                          const Body& body) {
  for (int64_t i = begin; i < end; i++) {
    // The product is rounded to f32 before the body sees it, as scale_gradient's store does.
    const float g = kScaled ? grad_multiplier * widen(grad[i]) : widen(grad[i]);
    body_at(body, i, g);
  }
}

/// Calls body(i, g) for every element in parallel on the path optimizer_vector_path() names
/// (Note [Vector paths at run time]), g as in gradient_range.
template <bool kScaled, typename Gr, typename Body>
void for_each_gradient(const Gr* grad, int64_t n, float grad_multiplier, const Body& body) {
  using Range = void (*)(const Gr*, int64_t, int64_t, float, const Body&);
  Range range = &gradient_range_compiled<kScaled, Gr, Body>;
  switch (optimizer_vector_path()) {
    case VectorPath::plain:
      range = &gradient_range_plain<kScaled, Gr, Body>;
      break;
    case VectorPath::avx512:
#if VRAMLAB_OPTIMIZER_AVX512_PATH
      range = &gradient_range_avx512<kScaled, Gr, Body>;
#endif
      break;
    case VectorPath::compiled:
      break;
  }
  const int64_t chunks = (n + kGradientChunk - 1) / kGradientChunk;
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; chunk++) {
    const int64_t begin = chunk * kGradientChunk;
    range(grad, begin, begin + kGradientChunk < n ? begin + kGradientChunk : n, grad_multiplier,
          body);
  }
}

/// AdamW's per-element f32 arithmetic (PyTorch's torch.optim.AdamW order: decoupled decay of the
/// old parameter, then the bias-corrected step), its step constants computed once per call.
struct AdamWArithmetic {
  float beta1;          ///< decay of the first moment
  float beta2;          ///< decay of the second moment
  float learning_rate;  ///< step size
  float epsilon;        ///< added to √v̂
  float correction1;  ///< 1 / (1 - β1^step), rounded once from double
  float correction2;  ///< 1 / (1 - β2^step), rounded once from double
  float decay;        ///< 1 - lr·weight_decay

  /// \param hp the step's hyper-parameters. \param step 1-based, for the bias corrections.
  AdamWArithmetic(const AdamWHyperparameters& hp, int64_t step)
      : beta1(hp.beta1),
        beta2(hp.beta2),
        learning_rate(hp.learning_rate),
        epsilon(hp.epsilon),
        correction1(static_cast<float>(
            1.0 / (1.0 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(step))))),
        correction2(static_cast<float>(
            1.0 / (1.0 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(step))))),
        decay(1.0f - hp.learning_rate * hp.weight_decay) {}

  /// m ← β1·m + (1-β1)·g.
  float first_moment(float m, float g) const { return beta1 * m + (1.0f - beta1) * g; }
  /// v ← β2·v + (1-β2)·g².
  float second_moment(float v, float g) const { return beta2 * v + (1.0f - beta2) * g * g; }
  /// The updated parameter from the old one and the new moments.
  float parameter(float param, float m_new, float v_new) const {
    return param * decay -
           learning_rate * (m_new * correction1) / (std::sqrt(v_new * correction2) + epsilon);
  }
};

}  // namespace vramlab::kernels::cpu::detail
