// The 16-bit linear GEMMs (see low_precision_linear.h).
//
// The speed trick. A bf16 GEMM on a CPU with AVX512-BF16 (vdpbf16ps: 32 bf16 products summed
// pairwise into 16 f32 lanes per instruction) or AMX (tiles of bf16 multiplied into f32 tiles)
// does twice the products per instruction of an f32 FMA, or far more on AMX, on operands half the
// size, and without any f32 copy of them. oneDNN (what PyTorch itself runs on CPUs) picks those
// kernels at run time for this CPU, so we hand it the bf16 operands as they are, with f32
// accumulation and the final rounding in its epilogue. The backward ACCUMULATES into existing
// gradients without a temporary: a "sum" post-op makes oneDNN compute dst = round(acc + dst) in
// f32 (beta = 1), and dweight may be f32 (fp32 gradients) with bf16 inputs in the same call.
// Transposed operands (Wᵀ in the forward, doutᵀ for dweight) are memory descriptors with swapped
// strides, never copies.
//
// Threads. Simulated data-parallel ranks (common/dist/simulated_communicator.h) are threads that
// run linears at the same time. A cached primitive may execute concurrently, but a stream may not
// be shared, and with oneDNN's default "library" scratchpad mode primitives share one scratchpad
// unless the library was built for concurrent execution (Debian's is not): two ranks then wrote
// each other's partial sums. Each thread has its own stream and its own scratchpad (mode "user").
#include "common/nn/low_precision_linear.h"

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "common/dtype/convert.h"
#include "common/nn/parallel_linear.h"
#include "common/platform/errors.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/storage.h"

namespace vramlab::nn {

namespace {

namespace cpu = kernels::cpu;
// dnnl::memory spelled as dnnl_memory: vramlab::memory is the allocator's namespace, and in a
// unity build (Note [Unity builds]) a using-declaration here would hide it from the next file.
using dnnl_memory = dnnl::memory;

// f32 copy of a 16-bit array (n), exact.
template <typename A>
std::vector<float> widened(const A* values, int64_t n) {
  std::vector<float> result(static_cast<size_t>(n));  // (n)
  cpu::cast<float, A>(result.data(), values, n);
  return result;
}

// dbias = round_G(dbias + Σ_rows dout) in f32, each column's rows added in order (the order of
// parallel_linear_backward's dbias, so both paths give the same bits).
template <typename A, typename G>
void bias_gradient(G* dbias, const A* dout, int64_t N, int64_t OC) {
  constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < (OC + kBlock - 1) / kBlock; block++) {
    const int64_t begin = block * kBlock;
    const int64_t end = begin + kBlock < OC ? begin + kBlock : OC;
    float sums[kBlock] = {};  // (block) the columns' f32 sums
    for (int64_t row = 0; row < N; row++) {
      const A* dout_row = dout + row * OC;  // (OC)
      for (int64_t c = begin; c < end; c++) sums[c - begin] += cpu::widen(dout_row[c]);
    }
    for (int64_t c = begin; c < end; c++) {
      dbias[c] = cpu::narrow<G>(cpu::widen(dbias[c]) + sums[c - begin]);
    }
  }
}

void check_sizes(int64_t N, int64_t C, int64_t OC) {
  if (N < 0 || C < 0 || OC < 0 || N > INT_MAX || C > INT_MAX || OC > INT_MAX)
    throw UsageError("linear: sizes N=" + std::to_string(N) + " C=" + std::to_string(C) +
                     " OC=" + std::to_string(OC) + " are out of the GEMM library's range");
}

// ---- the widening path -------------------------------------------------------------------------

template <typename A>
void widened_forward(A* out, const A* inp, const A* weight, const A* bias, int64_t N, int64_t C,
                     int64_t OC) {
  const std::vector<float> inp32 = widened(inp, N * C);                               // (N, C)
  const std::vector<float> weight32 = widened(weight, OC * C);                        // (OC, C)
  const std::vector<float> bias32 = bias ? widened(bias, OC) : std::vector<float>{};  // (OC)
  std::vector<float> out32(static_cast<size_t>(N * OC));                              // (N, OC)
  parallel_linear_forward(out32.data(), inp32.data(), weight32.data(),
                          bias ? bias32.data() : nullptr, N, C, OC);
  cpu::cast<A, float>(out, out32.data(), N * OC);
}

template <typename A, typename G>
void widened_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                      int64_t N, int64_t C, int64_t OC) {
  const std::vector<float> dout32 = widened(dout, N * OC);                         // (N, OC)
  const std::vector<float> inp32 = widened(inp, N * C);                            // (N, C)
  const std::vector<float> weight32 = widened(weight, OC * C);                     // (OC, C)
  std::vector<float> dinp32 = dinp ? widened(dinp, N * C) : std::vector<float>{};  // (N, C)
  std::vector<float> dweight32, dbias32;  // (OC, C), (OC): only for 16-bit gradients
  float* dweight_f32;
  float* dbias_f32;
  if constexpr (std::is_same_v<G, float>) {
    dweight_f32 = dweight;
    dbias_f32 = dbias;
  } else {
    dweight32 = widened(dweight, OC * C);
    dweight_f32 = dweight32.data();
    if (dbias) dbias32 = widened(dbias, OC);
    dbias_f32 = dbias ? dbias32.data() : nullptr;
  }
  parallel_linear_backward(dinp ? dinp32.data() : nullptr, dweight_f32, dbias_f32, dout32.data(),
                           inp32.data(), weight32.data(), N, C, OC);
  if (dinp) cpu::cast<A, float>(dinp, dinp32.data(), N * C);
  if constexpr (!std::is_same_v<G, float>) {
    cpu::cast<G, float>(dweight, dweight32.data(), OC * C);
    if (dbias) cpu::cast<G, float>(dbias, dbias32.data(), OC);
  }
}

