// Low-memory optimizer CUDA kernels (ops.h, "optimizers"): Lion, Adam-mini, Adafactor and 8-bit
// AdamW, with the CPU kernels' arithmetic (kernels/cpu/optimizer.h, optimizer_8bit.h) on widened
// values, each stored value rounded once, the optional 16-bit working copy rewritten from the
// stored parameter.
//   Lion       v1: a thread per element. v2: four elements per thread, one vector load per buffer
//              (scalar tail). Elementwise: v1 and v2 give the same bits.
//   Adam-mini  v1: a thread per Adam-mini block, the mean of g² summed in double in element
//              order. block_size 1 is AdamW (as on the CPU). v2: a thread block per Adam-mini block (a warp when the block is
//              shorter than 256): strided partial sums, warp shuffles, the warps' sums added in
//              warp order by one thread. Both orders depend only on block_size, so every run gives
//              the same bits; v1 and v2 differ by the double summation error of the mean, far
//              below the f32 rounding of the mean, so almost always not at all.
//   Adafactor  separate kernels in a fixed order (Note [Adafactor's reductions] below).
//   8-bit      v1: a thread per quantization block. v2: a thread block per quantization block, the
//              absmax by warp shuffles and shared memory, the nearest code by binary search in a
//              shared-memory copy of the map. A maximum does not depend on the order, and both
//              versions run the same per-element arithmetic: v1 and v2 give the same bits.
//
// Note [Adafactor's reductions]. One step of a rows × cols tensor is, in this order:
//   1. Σ param² in double (RMS(param before the step) in α_t)          -> scratch[0]
//   2. row_var ← lerp(row_var, row means of g²)   (unfactored: var ← lerp(var, g²))
//   3. col_var ← lerp(col_var, column means of g²)                      (factored only)
//   4. Σ row_var in double (its mean divides V̂)                         -> scratch[1]
//   5. Σ U² in double, U recomputed from g, row_var, col_var             -> scratch[2]
//   6. param ← param·(1 − γ·wd) − α·U / max(1, RMS(U)/d), U recomputed the same way.
// Each whole-tensor sum is one block (v1: one thread in element order; v2: 1024 threads, strided
// partials, warp shuffles): the partition depends only on the size, so the bits never depend on
// the schedule. A row mean is one thread per row in v1 and one warp per row in v2 (double, other
// order, rounded to f32 once); a column mean is one thread per column walking the rows in order in both (adjacent
// threads read adjacent columns, so the loads coalesce). The three sums live in a small device
// scratch: a __device__ array on a GPU (the launches of one call are ordered on the default
// stream), host doubles on the caller's stack under the emulator (emulated device memory is host
// memory and launches are synchronous), so no allocator sees them.
//
// Note [8-bit maps in constant memory]. The two dynamic maps (cpu::dynamic_quantization_map) are
// __constant__ arrays: 2 KiB, read by every thread, uploaded once per device with
// cudaMemcpyToSymbol. The emulator defines __constant__ as nothing, so there they are ordinary
// globals, filled once with std::call_once. The state stays n bytes per moment plus the absmax:
// the maps are code, not tensors.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/optimizer_8bit.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops/device_helpers.h"
#include "kernels/cuda/ops/optimizer_arithmetic.h"

#if !VRAMLAB_SIMT_EMULATED
#include "common/cuda/cuda_check.h"
#endif

