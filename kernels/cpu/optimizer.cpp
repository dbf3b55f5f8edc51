// AdamW, SGD(momentum) and Lion updates (elementwise, parallel, vectorized), Adam-mini (parallel
// over blocks) and Adafactor (one tensor, parallel over rows and columns).
#include "kernels/cpu/optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype/convert.h"
#include "common/dtype/counter_rng.h"
#include "common/platform/errors.h"

#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/optimizer_detail.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

void check_adamw(const char* op, int64_t n, int64_t step) {
  require_non_negative(op, "n", n);
  require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
}

void check_sgd(const char* op, int64_t n, bool has_buffer, double momentum) {
  require_non_negative(op, "n", n);
  require(momentum == 0.0 || has_buffer, op,
          "momentum = " + std::to_string(momentum) + " needs a momentum buffer");
}

}  // namespace

namespace {

using detail::for_each_gradient;
using detail::round_parameter;

// The loops without a working copy take a null pointer of this one type whatever W is, so each
// is compiled once per (P, Gr, S) and not once per working dtype: a quarter fewer loops in the
// file that takes longest to compile.
struct NoWorkingCopy {};
constexpr NoWorkingCopy* kNoWorkingCopy = nullptr;

// Note [CPU AdamW: at the memory floor]
// An offloaded optimizer step (ZeRO-Offload) runs this loop on the host every step, and its speed
// there is the question (DeepSpeed wrote a CPU-Adam with AVX-512/AVX2 intrinsics for it). Each
// fp32 element reads p, g, m and v and writes p, m and v: 28 bytes against about 15 flops, so the
// loop is bound by memory bandwidth long before the vector units. GCC vectorises the `omp simd`
// loop for the kernels' target (AVX2, kernels/cpu/CMakeLists.txt) and again for AVX-512, which the
// CPU picks at run time (Note [Vector paths at run time] in optimizer_detail.h), and the step runs
// at the floor on either: on 2 AMD EPYC cores for 100M parameters, the AVX-512 path 39.2 ms, the
// AVX2 one 39.7 ms, the plain loop 108.2 ms, against a floor of 38.1 ms (the same arrays with the
// same traffic and no arithmetic: 1.03x), PyTorch 2.15's fused CPU AdamW 40.0 ms and its default
// one 350.2 ms, 8.9x slower (bench/compare_cpu_adamw.py; on a 2-core Xeon earlier, 1.08x the
// floor). Wider vectors or more unrolling cannot move a loop that waits for memory; what can is
// fewer bytes (16-bit states, lesson 09) or overlap with the copies.

// kWorking: the working copy is rewritten with round(param) after the update.
template <bool kScaled, bool kWorking, typename P, typename Gr, typename S, typename W>
void adamw_loop(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                const AdamWHyperparameters& hp, int64_t step, float grad_multiplier,
                const ParameterRounding& rounding) {
  const detail::AdamWArithmetic adamw(hp, step);
  for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float g) {
    const float m_new = adamw.first_moment(widen(m[i]), g);
    const float v_new = adamw.second_moment(widen(v[i]), g);
    m[i] = narrow<S>(m_new);
    v[i] = narrow<S>(v_new);
    const float updated = adamw.parameter(widen(param[i]), m_new, v_new);
    param[i] = round_parameter<P>(updated, rounding, i);
    if constexpr (kWorking) working[i] = narrow<W>(updated);
  });
}

template <bool kScaled, bool kWorking, typename P, typename Gr, typename S, typename W>
void sgd_loop(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
              float learning_rate, float momentum, float weight_decay, bool nesterov,
              float grad_multiplier, const ParameterRounding& rounding) {
  if (momentum == 0.0f) {
    for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float g) {
      const float p = widen(param[i]);
      const float updated = p - learning_rate * (g + weight_decay * p);
      param[i] = round_parameter<P>(updated, rounding, i);
      if constexpr (kWorking) working[i] = narrow<W>(updated);
    });
    return;
  }
  for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float unscaled) {
    const float p = widen(param[i]);
    const float g = unscaled + weight_decay * p;
    const float buffer = momentum * widen(momentum_buffer[i]) + g;
    momentum_buffer[i] = narrow<S>(buffer);
    const float updated = p - learning_rate * (nesterov ? g + momentum * buffer : buffer);
    param[i] = round_parameter<P>(updated, rounding, i);
    if constexpr (kWorking) working[i] = narrow<W>(updated);
  });
}

}  // namespace