// ---- the oneDNN path ---------------------------------------------------------------------------

struct OneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
};

OneDnn& onednn() {
  static OneDnn instance;
  return instance;
}

// This thread's stream and scratchpad (see the note on threads).
struct ThreadResources {
  dnnl::stream stream{onednn().engine};
  std::vector<unsigned char> scratchpad;
};

ThreadResources& thread_resources() {
  thread_local ThreadResources resources;
  return resources;
}

// A cached primitive and the scratchpad its every execution is handed.
struct CachedMatmul {
  dnnl::matmul primitive;
  dnnl_memory::desc scratchpad;
};

template <typename T>
dnnl_memory::data_type data_type() {
  if constexpr (std::is_same_v<T, float>) {
    return dnnl_memory::data_type::f32;
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return dnnl_memory::data_type::bf16;
  } else {
    return dnnl_memory::data_type::f16;
  }
}

// A (rows, cols) matrix at `data` whose element (r, c) is at r·row_stride + c·col_stride.
struct Matrix {
  const void* data;
  dnnl_memory::data_type type;
  int64_t rows, cols, row_stride, col_stride;
  [[nodiscard]] dnnl_memory::desc desc() const {
    return dnnl_memory::desc({rows, cols}, type, dnnl_memory::dims{row_stride, col_stride});
  }
};

// Everything that selects a matmul primitive: the three matrices' shapes, strides and types, the
// bias type (or none) and the sum post-op.
using PrimitiveKey = std::array<int64_t, 17>;

PrimitiveKey primitive_key(const Matrix& src, const Matrix& weights, const Matrix* bias,
                           const Matrix& dst, bool accumulate) {
  const auto type = [](const Matrix& m) { return static_cast<int64_t>(m.type); };
  return {src.rows,           src.cols,       src.row_stride, src.col_stride,
          type(src),          weights.rows,   weights.cols,   weights.row_stride,
          weights.col_stride, type(weights),  dst.rows,       dst.cols,
          dst.row_stride,     dst.col_stride, type(dst),      bias ? type(*bias) : -1,
          accumulate ? 1 : 0};
}

// The matmul primitive for a key, created once: a training step calls the same few shapes over
// and over, and creating the primitive descriptor (oneDNN's choice of kernel and blocking) each
// time cost 5 to 15% of the layer at gpt2-tiny sizes (N=1024, C=256, OC=768, one thread: 2.05 ms
// per forward + backward with the cache, 2.2 to 2.4 ms without).
const CachedMatmul& cached_matmul(const Matrix& src, const Matrix& weights, const Matrix* bias,
                                  const Matrix& dst, bool accumulate) {
  static std::mutex mutex;
  static std::map<PrimitiveKey, CachedMatmul> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const PrimitiveKey key = primitive_key(src, weights, bias, dst, accumulate);
  const auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl_memory::desc bias_desc = bias ? bias->desc() : dnnl_memory::desc();
  const dnnl::matmul::desc op(src.desc(), weights.desc(), bias_desc, dst.desc());
  const dnnl::matmul::primitive_desc pd(op, attr, onednn().engine);
  return cache.emplace(key, CachedMatmul{dnnl::matmul(pd), pd.scratchpad_desc()}).first->second;
}

// dst = src · weights (+ bias) (+ dst when accumulate), accumulated in f32 and rounded once into
// dst's type.
void onednn_matmul(const Matrix& src, const Matrix& weights, const Matrix* bias, const Matrix& dst,
                   bool accumulate) {
  OneDnn& dnn = onednn();
  ThreadResources& mine = thread_resources();
  const CachedMatmul& matmul = cached_matmul(src, weights, bias, dst, accumulate);
  const auto handle = [](const Matrix& m) { return const_cast<void*>(m.data); };
  const dnnl_memory src_memory(src.desc(), dnn.engine, handle(src));
  const dnnl_memory weights_memory(weights.desc(), dnn.engine, handle(weights));
  const dnnl_memory dst_memory(dst.desc(), dnn.engine, handle(dst));
  std::unordered_map<int, dnnl_memory> args{
      {DNNL_ARG_SRC, src_memory}, {DNNL_ARG_WEIGHTS, weights_memory}, {DNNL_ARG_DST, dst_memory}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl_memory(bias->desc(), dnn.engine, handle(*bias)));
  const size_t scratch_bytes = matmul.scratchpad.get_size();
  if (mine.scratchpad.size() < scratch_bytes) mine.scratchpad.resize(scratch_bytes);
  args.emplace(DNNL_ARG_SCRATCHPAD,
               dnnl_memory(matmul.scratchpad, dnn.engine, mine.scratchpad.data()));
  matmul.primitive.execute(mine.stream, args);
  mine.stream.wait();
}