namespace vramlab::kernels::cuda {
inline namespace VRAMLAB_CUDA_OPS_ABI {
namespace {

using detail::adamw_factors;
using detail::adamw_first_moment;
using detail::adamw_moments;
using detail::adamw_parameter;
using detail::adamw_second_moment;
using detail::AdamWFactors;
using detail::blocks_for;
using detail::check_working;
using detail::kElementwiseBlockThreads;
using detail::kFullWarpMask;
using detail::store_parameter;
using detail::widen;

// Threads of a v2 thread block that owns one Adam-mini or quantization block.
constexpr unsigned kOwnerBlockThreads = 256;
// Threads of a whole-tensor reduction (one block).
constexpr unsigned kReductionThreads = 1024;
// At most this many thread blocks; a grid-stride loop covers the rest.
constexpr std::int64_t kMaxGridBlocks = 65535;

unsigned grid_for(std::int64_t items) {
  return static_cast<unsigned>(std::min(items, kMaxGridBlocks));
}

// The working copy, when there is one, four stored parameters at a time.
template <class P>
__device__ inline void store_working_quad(void* working, DType working_type, const P* param,
                                          std::int64_t quad) {
  if (working == nullptr) return;
  const float4 stored = detail::load_quad(param, quad);
  if (working_type == DType::bf16) {
    detail::store_quad(static_cast<bf16_t*>(working), quad, stored);
  } else {
    detail::store_quad(static_cast<f16_t*>(working), quad, stored);
  }
}

// ---- Lion
// ----------------------------------------------------------------------------------------

struct LionFactors {
  float learning_rate, beta1, beta2;
  float decay;  // 1 − lr·weight_decay
};

// One Lion element: returns the updated parameter, m updated in place. sign(0) = 0 and a NaN
// direction stays NaN (the CPU kernel's sign).
__device__ inline float lion_element(float param, float grad, float& m, const LionFactors& f) {
  const float c = f.beta1 * m + (1.0f - f.beta1) * grad;
  const float direction = c > 0.0f ? 1.0f : c < 0.0f ? -1.0f : c;
  m = f.beta2 * m + (1.0f - f.beta2) * grad;
  return param * f.decay - f.learning_rate * direction;
}

template <class P, class R, class S>
__device__ inline void lion_at(P* param, const R* grad, S* m, void* working, DType working_type,
                               std::int64_t i, const LionFactors& f, float grad_multiplier,
                               const cpu::ParameterRounding& rounding) {
  float m_value = widen(m[i]);
  const float updated = lion_element(widen(param[i]), grad_multiplier * widen(grad[i]), m_value, f);
  m[i] = detail::narrow<S>(m_value);
  store_parameter(param, working, working_type, i, updated, rounding);
}

template <class P, class R, class S>
__global__ void lion_v1_kernel(P* param, const R* grad, S* m, void* working, DType working_type,
                               std::int64_t n, LionFactors f, float grad_multiplier,
                               cpu::ParameterRounding rounding) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) lion_at(param, grad, m, working, working_type, i, f, grad_multiplier, rounding);
}

template <class P, class R, class S>
__global__ void lion_v2_kernel(P* param, const R* grad, S* m, void* working, DType working_type,
                               std::int64_t n, LionFactors f, float grad_multiplier) {
  const std::int64_t quad = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t quads = n / 4;
  if (quad < quads) {
    const float4 p = detail::load_quad(param, quad), g = detail::load_quad(grad, quad);
    const float4 m4 = detail::load_quad(m, quad);
    float pv[4] = {p.x, p.y, p.z, p.w}, mv[4] = {m4.x, m4.y, m4.z, m4.w};
    const float gv[4] = {g.x, g.y, g.z, g.w};
    for (int e = 0; e < 4; e++) pv[e] = lion_element(pv[e], grad_multiplier * gv[e], mv[e], f);
    detail::store_quad(param, quad, make_float4(pv[0], pv[1], pv[2], pv[3]));
    detail::store_quad(m, quad, make_float4(mv[0], mv[1], mv[2], mv[3]));
    store_working_quad(working, working_type, param, quad);
  } else {
    const std::int64_t i = quads * 4 + (quad - quads);
    if (i < n) lion_at(param, grad, m, working, working_type, i, f, grad_multiplier, {});
  }
}

// ---- Adam-mini
// -----------------------------------------------------------------------------------

// g² in double, the term of every sum of squares here (exact: a float's square fits a double).
__device__ inline double square(float g) {
  return static_cast<double>(g) * static_cast<double>(g);
}

// The block's new v from the double sum of its g², the mean rounded once to f32 (the CPU kernel).
__device__ inline float adam_mini_block_v(float v, double sum_of_squares, std::int64_t block_size,
                                          const AdamWFactors& f) {
  return adamw_second_moment(
      v, static_cast<float>(sum_of_squares / static_cast<double>(block_size)), f);
}

// m and the parameter of element i, given its block's new v.
template <class P, class R, class S>
__device__ inline void adam_mini_element(P* param, const R* grad, S* m, void* working,
                                         DType working_type, std::int64_t i, float block_v,
                                         const AdamWFactors& f, float grad_multiplier,
                                         const cpu::ParameterRounding& rounding) {
  const float m_new = adamw_first_moment(widen(m[i]), grad_multiplier * widen(grad[i]), f);
  m[i] = detail::narrow<S>(m_new);
  store_parameter(param, working, working_type, i,
                  adamw_parameter(widen(param[i]), m_new, block_v, f), rounding);
}

template <class P, class R, class S>
__global__ void adam_mini_v1_kernel(P* param, const R* grad, S* m, S* v, void* working,
                                    DType working_type, std::int64_t block_size, std::int64_t count,
                                    AdamWFactors f, float grad_multiplier,
                                    cpu::ParameterRounding rounding) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= count) return;
  const std::int64_t begin = b * block_size;
  double sum = 0.0;
  for (std::int64_t i = begin; i < begin + block_size; i++) {
    sum += square(grad_multiplier * widen(grad[i]));
  }
  const float block_v = adam_mini_block_v(widen(v[b]), sum, block_size, f);
  v[b] = detail::narrow<S>(block_v);
  for (std::int64_t i = begin; i < begin + block_size; i++) {
    adam_mini_element(param, grad, m, working, working_type, i, block_v, f, grad_multiplier,
                      rounding);
  }
}