template <typename P, typename Gr, typename S, typename W>
void adamw_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t n,
                  const AdamWHyperparameters& hp, const UpdateStep& at) {
  const auto& [step, grad_multiplier, rounding] = at;
  check_adamw("adamw_update", n, step);
  const bool scaled = grad_multiplier != 1.0f;
  if (working == nullptr) {
    if (scaled) {
      adamw_loop<true, false>(param, grad, m, v, kNoWorkingCopy, n, hp, step, grad_multiplier,
                              rounding);
    } else {
      adamw_loop<false, false>(param, grad, m, v, kNoWorkingCopy, n, hp, step, grad_multiplier,
                               rounding);
    }
  } else if (scaled) {
    adamw_loop<true, true>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
  } else {
    adamw_loop<false, true>(param, grad, m, v, working, n, hp, step, grad_multiplier, rounding);
  }
}

template <typename P, typename Gr, typename S, typename W>
void sgd_update(P* param, const Gr* grad, S* momentum_buffer, W* working, int64_t n,
                const SgdHyperparameters& hp, const UpdateStep& at) {
  const auto& [learning_rate, momentum, weight_decay, nesterov] = hp;
  const float grad_multiplier = at.grad_multiplier;
  const ParameterRounding& rounding = at.rounding;
  check_sgd("sgd_update", n, momentum_buffer != nullptr, momentum);
  const bool scaled = grad_multiplier != 1.0f;
  if (working == nullptr) {
    if (scaled) {
      sgd_loop<true, false>(param, grad, momentum_buffer, kNoWorkingCopy, n, learning_rate,
                            momentum, weight_decay, nesterov, grad_multiplier, rounding);
    } else {
      sgd_loop<false, false>(param, grad, momentum_buffer, kNoWorkingCopy, n, learning_rate,
                             momentum, weight_decay, nesterov, grad_multiplier, rounding);
    }
  } else if (scaled) {
    sgd_loop<true, true>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                         weight_decay, nesterov, grad_multiplier, rounding);
  } else {
    sgd_loop<false, true>(param, grad, momentum_buffer, working, n, learning_rate, momentum,
                          weight_decay, nesterov, grad_multiplier, rounding);
  }
}

namespace {

// sign(c) with sign(0) = 0 and sign(NaN) = NaN (c itself is returned for both).
inline float lion_sign(float c) {
  return c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : c);
}

template <bool kScaled, bool kWorking, typename P, typename Gr, typename S, typename W>
void lion_loop(P* param, const Gr* grad, S* m, W* working, int64_t n, const LionHyperparameters& hp,
               float grad_multiplier, const ParameterRounding& rounding) {
  const float beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate;
  const float decay = 1.0f - hp.learning_rate * hp.weight_decay;
  for_each_gradient<kScaled>(grad, n, grad_multiplier, [&](int64_t i, float g) {
    const float m_old = widen(m[i]);
    const float direction = lion_sign(beta1 * m_old + (1.0f - beta1) * g);
    m[i] = narrow<S>(beta2 * m_old + (1.0f - beta2) * g);
    const float updated = widen(param[i]) * decay - lr * direction;
    param[i] = round_parameter<P>(updated, rounding, i);
    if constexpr (kWorking) working[i] = narrow<W>(updated);
  });
}