template <typename A>
void onednn_forward(A* out, const A* inp, const A* weight, const A* bias, int64_t N, int64_t C,
                    int64_t OC) {
  const dnnl_memory::data_type a = data_type<A>();
  const Matrix src{inp, a, N, C, C, 1};            // inp (N, C)
  const Matrix weights_t{weight, a, C, OC, 1, C};  // weightᵀ (C, OC)
  const Matrix bias_row{bias, a, 1, OC, OC, 1};    // bias (1, OC)
  const Matrix dst{out, a, N, OC, OC, 1};          // out (N, OC)
  onednn_matmul(src, weights_t, bias ? &bias_row : nullptr, dst, false);
}

template <typename A, typename G>
void onednn_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp, const A* weight,
                     int64_t N, int64_t C, int64_t OC) {
  const dnnl_memory::data_type a = data_type<A>();
  if (dinp) {
    // dinp (N, C) += dout (N, OC) · weight (OC, C)
    onednn_matmul({dout, a, N, OC, OC, 1}, {weight, a, OC, C, C, 1}, nullptr, {dinp, a, N, C, C, 1},
                  true);
  }
  // dweight (OC, C) += doutᵀ (OC, N) · inp (N, C)
  onednn_matmul({dout, a, OC, N, 1, OC}, {inp, a, N, C, C, 1}, nullptr,
                {dweight, data_type<G>(), OC, C, C, 1}, true);
  if (dbias) bias_gradient(dbias, dout, N, OC);
}

bool use_onednn(LowPrecisionGemm path, bool is_bf16) {
  switch (path) {
    case LowPrecisionGemm::widen:
      return false;
    case LowPrecisionGemm::onednn:
      if (!is_bf16 || !bf16_onednn_available())
        throw InternalError(
            "low_precision_linear: the oneDNN path needs bf16 on a CPU with native bf16 "
            "(and VRAMLAB_CPU_BF16 not 0)");
      return true;
    case LowPrecisionGemm::automatic:
      break;
  }
  return is_bf16 && bf16_onednn_available();
}

}  // namespace

bool bf16_onednn_available() {
  static const bool available = [] {
    const char* setting = std::getenv("VRAMLAB_CPU_BF16");
    if (setting != nullptr && std::strcmp(setting, "0") == 0) return false;
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return available;
}

std::string_view low_precision_gemm_name(std::string_view a_type) {
  return a_type == "bf16" && bf16_onednn_available() ? "onednn" : "widen";
}

template <typename A>
void low_precision_linear_forward(A* out, const A* inp, const A* weight, const A* bias, int64_t N,
                                  int64_t C, int64_t OC, LowPrecisionGemm path) {
  check_sizes(N, C, OC);
  // oneDNN rejects empty matrices; the widening path handles them as the f32 GEMMs do.
  if (use_onednn(path, std::is_same_v<A, bf16_t>) && N > 0 && C > 0 && OC > 0) {
    onednn_forward(out, inp, weight, bias, N, C, OC);
  } else {
    widened_forward(out, inp, weight, bias, N, C, OC);
  }
}

template <typename A, typename G>
void low_precision_linear_backward(A* dinp, G* dweight, G* dbias, const A* dout, const A* inp,
                                   const A* weight, int64_t N, int64_t C, int64_t OC,
                                   LowPrecisionGemm path) {
  check_sizes(N, C, OC);
  if (use_onednn(path, std::is_same_v<A, bf16_t>) && N > 0 && C > 0 && OC > 0) {
    onednn_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  } else {
    widened_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
}

#define VRAMLAB_INSTANTIATE(A)                                                                    \
  template void low_precision_linear_forward<A>(A*, const A*, const A*, const A*, int64_t,        \
                                                int64_t, int64_t, LowPrecisionGemm);              \
  template void low_precision_linear_backward<A, A>(A*, A*, A*, const A*, const A*, const A*,     \
                                                    int64_t, int64_t, int64_t, LowPrecisionGemm); \
  template void low_precision_linear_backward<A, float>(A*, float*, float*, const A*, const A*,   \
                                                        const A*, int64_t, int64_t, int64_t,      \
                                                        LowPrecisionGemm);
VRAMLAB_INSTANTIATE(bf16_t)
VRAMLAB_INSTANTIATE(f16_t)
#undef VRAMLAB_INSTANTIATE

}  // namespace vramlab::nn