template <class P, class R, class S>
__global__ void adam_mini_v2_kernel(P* param, const R* grad, S* m, S* v, void* working,
                                    DType working_type, std::int64_t block_size, std::int64_t count,
                                    AdamWFactors f, float grad_multiplier,
                                    cpu::ParameterRounding rounding) {
  VRAMLAB_SHARED(double, warp_sums, [kOwnerBlockThreads / 32]);
  VRAMLAB_SHARED(float, shared_v, [1]);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = blockDim.x / 32;
  for (std::int64_t b = blockIdx.x; b < count; b += gridDim.x) {
    const std::int64_t begin = b * block_size;
    double partial = 0.0;
    for (std::int64_t j = tid; j < block_size; j += blockDim.x) {
      partial += square(grad_multiplier * widen(grad[begin + j]));
    }
    partial = detail::warp_sum(partial);
    if (lane == 0) warp_sums[warp] = partial;
    __syncthreads();
    if (tid == 0) {
      double sum = 0.0;
      for (unsigned w = 0; w < warps; w++) sum += warp_sums[w];
      const float block_v = adam_mini_block_v(widen(v[b]), sum, block_size, f);
      v[b] = detail::narrow<S>(block_v);
      shared_v[0] = block_v;
    }
    __syncthreads();
    const float block_v = shared_v[0];
    for (std::int64_t j = tid; j < block_size; j += blockDim.x) {
      adam_mini_element(param, grad, m, working, working_type, begin + j, block_v, f,
                        grad_multiplier, rounding);
    }
    __syncthreads();  // warp_sums and shared_v are rewritten for the next block
  }
}

// ---- Adafactor
// -----------------------------------------------------------------------------------

// The scratch slots of Note [Adafactor's reductions].
constexpr int kParamSquares = 0, kRowVarSum = 1, kUpdateSquares = 2, kAdafactorScratch = 3;

#if !VRAMLAB_SIMT_EMULATED
__device__ double adafactor_scratch[kAdafactorScratch];
#endif

// The step's scalars, computed on the host in double as torch.optim.Adafactor does in Python.
struct AdafactorFactors {
  float one_minus_beta2;   // 1 − β2_t = t^τ: the lerp weight
  double epsilon1;         // floor of mean(row_var) (f32 machine epsilon when unset)
  float epsilon1_squared;  // floor of V̂: ε1² in double, rounded once
  double epsilon2;         // floor of RMS(param)
  double rho;              // ρ_t = min(γ, 1/√t)
  double clip_threshold;
  float decay;  // 1 − γ·wd
};

// The f32 mean of \p count values from their double sum.
__device__ inline float mean_of(double sum, std::int64_t count) {
  return static_cast<float>(sum / static_cast<double>(count));
}

// std::max(a, b) (a NaN a stays NaN, unlike fmax): the CPU kernel's clamps.
template <class Real>
__device__ inline Real max_of(Real a, Real b) {
  return a < b ? b : a;
}

// torch's lerp(self, end, w) for w < 0.5, and end − (end − self)·(1 − w) above.
__device__ inline float lerp(float self, float end, float weight) {
  return weight < 0.5f ? self + weight * (end - self) : end - (end - self) * (1.0f - weight);
}

// The element's update U = g / max(√V̂, ε1), with V̂ = row ⊗ col / max(mean(row), ε1) factored
// and V̂ = var unfactored (row_var holds it, col_var is nullptr).
template <class S>
__device__ inline float adafactor_update_of(float g, std::int64_t i, std::int64_t cols,
                                            const S* row_var, const S* col_var, float row_mean,
                                            const AdafactorFactors& f) {
  float estimate;
  if (col_var == nullptr) {
    estimate = widen(row_var[i]);
  } else {
    estimate = widen(row_var[i / cols]) * widen(col_var[i % cols]) / row_mean;
  }
  return g / sqrtf(max_of(estimate, f.epsilon1_squared));
}

// What one term of a whole-tensor sum reads.
enum class Sum { param_squares, row_var, update_squares };

struct AdafactorView {
  std::int64_t rows, cols;
  bool factored;
};

template <class P, class R, class S>
__device__ inline double adafactor_term(Sum what, const P* param, const R* grad, const S* row_var,
                                        const S* col_var, const AdafactorView& shape,
                                        std::int64_t i, float grad_multiplier, float row_mean,
                                        const AdafactorFactors& f) {
  if (what == Sum::param_squares)
    return detail::widen_double(param[i]) * detail::widen_double(param[i]);
  if (what == Sum::row_var) return detail::widen_double(row_var[i]);
  const double u = adafactor_update_of(grad_multiplier * widen(grad[i]), i, shape.cols, row_var,
                                       shape.factored ? col_var : nullptr, row_mean, f);
  return u * u;
}

// f32 mean of row_var from the double sum, floored at ε1 (torch clamps the mean at eps1).
__device__ inline float row_var_mean(const double* scratch, const AdafactorView& shape,
                                     const AdafactorFactors& f) {
  return static_cast<float>(
      max_of(scratch[kRowVarSum] / static_cast<double>(shape.rows), f.epsilon1));
}

template <class P, class R, class S>
__global__ void adafactor_sum_v1_kernel(double* scratch, Sum what, const P* param, const R* grad,
                                        const S* row_var, const S* col_var, AdafactorView shape,
                                        std::int64_t n, float grad_multiplier, AdafactorFactors f) {
  const float row_mean =
      what == Sum::update_squares && shape.factored ? row_var_mean(scratch, shape, f) : 1.0f;
  double total = 0.0;
  for (std::int64_t i = 0; i < n; i++) {
    total +=
        adafactor_term(what, param, grad, row_var, col_var, shape, i, grad_multiplier, row_mean, f);
  }
  scratch[static_cast<int>(what)] = total;
}