// Adam-mini, one block after the other inside a thread, the blocks spread over threads: each
// block's mean of g² is summed in double in a fixed order (chunks of kScaledBlock, the vector
// lanes of the compiled loop), so the result does not depend on the thread count.
template <bool kWorking, typename P, typename Gr, typename S, typename W>
void adam_mini_loop(P* param, const Gr* grad, S* m, S* v, W* working, int64_t block_size,
                    int64_t count, const AdamWHyperparameters& hp, int64_t step,
                    float grad_multiplier, const ParameterRounding& rounding) {
  const detail::AdamWArithmetic adamw(hp, step);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < count; b++) {
    const int64_t first = b * block_size;
    float scaled[detail::kScaledBlock];  // (kScaledBlock) multiplier · grad of one chunk
    double square_sum = 0.0;
    for (int64_t begin = 0; begin < block_size; begin += detail::kScaledBlock) {
      const int64_t chunk = std::min(detail::kScaledBlock, block_size - begin);
      detail::scale_gradient(scaled, grad + first + begin, chunk, grad_multiplier);
      double chunk_sum = 0.0;
#pragma omp simd reduction(+ : chunk_sum)
      for (int64_t j = 0; j < chunk; j++)
        chunk_sum += static_cast<double>(scaled[j]) * static_cast<double>(scaled[j]);
      square_sum += chunk_sum;
    }
    const float mean_square = static_cast<float>(square_sum / static_cast<double>(block_size));
    const float v_new = adamw.beta2 * widen(v[b]) + (1.0f - adamw.beta2) * mean_square;
    v[b] = narrow<S>(v_new);
    for (int64_t begin = 0; begin < block_size; begin += detail::kScaledBlock) {
      const int64_t chunk = std::min(detail::kScaledBlock, block_size - begin);
      detail::scale_gradient(scaled, grad + first + begin, chunk, grad_multiplier);
#pragma omp simd
      for (int64_t j = 0; j < chunk; j++) {
        const int64_t i = first + begin + j;
        const float m_new = adamw.first_moment(widen(m[i]), scaled[j]);
        m[i] = narrow<S>(m_new);
        const float updated = adamw.parameter(widen(param[i]), m_new, v_new);
        param[i] = round_parameter<P>(updated, rounding, i);
        if constexpr (kWorking) working[i] = narrow<W>(updated);
      }
    }
  }
}

// Σ f(i) over [0, n) in double, in chunks of kSumChunk whose partial sums are added in chunk
// order: the chunks run in parallel, the result does not depend on the thread count.
constexpr int64_t kSumChunk = 4096;
template <typename Term>
double chunked_sum(int64_t n, const Term& term) {
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  double total = 0.0;
#pragma omp parallel for ordered schedule(static)
  for (int64_t c = 0; c < chunks; c++) {
    const int64_t begin = c * kSumChunk;
    const int64_t end = std::min(n, begin + kSumChunk);
    double partial = 0.0;
#pragma omp simd reduction(+ : partial)
    for (int64_t i = begin; i < end; i++) partial += term(i);
#pragma omp ordered
    total += partial;
  }
  return total;
}

// torch.lerp's formula (exact at weight 1): start + w·(end - start) below w = 0.5, else
// end - (end - start)·(1 - w).
inline float torch_lerp(float start, float end, float weight) {
  return weight < 0.5f ? start + weight * (end - start) : end - (end - start) * (1.0f - weight);
}

// The ε1 of AdafactorHyperparameters (< 0: the f32 machine epsilon, torch's None for f32).
inline double adafactor_epsilon1(const AdafactorHyperparameters& hp) {
  return hp.epsilon1 < 0.0f ? static_cast<double>(std::numeric_limits<float>::epsilon())
                            : static_cast<double>(hp.epsilon1);
}

void check_adafactor(const char* op, int64_t rows, int64_t cols, bool factored, int64_t step) {
  require(rows >= 1, op, "rows = " + std::to_string(rows) + " must be >= 1");
  require(cols >= 1, op, "cols = " + std::to_string(cols) + " must be >= 1");
  require(factored || rows == 1, op,
          "rows = " + std::to_string(rows) + " must be 1 when unfactored (a vector)");
  require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
}

void check_adam_mini(const char* op, int64_t block_size, int64_t count, int64_t step) {
  require(block_size >= 1, op, "block_size = " + std::to_string(block_size) + " must be >= 1");
  require_non_negative(op, "count", count);
  require(count <= std::numeric_limits<int64_t>::max() / block_size, op,
          "block_size · count = " + std::to_string(block_size) + " · " + std::to_string(count) +
              " overflows int64");
  require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
}

// The per-step scalars of torch.optim.Adafactor.
struct AdafactorStep {
  float beta2_weight;  // 1 - β2_t = t^τ, the weight of the new mean in the lerp
  double rho;          // ρ_t = min(γ, 1/√t)
  AdafactorStep(const AdafactorHyperparameters& hp, int64_t step) {
    const double t = static_cast<double>(step);
    beta2_weight = static_cast<float>(std::pow(t, static_cast<double>(hp.beta2_decay)));
    rho = std::min(static_cast<double>(hp.learning_rate), 1.0 / std::sqrt(t));
  }
};

// Adafactor on one tensor. g = grad_multiplier · widen(grad) is formed where it is used (no
// FMA can absorb the product: g only feeds squares in double and a division). Every sum is in
// double with a fixed order, so the result does not depend on the thread count.
template <bool kWorking, typename P, typename Gr, typename S, typename W>
void adafactor_loop(P* param, const Gr* grad, S* row_var, S* col_var, W* working, int64_t rows,
                    int64_t cols, bool factored, const AdafactorHyperparameters& hp, int64_t step,
                    float grad_multiplier, const ParameterRounding& rounding) {
  const int64_t n = rows * cols;
  const AdafactorStep constants(hp, step);
  const double epsilon1 = adafactor_epsilon1(hp);
  const auto square = [](float x) { return static_cast<double>(x) * static_cast<double>(x); };
  // α_t from the parameter before the step (and before the weight decay).
  const double param_rms = std::sqrt(
      chunked_sum(n, [&](int64_t i) { return square(widen(param[i])); }) / static_cast<double>(n));
  const double alpha = std::max(static_cast<double>(hp.epsilon2), param_rms) * constants.rho;

  float row_mean = 1.0f;  // mean(row_var) clamped at ε1, the denominator of V̂ (factored)
  if (factored) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      double sum = 0.0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; c++) sum += square(grad_multiplier * widen(grad[r * cols + c]));
      const float mean = static_cast<float>(sum / static_cast<double>(cols));
      row_var[r] = narrow<S>(torch_lerp(widen(row_var[r]), mean, constants.beta2_weight));
    }
    // Columns split over threads, each column summed over the rows in row order.
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < cols; c++) {
      double sum = 0.0;
      for (int64_t r = 0; r < rows; r++) sum += square(grad_multiplier * widen(grad[r * cols + c]));
      const float mean = static_cast<float>(sum / static_cast<double>(rows));
      col_var[c] = narrow<S>(torch_lerp(widen(col_var[c]), mean, constants.beta2_weight));
    }
    double row_sum = 0.0;
    for (int64_t r = 0; r < rows; r++) row_sum += static_cast<double>(widen(row_var[r]));
    row_mean = static_cast<float>(std::max(row_sum / static_cast<double>(rows), epsilon1));
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t c = 0; c < cols; c++) {
      const float g = grad_multiplier * widen(grad[c]);
      row_var[c] = narrow<S>(torch_lerp(widen(row_var[c]), g * g, constants.beta2_weight));
    }
  }
  // U = g / √max(V̂, ε1²) of row r, column c; recomputed in both passes below rather than kept
  // in an (n) buffer.
  const float floor = static_cast<float>(epsilon1 * epsilon1);
  const auto update = [&](int64_t r, int64_t c) {
    const float estimate =
        factored ? widen(row_var[r]) * widen(col_var[c]) / row_mean : widen(row_var[c]);
    return grad_multiplier * widen(grad[r * cols + c]) / std::sqrt(std::max(estimate, floor));
  };
  std::vector<double> row_square_sums(static_cast<size_t>(rows));  // (rows) Σ_c U² per row
  if (rows == 1) {
    row_square_sums[0] = chunked_sum(cols, [&](int64_t c) { return square(update(0, c)); });
  } else {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      double sum = 0.0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < cols; c++) sum += square(update(r, c));
      row_square_sums[static_cast<size_t>(r)] = sum;
    }
  }
  double update_square_sum = 0.0;
  for (const double sum : row_square_sums) update_square_sum += sum;
  const double update_rms = std::sqrt(update_square_sum / static_cast<double>(n));
  const double denominator = std::max(1.0, update_rms / static_cast<double>(hp.clip_threshold));
  const float step_size = static_cast<float>(alpha / denominator);
  const float decay = 1.0f - hp.learning_rate * hp.weight_decay;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++) {
      const int64_t i = r * cols + c;
      const float updated = widen(param[i]) * decay - step_size * update(r, c);
      param[i] = round_parameter<P>(updated, rounding, i);
      if constexpr (kWorking) working[i] = narrow<W>(updated);
    }
  }
}

}  // namespace