template <class P, class R, class S>
__global__ void adafactor_sum_v2_kernel(double* scratch, Sum what, const P* param, const R* grad,
                                        const S* row_var, const S* col_var, AdafactorView shape,
                                        std::int64_t n, float grad_multiplier, AdafactorFactors f) {
  VRAMLAB_SHARED(double, warp_totals, [kReductionThreads / 32]);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const float row_mean =
      what == Sum::update_squares && shape.factored ? row_var_mean(scratch, shape, f) : 1.0f;
  double partial = 0.0;
  for (std::int64_t i = tid; i < n; i += kReductionThreads) {
    partial +=
        adafactor_term(what, param, grad, row_var, col_var, shape, i, grad_multiplier, row_mean, f);
  }
  partial = detail::warp_sum(partial);
  if (lane == 0) warp_totals[warp] = partial;
  __syncthreads();
  if (warp != 0) return;
  partial = detail::warp_sum(warp_totals[lane]);
  if (lane == 0) scratch[static_cast<int>(what)] = partial;
}

// Unfactored: var ← lerp(var, g², 1 − β2_t), one thread per element.
template <class R, class S>
__global__ void adafactor_variance_kernel(S* var, const R* grad, std::int64_t n,
                                          float grad_multiplier, AdafactorFactors f) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = grad_multiplier * widen(grad[i]);
  var[i] = detail::narrow<S>(lerp(widen(var[i]), g * g, f.one_minus_beta2));
}

// row_var[r] ← lerp(row_var[r], mean over the row of g²): one thread per row, in column order.
template <class R, class S>
__global__ void adafactor_rows_v1_kernel(S* row_var, const R* grad, std::int64_t rows,
                                         std::int64_t cols, float grad_multiplier,
                                         AdafactorFactors f) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double sum = 0.0;
  for (std::int64_t c = 0; c < cols; c++)
    sum += square(grad_multiplier * widen(grad[r * cols + c]));
  row_var[r] = detail::narrow<S>(lerp(widen(row_var[r]), mean_of(sum, cols), f.one_minus_beta2));
}

// The same, one warp per row: lanes sum strided columns, then a butterfly.
template <class R, class S>
__global__ void adafactor_rows_v2_kernel(S* row_var, const R* grad, std::int64_t rows,
                                         std::int64_t cols, float grad_multiplier,
                                         AdafactorFactors f) {
  const std::int64_t r =
      static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  if (r >= rows) return;  // whole warps leave together: the shuffles below see full warps
  double sum = 0.0;
  for (std::int64_t c = lane; c < cols; c += 32) {
    sum += square(grad_multiplier * widen(grad[r * cols + c]));
  }
  sum = detail::warp_sum(sum);
  if (lane == 0)
    row_var[r] = detail::narrow<S>(lerp(widen(row_var[r]), mean_of(sum, cols), f.one_minus_beta2));
}

// col_var[c] ← lerp(col_var[c], mean over the column of g²): one thread per column, rows in order.
template <class R, class S>
__global__ void adafactor_columns_kernel(S* col_var, const R* grad, std::int64_t rows,
                                         std::int64_t cols, float grad_multiplier,
                                         AdafactorFactors f) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  double sum = 0.0;
  for (std::int64_t r = 0; r < rows; r++)
    sum += square(grad_multiplier * widen(grad[r * cols + c]));
  col_var[c] = detail::narrow<S>(lerp(widen(col_var[c]), mean_of(sum, rows), f.one_minus_beta2));
}

// param ← param·decay − α·U/denominator, one thread per element.
template <class P, class R, class S>
__global__ void adafactor_apply_kernel(P* param, const R* grad, const S* row_var, const S* col_var,
                                       void* working, DType working_type, const double* scratch,
                                       AdafactorView shape, std::int64_t n, float grad_multiplier,
                                       AdafactorFactors f, cpu::ParameterRounding rounding) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double count = static_cast<double>(n);
  const double alpha = max_of(f.epsilon2, sqrt(scratch[kParamSquares] / count)) * f.rho;
  const double denominator = max_of(1.0, sqrt(scratch[kUpdateSquares] / count) / f.clip_threshold);
  const auto step = static_cast<float>(alpha / denominator);
  const float row_mean = shape.factored ? row_var_mean(scratch, shape, f) : 1.0f;
  const float u = adafactor_update_of(grad_multiplier * widen(grad[i]), i, shape.cols, row_var,
                                      shape.factored ? col_var : nullptr, row_mean, f);
  store_parameter(param, working, working_type, i, widen(param[i]) * f.decay - step * u, rounding);
}

// One whole-tensor sum of Note [Adafactor's reductions] into its scratch slot.
template <class P, class R, class S>
void adafactor_sum(KernelVersion version, double* scratch, Sum what, std::int64_t count,
                   const P* param, const R* grad, const S* row_var, const S* col_var,
                   const AdafactorView& shape, float grad_multiplier, const AdafactorFactors& f) {
  if (version == KernelVersion::v1) {
    auto* const kernel = adafactor_sum_v1_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, 1, 1, 0, 0)
    (scratch, what, param, grad, row_var, col_var, shape, count, grad_multiplier, f);
  } else {
    auto* const kernel = adafactor_sum_v2_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, 1, kReductionThreads, 0, 0)
    (scratch, what, param, grad, row_var, col_var, shape, count, grad_multiplier, f);
  }
}