template <typename P, typename Gr, typename S, typename W>
void lion_update(P* param, const Gr* grad, S* m, W* working, int64_t n,
                 const LionHyperparameters& hp, const UpdateStep& at) {
  require_non_negative("lion_update", "n", n);
  const float grad_multiplier = at.grad_multiplier;
  const ParameterRounding& rounding = at.rounding;
  const bool scaled = grad_multiplier != 1.0f;
  if (working == nullptr) {
    if (scaled) {
      lion_loop<true, false>(param, grad, m, kNoWorkingCopy, n, hp, grad_multiplier, rounding);
    } else {
      lion_loop<false, false>(param, grad, m, kNoWorkingCopy, n, hp, grad_multiplier, rounding);
    }
  } else if (scaled) {
    lion_loop<true, true>(param, grad, m, working, n, hp, grad_multiplier, rounding);
  } else {
    lion_loop<false, true>(param, grad, m, working, n, hp, grad_multiplier, rounding);
  }
}

template <typename P, typename Gr, typename S, typename W>
void adam_mini_update(P* param, const Gr* grad, S* m, S* v, W* working, int64_t block_size,
                      int64_t count, const AdamWHyperparameters& hp, const UpdateStep& at) {
  const auto& [step, grad_multiplier, rounding] = at;
  check_adam_mini("adam_mini_update", block_size, count, step);
  if (block_size == 1) {
    // One v per element: the mean of one g² is g², and Adam-mini is AdamW, bit for bit.
    adamw_update(param, grad, m, v, working, count, hp, at);
  } else if (working != nullptr) {
    adam_mini_loop<true>(param, grad, m, v, working, block_size, count, hp, step, grad_multiplier,
                         rounding);
  } else {
    adam_mini_loop<false>(param, grad, m, v, kNoWorkingCopy, block_size, count, hp, step,
                          grad_multiplier, rounding);
  }
}

template <typename P, typename Gr, typename S, typename W>
void adafactor_update(P* param, const Gr* grad, S* row_var, S* col_var, W* working, int64_t rows,
                      int64_t cols, bool factored, const AdafactorHyperparameters& hp,
                      const UpdateStep& at) {
  const auto& [step, grad_multiplier, rounding] = at;
  check_adafactor("adafactor_update", rows, cols, factored, step);
  require(
      rows <= std::numeric_limits<int64_t>::max() / cols, "adafactor_update",
      "rows · cols = " + std::to_string(rows) + " · " + std::to_string(cols) + " overflows int64");
  if (working != nullptr) {
    adafactor_loop<true>(param, grad, row_var, col_var, working, rows, cols, factored, hp, step,
                         grad_multiplier, rounding);
  } else {
    adafactor_loop<false>(param, grad, row_var, col_var, kNoWorkingCopy, rows, cols, factored, hp,
                          step, grad_multiplier, rounding);
  }
}

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                  const AdamWHyperparameters& hp, int64_t step) {
  adamw_update<float, float, float, bf16_t>(param, grad, m, v, nullptr, n, hp, {.step = step});
}

void sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                const SgdHyperparameters& hp) {
  sgd_update<float, float, float, bf16_t>(param, grad, momentum_buffer, nullptr, n, hp, {});
}

#define VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, W)                                                 \
  template void adamw_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t,                      \
                                          const AdamWHyperparameters&, const UpdateStep&);         \
  template void sgd_update<P, Gr, S, W>(P*, const Gr*, S*, W*, int64_t, const SgdHyperparameters&, \
                                        const UpdateStep&);                                        \
  template void lion_update<P, Gr, S, W>(P*, const Gr*, S*, W*, int64_t,                           \
                                         const LionHyperparameters&, const UpdateStep&);           \
  template void adam_mini_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t, int64_t,         \
                                              const AdamWHyperparameters&, const UpdateStep&);     \
  template void adafactor_update<P, Gr, S, W>(P*, const Gr*, S*, S*, W*, int64_t, int64_t, bool,   \
                                              const AdafactorHyperparameters&, const UpdateStep&);
#define VRAMLAB_INSTANTIATE_WORKING(P, Gr, S)     \
  VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, bf16_t) \
  VRAMLAB_INSTANTIATE_OPTIMIZER(P, Gr, S, f16_t)
#define VRAMLAB_INSTANTIATE_STATE(P, Gr)    \
  VRAMLAB_INSTANTIATE_WORKING(P, Gr, float) \
  VRAMLAB_INSTANTIATE_WORKING(P, Gr, bf16_t)