AdafactorFactors adafactor_factors(const cpu::AdafactorHyperparameters& hp, int64_t step) {
  const double t = static_cast<double>(step);
  const double epsilon1 = hp.epsilon1 < 0.0f ? std::numeric_limits<float>::epsilon() : hp.epsilon1;
  return AdafactorFactors{static_cast<float>(std::pow(t, static_cast<double>(hp.beta2_decay))),
                          epsilon1,
                          static_cast<float>(epsilon1 * epsilon1),
                          hp.epsilon2,
                          std::min(static_cast<double>(hp.learning_rate), 1.0 / std::sqrt(t)),
                          hp.clip_threshold,
                          1.0f - hp.learning_rate * hp.weight_decay};
}

// ---- 8-bit AdamW
// ---------------------------------------------------------------------------------

using cpu::kQuantizationCodes;

// Note [8-bit maps in constant memory]: [0] the signed map (m), [1] the unsigned map (v).
__constant__ float dynamic_maps[2][kQuantizationCodes];

void upload_dynamic_maps() {
  const auto fill = [](float* destination) {
    std::memcpy(destination, cpu::dynamic_quantization_map(true).data(),
                sizeof(float) * kQuantizationCodes);
    std::memcpy(destination + kQuantizationCodes, cpu::dynamic_quantization_map(false).data(),
                sizeof(float) * kQuantizationCodes);
  };
#if VRAMLAB_SIMT_EMULATED
  static std::once_flag once;
  std::call_once(once, [&] { fill(&dynamic_maps[0][0]); });
#else
  static std::mutex mutex;
  static std::vector<bool> uploaded;  // per device ordinal
  int device = 0;
  cuda_runtime::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  const std::lock_guard<std::mutex> lock(mutex);
  if (static_cast<std::size_t>(device) >= uploaded.size())
    uploaded.resize(static_cast<std::size_t>(device) + 1, false);
  if (uploaded[static_cast<std::size_t>(device)]) return;
  std::vector<float> host(2 * kQuantizationCodes);  // (2, 256) the two maps
  fill(host.data());
  cuda_runtime::check_cuda(cudaMemcpyToSymbol(dynamic_maps, host.data(), sizeof(dynamic_maps)),
                           "cudaMemcpyToSymbol(dynamic_maps)");
  uploaded[static_cast<std::size_t>(device)] = true;
#endif
}

// The index of each map's code 0.0: an all-zero or non-finite block quantizes to it.
struct ZeroCodes {
  std::uint8_t m, v;
};

// The index of the code nearest to x among 256 ascending codes, a tie to the lower index, x
// beyond the ends clamped (cpu::nearest_code).
__device__ inline std::uint8_t nearest_code(const float* code, float x) {
  if (!(x > code[0])) return 0;
  if (!(x < code[kQuantizationCodes - 1])) return kQuantizationCodes - 1;
  int low = 0, high = kQuantizationCodes - 1;  // code[low] < x < code[high]
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    if (code[middle] <= x) {
      low = middle;
    } else {
      high = middle;
    }
  }
  return static_cast<std::uint8_t>(code[high] - x < x - code[low] ? high : low);
}

__device__ inline bool finite(float x) {
  return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

// A block's absmax: the largest |x| of finite values, NaN when any value is not finite.
__device__ inline float block_absmax(float largest, bool all_finite) {
  return all_finite ? largest : __int_as_float(0x7fc00000);
}

__device__ inline std::uint8_t quantize(float x, float absmax, const float* code,
                                        std::uint8_t zero_code) {
  if (!(absmax > 0.0f) || !finite(absmax)) return zero_code;  // an all-zero or a NaN block
  return nearest_code(code, x / absmax);
}

// m and v of element i after AdamW's step, from the codes and the block's old absmax.
template <class R>
__device__ inline void dequantised_moments(const R* grad, const std::uint8_t* qm,
                                           const std::uint8_t* qv, std::int64_t i, float old_m,
                                           float old_v, const float* code_m, const float* code_v,
                                           const AdamWFactors& f, float grad_multiplier, float& m,
                                           float& v) {
  m = code_m[qm[i]] * old_m;
  v = code_v[qv[i]] * old_v;
  adamw_moments(grad_multiplier * widen(grad[i]), m, v, f);
}

template <class P, class R>
__global__ void adamw_8bit_v1_kernel(P* param, const R* grad, std::uint8_t* qm, std::uint8_t* qv,
                                     float* absmax_m, float* absmax_v, void* working,
                                     DType working_type, std::int64_t n, std::int64_t block,
                                     std::int64_t blocks, AdamWFactors f, float grad_multiplier,
                                     cpu::ParameterRounding rounding, ZeroCodes zero) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  const float* code_m = dynamic_maps[0];
  const float* code_v = dynamic_maps[1];
  const std::int64_t begin = b * block, end = n - begin < block ? n : begin + block;
  const float old_m = absmax_m[b], old_v = absmax_v[b];
  float largest_m = 0.0f, largest_v = 0.0f;
  bool finite_m = true, finite_v = true;
  for (std::int64_t i = begin; i < end; i++) {
    float m, v;
    dequantised_moments(grad, qm, qv, i, old_m, old_v, code_m, code_v, f, grad_multiplier, m, v);
    largest_m = fmaxf(largest_m, fabsf(m));
    largest_v = fmaxf(largest_v, fabsf(v));
    finite_m = finite_m && finite(m);
    finite_v = finite_v && finite(v);
    store_parameter(param, working, working_type, i, adamw_parameter(widen(param[i]), m, v, f),
                    rounding);
  }
  const float new_m = block_absmax(largest_m, finite_m), new_v = block_absmax(largest_v, finite_v);
  // The same arithmetic again (grad and the old codes are unchanged): the codes of the new values.
  for (std::int64_t i = begin; i < end; i++) {
    float m, v;
    dequantised_moments(grad, qm, qv, i, old_m, old_v, code_m, code_v, f, grad_multiplier, m, v);
    qm[i] = quantize(m, new_m, code_m, zero.m);
    qv[i] = quantize(v, new_v, code_v, zero.v);
  }
  absmax_m[b] = new_m;
  absmax_v[b] = new_v;
}

template <class P, class R>
__global__ void adamw_8bit_v2_kernel(P* param, const R* grad, std::uint8_t* qm, std::uint8_t* qv,
                                     float* absmax_m, float* absmax_v, void* working,
                                     DType working_type, std::int64_t n, std::int64_t block,
                                     std::int64_t blocks, AdamWFactors f, float grad_multiplier,
                                     cpu::ParameterRounding rounding, ZeroCodes zero) {
  VRAMLAB_SHARED(float, codes, [2][kQuantizationCodes]);
  VRAMLAB_SHARED(float, warp_largest, [2][kOwnerBlockThreads / 32]);
  const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  for (unsigned k = tid; k < 2 * kQuantizationCodes; k += blockDim.x) {
    codes[k / kQuantizationCodes][k % kQuantizationCodes] =
        dynamic_maps[k / kQuantizationCodes][k % kQuantizationCodes];
  }
  __syncthreads();
  for (std::int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::int64_t begin = b * block, end = n - begin < block ? n : begin + block;
    const float old_m = absmax_m[b], old_v = absmax_v[b];
    float largest_m = 0.0f, largest_v = 0.0f;
    bool finite_m = true, finite_v = true;
    for (std::int64_t i = begin + tid; i < end; i += blockDim.x) {
      float m, v;
      dequantised_moments(grad, qm, qv, i, old_m, old_v, codes[0], codes[1], f, grad_multiplier, m,
                          v);
      largest_m = fmaxf(largest_m, fabsf(m));
      largest_v = fmaxf(largest_v, fabsf(v));
      finite_m = finite_m && finite(m);
      finite_v = finite_v && finite(v);
      store_parameter(param, working, working_type, i, adamw_parameter(widen(param[i]), m, v, f),
                      rounding);
    }
    largest_m = detail::warp_max(largest_m);
    largest_v = detail::warp_max(largest_v);
    if (lane == 0) {
      warp_largest[0][warp] = largest_m;
      warp_largest[1][warp] = largest_v;
    }
    // A barrier that also tells every thread whether any moment of the block was not finite.
    finite_m = __syncthreads_and(finite_m) != 0;
    finite_v = __syncthreads_and(finite_v) != 0;
    for (unsigned w = 0; w < blockDim.x / 32; w++) {
      largest_m = fmaxf(largest_m, warp_largest[0][w]);
      largest_v = fmaxf(largest_v, warp_largest[1][w]);
    }
    const float new_m = block_absmax(largest_m, finite_m),
                new_v = block_absmax(largest_v, finite_v);
    for (std::int64_t i = begin + tid; i < end; i += blockDim.x) {
      float m, v;
      dequantised_moments(grad, qm, qv, i, old_m, old_v, codes[0], codes[1], f, grad_multiplier, m,
                          v);
      qm[i] = quantize(m, new_m, codes[0], zero.m);
      qv[i] = quantize(v, new_v, codes[1], zero.v);
    }
    if (tid == 0) {
      absmax_m[b] = new_m;
      absmax_v[b] = new_v;
    }
    __syncthreads();  // warp_largest and the old absmax are rewritten for the next block
  }
}

}  // namespace

template <class P, class R, class S>
void lion_update(P* param, const R* grad, S* m, void* working, DType working_type, int64_t n,
                 const cpu::LionHyperparameters& hp, const cpu::UpdateStep& at,
                 KernelVersion version) {
  const char* op = "cuda::lion_update";
  const float grad_multiplier = at.grad_multiplier;
  const cpu::ParameterRounding& rounding = at.rounding;
  cpu::require_non_negative(op, "n", n);
  check_working(op, working, working_type);
  if (n == 0) return;
  const LionFactors f{hp.learning_rate, hp.beta1, hp.beta2,
                      1.0f - hp.learning_rate * hp.weight_decay};
  const bool vectorized = detail::aligned_to(param, detail::kQuadBytes<P>) &&
                          detail::aligned_to(grad, detail::kQuadBytes<R>) &&
                          detail::aligned_to(m, detail::kQuadBytes<S>) &&
                          detail::aligned_to(working, 8);
  // v2's vector stores round to nearest: stochastic rounding takes v1's scalar path.
  if (version == KernelVersion::v1 || !vectorized || rounding.stochastic) {
    auto* const kernel = lion_v1_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
    (param, grad, m, working, working_type, n, f, grad_multiplier, rounding);
  } else {
    auto* const kernel = lion_v2_kernel<P, R, S>;
    const std::int64_t threads = n / 4 + n % 4;
    VRAMLAB_LAUNCH(kernel, blocks_for(threads, kElementwiseBlockThreads), kElementwiseBlockThreads,
                   0, 0)
    (param, grad, m, working, working_type, n, f, grad_multiplier);
  }
}