#define VRAMLAB_INSTANTIATE_GRAD(P)    \
  VRAMLAB_INSTANTIATE_STATE(P, float)  \
  VRAMLAB_INSTANTIATE_STATE(P, bf16_t) \
  VRAMLAB_INSTANTIATE_STATE(P, f16_t)
VRAMLAB_INSTANTIATE_GRAD(float)
VRAMLAB_INSTANTIATE_GRAD(bf16_t)
#undef VRAMLAB_INSTANTIATE_GRAD
#undef VRAMLAB_INSTANTIATE_STATE
#undef VRAMLAB_INSTANTIATE_WORKING
#undef VRAMLAB_INSTANTIATE_OPTIMIZER

template <typename Real>
void adamw_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t n,
                            const AdamWHyperparameters& hp, int64_t step) {
  check_adamw("adamw_update_reference", n, step);
  const Real beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate, eps = hp.epsilon;
  const Real bias_correction1 = Real(1) - std::pow(beta1, static_cast<Real>(step));
  const Real bias_correction2 = Real(1) - std::pow(beta2, static_cast<Real>(step));
  for (int64_t i = 0; i < n; i++) {
    param[i] *= Real(1) - lr * static_cast<Real>(hp.weight_decay);
    m[i] = beta1 * m[i] + (Real(1) - beta1) * grad[i];
    v[i] = beta2 * v[i] + (Real(1) - beta2) * grad[i] * grad[i];
    const Real m_hat = m[i] / bias_correction1;
    const Real v_hat = v[i] / bias_correction2;
    param[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

template <typename Real>
void sgd_update_reference(Real* param, const Real* grad, Real* momentum_buffer, int64_t n,
                          Real learning_rate, Real momentum, Real weight_decay, bool nesterov) {
  check_sgd("sgd_update_reference", n, momentum_buffer != nullptr, static_cast<double>(momentum));
  for (int64_t i = 0; i < n; i++) {
    Real g = grad[i] + weight_decay * param[i];
    if (momentum != Real(0)) {
      momentum_buffer[i] = momentum * momentum_buffer[i] + g;
      g = nesterov ? g + momentum * momentum_buffer[i] : momentum_buffer[i];
    }
    param[i] -= learning_rate * g;
  }
}

template void adamw_update_reference<float>(float*, const float*, float*, float*, int64_t,
                                            const AdamWHyperparameters&, int64_t);
template void adamw_update_reference<double>(double*, const double*, double*, double*, int64_t,
                                             const AdamWHyperparameters&, int64_t);
template void sgd_update_reference<float>(float*, const float*, float*, int64_t, float, float,
                                          float, bool);
template void sgd_update_reference<double>(double*, const double*, double*, int64_t, double, double,
                                           double, bool);

template <typename Real>
void lion_update_reference(Real* param, const Real* grad, Real* m, int64_t n,
                           const LionHyperparameters& hp) {
  require_non_negative("lion_update_reference", "n", n);
  const Real beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate;
  for (int64_t i = 0; i < n; i++) {
    const Real c = beta1 * m[i] + (Real(1) - beta1) * grad[i];
    const Real direction = c > Real(0) ? Real(1) : (c < Real(0) ? Real(-1) : c);
    param[i] = param[i] * (Real(1) - lr * static_cast<Real>(hp.weight_decay)) - lr * direction;
    m[i] = beta2 * m[i] + (Real(1) - beta2) * grad[i];
  }
}

template <typename Real>
void adam_mini_update_reference(Real* param, const Real* grad, Real* m, Real* v, int64_t block_size,
                                int64_t count, const AdamWHyperparameters& hp, int64_t step) {
  check_adam_mini("adam_mini_update_reference", block_size, count, step);
  const Real beta1 = hp.beta1, beta2 = hp.beta2, lr = hp.learning_rate, eps = hp.epsilon;
  const Real bias_correction1 = Real(1) - std::pow(beta1, static_cast<Real>(step));
  const Real bias_correction2 = Real(1) - std::pow(beta2, static_cast<Real>(step));
  for (int64_t b = 0; b < count; b++) {
    Real square_sum = 0;
    for (int64_t j = 0; j < block_size; j++) {
      const Real g = grad[b * block_size + j];
      square_sum += g * g;
    }
    v[b] = beta2 * v[b] + (Real(1) - beta2) * (square_sum / static_cast<Real>(block_size));
    const Real v_hat = v[b] / bias_correction2;
    for (int64_t j = 0; j < block_size; j++) {
      const int64_t i = b * block_size + j;
      param[i] *= Real(1) - lr * static_cast<Real>(hp.weight_decay);
      m[i] = beta1 * m[i] + (Real(1) - beta1) * grad[i];
      param[i] -= lr * (m[i] / bias_correction1) / (std::sqrt(v_hat) + eps);
    }
  }
}

template <typename Real>
void adafactor_update_reference(Real* param, const Real* grad, Real* row_var, Real* col_var,
                                int64_t rows, int64_t cols, bool factored,
                                const AdafactorHyperparameters& hp, int64_t step) {
  check_adafactor("adafactor_update_reference", rows, cols, factored, step);
  const Real t = static_cast<Real>(step);
  const Real weight = std::pow(t, static_cast<Real>(hp.beta2_decay));  // 1 - β2_t
  const Real rho = std::min(static_cast<Real>(hp.learning_rate), Real(1) / std::sqrt(t));
  const Real epsilon1 = static_cast<Real>(adafactor_epsilon1(hp));
  const Real n = static_cast<Real>(rows) * static_cast<Real>(cols);
  Real param_squares = 0;
  for (int64_t i = 0; i < rows * cols; i++) param_squares += param[i] * param[i];
  const Real alpha = std::max(static_cast<Real>(hp.epsilon2), std::sqrt(param_squares / n)) * rho;
  const auto lerp = [&](Real start, Real end) { return start + weight * (end - start); };
  Real row_mean = 1;
  if (factored) {
    for (int64_t r = 0; r < rows; r++) {
      Real sum = 0;
      for (int64_t c = 0; c < cols; c++) sum += grad[r * cols + c] * grad[r * cols + c];
      row_var[r] = lerp(row_var[r], sum / static_cast<Real>(cols));
    }
    for (int64_t c = 0; c < cols; c++) {
      Real sum = 0;
      for (int64_t r = 0; r < rows; r++) sum += grad[r * cols + c] * grad[r * cols + c];
      col_var[c] = lerp(col_var[c], sum / static_cast<Real>(rows));
    }
    Real row_sum = 0;
    for (int64_t r = 0; r < rows; r++) row_sum += row_var[r];
    row_mean = std::max(row_sum / static_cast<Real>(rows), epsilon1);
  } else {
    for (int64_t c = 0; c < cols; c++) row_var[c] = lerp(row_var[c], grad[c] * grad[c]);
  }
  std::vector<Real> update(static_cast<size_t>(rows * cols));  // (rows, cols) U
  Real update_squares = 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++) {
      const Real estimate = factored ? row_var[r] * col_var[c] / row_mean : row_var[c];
      const Real u = grad[r * cols + c] / std::sqrt(std::max(estimate, epsilon1 * epsilon1));
      update[static_cast<size_t>(r * cols + c)] = u;
      update_squares += u * u;
    }
  }
  const Real denominator =
      std::max(Real(1), std::sqrt(update_squares / n) / static_cast<Real>(hp.clip_threshold));
  for (int64_t i = 0; i < rows * cols; i++) {
    param[i] *= Real(1) - static_cast<Real>(hp.learning_rate) * static_cast<Real>(hp.weight_decay);
    param[i] -= alpha / denominator * update[static_cast<size_t>(i)];
  }
}

#define VRAMLAB_INSTANTIATE_LOW_MEMORY_REFERENCES(Real)                                          \
  template void lion_update_reference<Real>(Real*, const Real*, Real*, int64_t,                  \
                                            const LionHyperparameters&);                         \
  template void adam_mini_update_reference<Real>(Real*, const Real*, Real*, Real*, int64_t,      \
                                                 int64_t, const AdamWHyperparameters&, int64_t); \
  template void adafactor_update_reference<Real>(Real*, const Real*, Real*, Real*, int64_t,      \
                                                 int64_t, bool, const AdafactorHyperparameters&, \
                                                 int64_t);
VRAMLAB_INSTANTIATE_LOW_MEMORY_REFERENCES(float)
VRAMLAB_INSTANTIATE_LOW_MEMORY_REFERENCES(double)
#undef VRAMLAB_INSTANTIATE_LOW_MEMORY_REFERENCES

}  // namespace vramlab::kernels::cpu