template <class P, class R, class S>
void adam_mini_update(P* param, const R* grad, S* m, S* v, void* working, DType working_type,
                      int64_t block_size, int64_t count, const cpu::AdamWHyperparameters& hp,
                      const cpu::UpdateStep& at, KernelVersion version) {
  const char* op = "cuda::adam_mini_update";
  const int64_t step = at.step;
  const float grad_multiplier = at.grad_multiplier;
  const cpu::ParameterRounding& rounding = at.rounding;
  cpu::require(block_size >= 1, op, "block_size = " + std::to_string(block_size) + " must be >= 1");
  cpu::require_non_negative(op, "count", count);
  cpu::require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
  check_working(op, working, working_type);
  if (count == 0) return;
  if (block_size == 1) {
    // One v per element: the mean of one g² is g², and Adam-mini is AdamW bit for bit (the CPU
    // kernel takes the same path; AdamW rounds (1 − β2)·g·g, not (1 − β2)·round(g²)).
    adamw_update<P, R, S>(param, grad, m, v, working, working_type, count, hp, at, version);
    return;
  }
  const AdamWFactors f = adamw_factors(hp, step);
  if (version == KernelVersion::v1) {
    auto* const kernel = adam_mini_v1_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, blocks_for(count, kElementwiseBlockThreads), kElementwiseBlockThreads, 0,
                   0)
    (param, grad, m, v, working, working_type, block_size, count, f, grad_multiplier, rounding);
  } else {
    // A short block would leave most of 256 threads idle: one warp owns it then.
    const unsigned threads = block_size >= kOwnerBlockThreads ? kOwnerBlockThreads : 32;
    auto* const kernel = adam_mini_v2_kernel<P, R, S>;
    VRAMLAB_LAUNCH(kernel, grid_for(count), threads, 0, 0)
    (param, grad, m, v, working, working_type, block_size, count, f, grad_multiplier, rounding);
  }
}

template <class P, class R, class S>
void adafactor_update(P* param, const R* grad, S* row_var, NoDeduce<S>* col_var, void* working,
                      DType working_type, int64_t rows, int64_t cols, bool factored,
                      const cpu::AdafactorHyperparameters& hp, const cpu::UpdateStep& at,
                      KernelVersion version) {
  const char* op = "cuda::adafactor_update";
  const int64_t step = at.step;
  const float grad_multiplier = at.grad_multiplier;
  const cpu::ParameterRounding& rounding = at.rounding;
  cpu::require(rows >= 1, op, "rows = " + std::to_string(rows) + " must be >= 1");
  cpu::require(cols >= 1, op, "cols = " + std::to_string(cols) + " must be >= 1");
  cpu::require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
  cpu::require(factored || rows == 1, op,
               "an unfactored step has one row, not rows = " + std::to_string(rows));
  cpu::require(!factored || col_var != nullptr, op, "a factored step needs col_var");
  check_working(op, working, working_type);
  const std::int64_t n = rows * cols;
  const AdafactorFactors f = adafactor_factors(hp, step);
  const AdafactorView shape{rows, cols, factored};
  const S* columns = factored ? col_var : nullptr;
#if VRAMLAB_SIMT_EMULATED
  double scratch_storage[kAdafactorScratch] = {};  // (3) emulated device memory is host memory
  double* const scratch = scratch_storage;
#else
  double* scratch = nullptr;
  cuda_runtime::check_cuda(
      cudaGetSymbolAddress(reinterpret_cast<void**>(&scratch), adafactor_scratch),
      "cudaGetSymbolAddress(adafactor_scratch)");
#endif
  adafactor_sum(version, scratch, Sum::param_squares, n, param, grad, row_var, columns, shape,
                grad_multiplier, f);
  if (!factored) {
    auto* const kernel = adafactor_variance_kernel<R, S>;
    VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
    (row_var, grad, n, grad_multiplier, f);
  } else {
    if (version == KernelVersion::v1) {
      auto* const kernel = adafactor_rows_v1_kernel<R, S>;
      VRAMLAB_LAUNCH(kernel, blocks_for(rows, kElementwiseBlockThreads), kElementwiseBlockThreads,
                     0, 0)
      (row_var, grad, rows, cols, grad_multiplier, f);
    } else {
      auto* const kernel = adafactor_rows_v2_kernel<R, S>;
      VRAMLAB_LAUNCH(kernel, blocks_for(rows, detail::kRowBlockThreads / 32),
                     detail::kRowBlockThreads, 0, 0)
      (row_var, grad, rows, cols, grad_multiplier, f);
    }
    auto* const kernel = adafactor_columns_kernel<R, S>;
    VRAMLAB_LAUNCH(kernel, blocks_for(cols, kElementwiseBlockThreads), kElementwiseBlockThreads, 0,
                   0)
    (col_var, grad, rows, cols, grad_multiplier, f);
    adafactor_sum(version, scratch, Sum::row_var, rows, param, grad, row_var, columns, shape,
                  grad_multiplier, f);
  }
  adafactor_sum(version, scratch, Sum::update_squares, n, param, grad, row_var, columns, shape,
                grad_multiplier, f);
  auto* const kernel = adafactor_apply_kernel<P, R, S>;
  VRAMLAB_LAUNCH(kernel, blocks_for(n, kElementwiseBlockThreads), kElementwiseBlockThreads, 0, 0)
  (param, grad, row_var, columns, working, working_type, scratch, shape, n, grad_multiplier, f,
   rounding);
}

template <class P, class R>
void adamw_8bit_update(P* param, const R* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                       float* absmax_v, void* working, DType working_type, int64_t n, int64_t block,
                       const cpu::AdamWHyperparameters& hp, const cpu::UpdateStep& at,
                       KernelVersion version) {
  const char* op = "cuda::adamw_8bit_update";
  const int64_t step = at.step;
  const float grad_multiplier = at.grad_multiplier;
  const cpu::ParameterRounding& rounding = at.rounding;
  cpu::require_non_negative(op, "n", n);
  cpu::require(block >= 1, op, "block = " + std::to_string(block) + " must be >= 1");
  cpu::require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
  check_working(op, working, working_type);
  if (n == 0) return;
  upload_dynamic_maps();
  const ZeroCodes zero{cpu::nearest_code(cpu::dynamic_quantization_map(true), 0.0f),
                       cpu::nearest_code(cpu::dynamic_quantization_map(false), 0.0f)};
  const AdamWFactors f = adamw_factors(hp, step);
  const std::int64_t blocks = cpu::quantization_block_count(n, block);
  if (version == KernelVersion::v1) {
    auto* const kernel = adamw_8bit_v1_kernel<P, R>;
    VRAMLAB_LAUNCH(kernel, blocks_for(blocks, kElementwiseBlockThreads), kElementwiseBlockThreads,
                   0, 0)
    (param, grad, qm, qv, absmax_m, absmax_v, working, working_type, n, block, blocks, f,
     grad_multiplier, rounding, zero);
  } else {
    auto* const kernel = adamw_8bit_v2_kernel<P, R>;
    VRAMLAB_LAUNCH(kernel, grid_for(blocks), kOwnerBlockThreads, 0, 0)
    (param, grad, qm, qv, absmax_m, absmax_v, working, working_type, n, block, blocks, f,
     grad_multiplier, rounding, zero);
  }
}

// Every OptimizerTypes combination: param f32/bf16 × grad f32/bf16/f16 × state f32/bf16 (8-bit
// AdamW: param × grad).
#define VRAMLAB_INSTANTIATE_PRS(P, R, S)                                                         \
  template void lion_update<P, R, S>(P*, const R*, S*, void*, DType, int64_t,                    \
                                     const cpu::LionHyperparameters&, const cpu::UpdateStep&,    \
                                     KernelVersion);                                             \
  template void adam_mini_update<P, R, S>(P*, const R*, S*, S*, void*, DType, int64_t, int64_t,  \
                                          const cpu::AdamWHyperparameters&,                      \
                                          const cpu::UpdateStep&, KernelVersion);                \
  template void adafactor_update<P, R, S>(P*, const R*, S*, NoDeduce<S>*, void*, DType, int64_t, \
                                          int64_t, bool, const cpu::AdafactorHyperparameters&,   \
                                          const cpu::UpdateStep&, KernelVersion);
#define VRAMLAB_INSTANTIATE_PR(P, R)                                                               \
  VRAMLAB_INSTANTIATE_PRS(P, R, float)                                                             \
  VRAMLAB_INSTANTIATE_PRS(P, R, ::vramlab::bf16_t)                                                 \
  template void adamw_8bit_update<P, R>(P*, const R*, uint8_t*, uint8_t*, float*, float*, void*,   \
                                        DType, int64_t, int64_t, const cpu::AdamWHyperparameters&, \
                                        const cpu::UpdateStep&, KernelVersion);
#define VRAMLAB_INSTANTIATE_P(P)               \
  VRAMLAB_INSTANTIATE_PR(P, float)             \
  VRAMLAB_INSTANTIATE_PR(P, ::vramlab::bf16_t) \
  VRAMLAB_INSTANTIATE_PR(P, ::vramlab::f16_t)
VRAMLAB_INSTANTIATE_P(float)
VRAMLAB_INSTANTIATE_P(::vramlab::bf16_t)
#undef VRAMLAB_INSTANTIATE_P
#undef VRAMLAB_INSTANTIATE_PR
#undef VRAMLAB_INSTANTIATE_PRS

}  // namespace VRAMLAB_CUDA_OPS_ABI
}  // namespace vramlab::kernels::cuda
