// bf16/f16 storage in the CUDA kernels, under the SIMT emulator, v1 and v2. The contract
// (common/nn/kernel_backend.h): out = round_A(op_f32(widen(inputs))), an accumulated gradient
// g = round(widen(g) + contribution). Every typed kernel is checked twice:
// 1. against the FLOAT CUDA kernel of the same version on the widened inputs, rounded once: the
//    typed kernels do the float kernel's f32 arithmetic in the same order, so this is bitwise
//    (except where the kernel documents a different order: see attention_backward and the 16-bit
//    dwte of embedding_backward, checked with the tolerance below);
// 2. against the f32 CPU kernel (kernels/cpu) on the widened inputs, rounded once. The float CUDA
//    and CPU kernels each stay within the op harness's normalized f32 tolerance tau of the double
//    reference (tests/ops/op_harness.h: 1e-6 elementwise, 1e-5 row reductions, 2e-5 attention and
//    GEMMs), so their f32 results differ by at most d = 2·tau·max|ref|; rounding both to A moves
//    each by at most half an ulp of A, hence |x − round(ref)| <= d + ulp_A(|ref| + d).
// Non-finite values must match exactly (f16 overflow to inf, NaN). Failures print the max |diff|,
// its index and the share of the tolerance it used.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/dtype/convert.h"
#include "common/dtype/dropout_mask.h"
#include "common/memory/tensor_view.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/ops.h"

namespace vramlab {
namespace {

namespace cpu = kernels::cpu;
namespace cuda = kernels::cuda;
using cuda::KernelVersion;

// Streams every part into one string (g++ 12 reports false -Wrestrict overlaps on chains of
// std::string operator+ at -O3).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

constexpr double kElementwiseTau = 1e-6;  // the op harness's f32 tolerances
constexpr double kRowTau = 1e-5;
constexpr double kSumTau = 2e-5;  // attention and GEMMs

// ---- storage helpers -------------------------------------------------------------------------

template <class T>
float widen(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return to_f32(x);
  }
}

template <class T>
T narrow(float x) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    return to_bf16(x);
  } else if constexpr (std::is_same_v<T, f16_t>) {
    return to_f16(x);
  } else {
    return x;
  }
}

template <class T>
std::vector<T> stored(const std::vector<float>& x) {
  std::vector<T> out(x.size());  // (n)
  for (size_t i = 0; i < x.size(); i++) out[i] = narrow<T>(x[i]);
  return out;
}

template <class T>
std::vector<float> widened(const std::vector<T>& x) {
  std::vector<float> out(x.size());  // (n)
  for (size_t i = 0; i < x.size(); i++) out[i] = widen(x[i]);
  return out;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bf16_t>) return "bf16";
  if constexpr (std::is_same_v<T, f16_t>) return "f16";
  return "f32";
}

// Normal values of standard deviation `scale`, already representable in T (so the widened copy
// is exactly what the typed kernel reads).
template <class T>
std::vector<float> random_values(size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> x(n);  // (n)
  for (float& value : x) value = widen(narrow<T>(static_cast<float>(normal(generator))));
  return x;
}

template <class T>
std::vector<float> positive_values(size_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  std::vector<float> x(n);  // (n)
  for (float& value : x) value = widen(narrow<T>(static_cast<float>(uniform(generator))));
  return x;
}

std::vector<int32_t> random_indices(size_t n, int32_t below, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int32_t> uniform(0, below - 1);
  std::vector<int32_t> x(n);  // (n)
  for (int32_t& value : x) value = uniform(generator);
  return x;
}

// The spacing of T's values at magnitude |x| (the subnormal spacing below the normal range).
template <class T>
double ulp(double x) {
  constexpr int mantissa_bits = std::is_same_v<T, bf16_t> ? 7 : std::is_same_v<T, f16_t> ? 10 : 23;
  constexpr int min_exponent = std::is_same_v<T, f16_t> ? -14 : -126;
  int exponent = 0;
  std::frexp(std::fabs(x), &exponent);  // |x| = m · 2^exponent, m in [0.5, 1)
  const int leading = x == 0.0 ? min_exponent : std::max(exponent - 1, min_exponent);
  return std::ldexp(1.0, leading - mantissa_bits);
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Bitwise: actual == round_T(expected_f32) element by element.
template <class T>
::testing::AssertionResult bitwise(const std::string& what, const std::vector<T>& actual,
                                   const std::vector<float>& expected_f32) {
  int64_t mismatches = 0, worst = -1;
  double worst_diff = -1.0;
  for (size_t i = 0; i < actual.size(); i++) {
    const T expected = narrow<T>(expected_f32[i]);
    if (same_bits(actual[i], expected)) continue;
    const double a = widen(actual[i]), e = widen(expected);
    if (std::isnan(a) && std::isnan(e)) continue;  // NaN payloads are not specified
    mismatches++;
    const double diff = std::isfinite(a) && std::isfinite(e) ? std::fabs(a - e) : INFINITY;
    if (diff > worst_diff) worst_diff = diff, worst = static_cast<int64_t>(i);
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << " (" << type_name<T>() << "): " << mismatches << " of " << actual.size()
         << " elements differ from the rounded f32 result; max |diff| " << worst_diff << " at ["
         << worst << "]: " << widen(actual[static_cast<size_t>(worst)]) << " vs "
         << widen(narrow<T>(expected_f32[static_cast<size_t>(worst)])) << " (tolerance 0: bitwise)";
}

// Within d + ulp_T(|ref| + d), d = 2·tau·max|ref| (see the file comment).
template <class T>
::testing::AssertionResult within(const std::string& what, const std::vector<T>& actual,
                                  const std::vector<float>& reference_f32, double tau) {
  double max_reference = 0.0;
  for (float r : reference_f32) {
    if (std::isfinite(r)) max_reference = std::max(max_reference, std::fabs(double{r}));
  }
  const double d = 2.0 * tau * max_reference;
  double worst_share = 0.0, worst_diff = 0.0, worst_tolerance = 0.0;
  int64_t worst = -1, failures = 0;
  for (size_t i = 0; i < actual.size(); i++) {
    const double a = widen(actual[i]), r = widen(narrow<T>(reference_f32[i]));
    if (!std::isfinite(a) || !std::isfinite(r)) {
      const bool match = (std::isnan(a) && std::isnan(r)) || a == r;
      if (!match) {
        failures++;
        if (worst_share < INFINITY) worst_share = INFINITY, worst = static_cast<int64_t>(i);
        worst_diff = INFINITY;
      }
      continue;
    }
    const double tolerance = d + ulp<T>(std::fabs(double{reference_f32[i]}) + d);
    const double diff = std::fabs(a - r);
    const double share = diff / tolerance;
    if (share > 1.0) failures++;
    if (share > worst_share) {
      worst_share = share, worst_diff = diff, worst_tolerance = tolerance;
      worst = static_cast<int64_t>(i);
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << " (" << type_name<T>() << "): " << failures << " of " << actual.size()
         << " elements outside tolerance; max |diff| " << worst_diff << " at [" << worst
         << "]: " << widen(actual[static_cast<size_t>(worst)]) << " vs f32 reference "
         << reference_f32[static_cast<size_t>(worst)] << ", " << 100.0 * worst_share
         << "% of the tolerance " << worst_tolerance;
}

const KernelVersion kVersions[] = {KernelVersion::v1, KernelVersion::v2};

std::string label(const char* op, KernelVersion version, const std::string& shape) {
  return std::string(op) + " " + cuda::kernel_version_name(version) + " " + shape;
}

// ---- elementwise ops: bitwise against the float CUDA kernel -----------------------------------

template <class A>
void check_elementwise(int64_t n) {
  const size_t count = static_cast<size_t>(n);
  const std::string shape = cat("n", n);
  std::vector<float> a = random_values<A>(count, 1), b = random_values<A>(count, 2);
  if constexpr (std::is_same_v<A, f16_t>) {
    // 40000 + 40000 overflows f16's 65504: the sum must round to ±inf, not saturate.
    a[0] = b[0] = count > 1 ? -40000.0f : 40000.0f;
    a[count - 1] = b[count - 1] = 40000.0f;
  }
  const std::vector<float> g0 = random_values<A>(count, 3), g1 = random_values<A>(count, 4);
  const std::vector<float> dout = random_values<A>(count, 5);

  {  // residual
    std::vector<A> out(count);
    cuda::residual_forward<A>(out.data(), stored<A>(a).data(), stored<A>(b).data(), n);
    std::vector<float> expected(count), cpu_out(count);
    cuda::residual_forward<float>(expected.data(), a.data(), b.data(), n);
    cpu::residual_forward(cpu_out.data(), a.data(), b.data(), n);
    EXPECT_TRUE(bitwise("residual_forward " + shape, out, expected));
    EXPECT_TRUE(within("residual_forward vs cpu " + shape, out, cpu_out, kElementwiseTau));
    if constexpr (std::is_same_v<A, f16_t>) {
      EXPECT_TRUE(std::isinf(widen(out[0])) && (widen(out[0]) < 0) == (count > 1)) << widen(out[0]);
      EXPECT_TRUE(std::isinf(widen(out[count - 1])) && widen(out[count - 1]) > 0)
          << widen(out[count - 1]);
    }
  }
  {  // gelu forward and backward (accumulating into a non-zero gradient)
    std::vector<A> out(count), dinp = stored<A>(g0);
    cuda::gelu_forward<A>(out.data(), stored<A>(a).data(), n);
    cuda::gelu_backward<A>(dinp.data(), stored<A>(a).data(), stored<A>(dout).data(), n);
    std::vector<float> expected(count), expected_dinp = g0, cpu_out(count), cpu_dinp = g0;
    cuda::gelu_forward<float>(expected.data(), a.data(), n);
    cuda::gelu_backward<float>(expected_dinp.data(), a.data(), dout.data(), n);
    cpu::gelu_forward(cpu_out.data(), a.data(), n);
    cpu::gelu_backward(cpu_dinp.data(), a.data(), dout.data(), n);
    EXPECT_TRUE(bitwise("gelu_forward " + shape, out, expected));
    EXPECT_TRUE(bitwise("gelu_backward " + shape, dinp, expected_dinp));
    EXPECT_TRUE(within("gelu_forward vs cpu " + shape, out, cpu_out, kElementwiseTau));
    EXPECT_TRUE(within("gelu_backward vs cpu " + shape, dinp, cpu_dinp, kElementwiseTau));
  }
  {  // swiglu
    std::vector<A> out(count), dgate = stored<A>(g0), dup = stored<A>(g1);
    cuda::swiglu_forward<A>(out.data(), stored<A>(a).data(), stored<A>(b).data(), n);
    cuda::swiglu_backward<A>(dgate.data(), dup.data(), stored<A>(dout).data(), stored<A>(a).data(),
                             stored<A>(b).data(), n);
    std::vector<float> expected(count), expected_dgate = g0, expected_dup = g1;
    cuda::swiglu_forward<float>(expected.data(), a.data(), b.data(), n);
    cuda::swiglu_backward<float>(expected_dgate.data(), expected_dup.data(), dout.data(), a.data(),
                                 b.data(), n);
    std::vector<float> cpu_out(count), cpu_dgate = g0, cpu_dup = g1;
    cpu::swiglu_forward(cpu_out.data(), a.data(), b.data(), n);
    cpu::swiglu_backward(cpu_dgate.data(), cpu_dup.data(), dout.data(), a.data(), b.data(), n);
    EXPECT_TRUE(bitwise("swiglu_forward " + shape, out, expected));
    EXPECT_TRUE(bitwise("swiglu_backward dgate " + shape, dgate, expected_dgate));
    EXPECT_TRUE(bitwise("swiglu_backward dup " + shape, dup, expected_dup));
    // 40000² overflows f32 itself in the f16 case; both sides must agree on the inf.
    EXPECT_TRUE(within("swiglu_forward vs cpu " + shape, out, cpu_out, kElementwiseTau));
    EXPECT_TRUE(within("swiglu_backward dup vs cpu " + shape, dup, cpu_dup, kElementwiseTau));
  }
  for (const float p : {0.0f, 0.3f}) {  // dropout (p = 0 is an exact copy)
    std::vector<A> out(count);
    cuda::dropout_forward<A>(out.data(), stored<A>(a).data(), n, p, 7, 11);
    std::vector<float> expected(count), cpu_out(count);
    cuda::dropout_forward<float>(expected.data(), a.data(), n, p, 7, 11);
    cpu::dropout_forward(cpu_out.data(), a.data(), n, p, 7, 11);
    EXPECT_TRUE(bitwise("dropout_forward " + shape, out, expected));
    EXPECT_TRUE(bitwise("dropout_forward vs cpu " + shape, out, cpu_out));
    std::vector<A> dinp(count);
    cuda::dropout_backward<A>(dinp.data(), stored<A>(dout).data(), n, p, 7, 11);
    std::vector<float> cpu_dinp(count);
    cpu::dropout_backward(cpu_dinp.data(), dout.data(), n, p, 7, 11);
    EXPECT_TRUE(bitwise("dropout_backward vs cpu " + shape, dinp, cpu_dinp));
  }
  {  // int8 quantisation of A values: the same bits as the CPU kernel on the widened values
    const int64_t block = 33;
    const int64_t blocks = (n + block - 1) / block;
    std::vector<int8_t> q(count), cpu_q(count);
    std::vector<float> scales(static_cast<size_t>(blocks)), cpu_scales(scales.size());
    cuda::quantize_int8<A>(q.data(), scales.data(), stored<A>(b).data(), n, block);
    cpu::quantize_int8(cpu_q.data(), cpu_scales.data(), b.data(), n, block);
    EXPECT_EQ(q, cpu_q);
    EXPECT_TRUE(bitwise("quantize_int8 scales " + shape, scales, cpu_scales));
    std::vector<A> x(count);
    std::vector<float> cpu_x(count);
    cuda::dequantize_int8<A>(x.data(), q.data(), scales.data(), n, block);
    cpu::dequantize_int8(cpu_x.data(), cpu_q.data(), cpu_scales.data(), n, block);
    EXPECT_TRUE(bitwise("dequantize_int8 vs cpu " + shape, x, cpu_x));
  }
  for (const KernelVersion version : kVersions) {  // sum, accumulated in double
    double total = 0.0, expected = 0.0;
    cuda::sum<A>(&total, stored<A>(b).data(), n, version);
    for (float value : b) expected += value;
    EXPECT_NEAR(total, expected, 1e-12 * static_cast<double>(n) * 8.0)
        << label("sum", version, shape);
  }
}

TEST(CudaLowPrecision, ElementwiseBf16) {
  for (int64_t n : {1, 31, 1003}) check_elementwise<bf16_t>(n);
}
TEST(CudaLowPrecision, ElementwiseF16) {
  for (int64_t n : {1, 31, 1003}) check_elementwise<f16_t>(n);
}

// ---- normalization ---------------------------------------------------------------------------

template <class A, class G>
void check_normalization(int64_t N, int64_t C) {
  const size_t NC = static_cast<size_t>(N * C), n = static_cast<size_t>(N),
               c = static_cast<size_t>(C);
  const std::string shape = cat("N", N, "_C", C, " G=", type_name<G>());
  const std::vector<float> inp = random_values<A>(NC, 21, 2.0), weight = random_values<A>(c, 22);
  const std::vector<float> bias = random_values<A>(c, 23), dout = random_values<A>(NC, 24);
  const std::vector<float> dinp0 = random_values<A>(NC, 25), dweight0 = random_values<G>(c, 26);
  const std::vector<float> dbias0 = random_values<G>(c, 27);
  for (const KernelVersion version : kVersions) {
    // LayerNorm forward.
    std::vector<A> out(NC);
    std::vector<float> mean(n), rstd(n);
    cuda::layernorm_forward<A>(out.data(), mean.data(), rstd.data(), stored<A>(inp).data(),
                               stored<A>(weight).data(), stored<A>(bias).data(), N, C, 1e-5f,
                               version);
    std::vector<float> f_out(NC), f_mean(n), f_rstd(n);
    cuda::layernorm_forward<float>(f_out.data(), f_mean.data(), f_rstd.data(), inp.data(),
                                   weight.data(), bias.data(), N, C, 1e-5f, version);
    std::vector<float> c_out(NC), c_mean(n), c_rstd(n);
    cpu::layernorm_forward(c_out.data(), c_mean.data(), c_rstd.data(), inp.data(), weight.data(),
                           bias.data(), N, C);
    EXPECT_TRUE(bitwise(label("layernorm_forward out", version, shape), out, f_out));
    EXPECT_TRUE(bitwise(label("layernorm_forward mean", version, shape), mean, f_mean));
    EXPECT_TRUE(bitwise(label("layernorm_forward rstd", version, shape), rstd, f_rstd));
    EXPECT_TRUE(within(label("layernorm_forward out vs cpu", version, shape), out, c_out, kRowTau));
    EXPECT_TRUE(
        within(label("layernorm_forward rstd vs cpu", version, shape), rstd, c_rstd, kRowTau));
    // LayerNorm backward into non-zero gradients, from the CPU's statistics (the same for all).
    std::vector<A> dinp = stored<A>(dinp0);
    std::vector<G> dweight = stored<G>(dweight0), dbias = stored<G>(dbias0);
    cuda::layernorm_backward<A, G>(
        dinp.data(), dweight.data(), dbias.data(), stored<A>(dout).data(), stored<A>(inp).data(),
        stored<A>(weight).data(), c_mean.data(), c_rstd.data(), N, C, version);
    std::vector<float> f_dinp = dinp0, f_dweight = dweight0, f_dbias = dbias0;
    cuda::layernorm_backward<float, float>(f_dinp.data(), f_dweight.data(), f_dbias.data(),
                                           dout.data(), inp.data(), weight.data(), c_mean.data(),
                                           c_rstd.data(), N, C, version);
    std::vector<float> c_dinp = dinp0, c_dweight = dweight0, c_dbias = dbias0;
    cpu::layernorm_backward(c_dinp.data(), c_dweight.data(), c_dbias.data(), dout.data(),
                            inp.data(), weight.data(), c_mean.data(), c_rstd.data(), N, C);
    EXPECT_TRUE(bitwise(label("layernorm_backward dinp", version, shape), dinp, f_dinp));
    EXPECT_TRUE(bitwise(label("layernorm_backward dweight", version, shape), dweight, f_dweight));
    EXPECT_TRUE(bitwise(label("layernorm_backward dbias", version, shape), dbias, f_dbias));
    EXPECT_TRUE(
        within(label("layernorm_backward dinp vs cpu", version, shape), dinp, c_dinp, kRowTau));
    EXPECT_TRUE(within(label("layernorm_backward dweight vs cpu", version, shape), dweight,
                       c_dweight, kRowTau));
    EXPECT_TRUE(
        within(label("layernorm_backward dbias vs cpu", version, shape), dbias, c_dbias, kRowTau));
    // RMSNorm forward and backward.
    std::vector<A> r_out(NC);
    std::vector<float> r_rstd(n);
    cuda::rmsnorm_forward<A>(r_out.data(), r_rstd.data(), stored<A>(inp).data(),
                             stored<A>(weight).data(), N, C, 1e-5f, version);
    std::vector<float> fr_out(NC), fr_rstd(n), cr_out(NC), cr_rstd(n);
    cuda::rmsnorm_forward<float>(fr_out.data(), fr_rstd.data(), inp.data(), weight.data(), N, C,
                                 1e-5f, version);
    cpu::rmsnorm_forward(cr_out.data(), cr_rstd.data(), inp.data(), weight.data(), N, C);
    EXPECT_TRUE(bitwise(label("rmsnorm_forward out", version, shape), r_out, fr_out));
    EXPECT_TRUE(
        within(label("rmsnorm_forward out vs cpu", version, shape), r_out, cr_out, kRowTau));
    std::vector<A> r_dinp = stored<A>(dinp0);
    std::vector<G> r_dweight = stored<G>(dweight0);
    cuda::rmsnorm_backward<A, G>(r_dinp.data(), r_dweight.data(), stored<A>(dout).data(),
                                 stored<A>(inp).data(), stored<A>(weight).data(), cr_rstd.data(), N,
                                 C, version);
    std::vector<float> fr_dinp = dinp0, fr_dweight = dweight0, cr_dinp = dinp0,
                       cr_dweight = dweight0;
    cuda::rmsnorm_backward<float, float>(fr_dinp.data(), fr_dweight.data(), dout.data(), inp.data(),
                                         weight.data(), cr_rstd.data(), N, C, version);
    cpu::rmsnorm_backward(cr_dinp.data(), cr_dweight.data(), dout.data(), inp.data(), weight.data(),
                          cr_rstd.data(), N, C);
    EXPECT_TRUE(bitwise(label("rmsnorm_backward dinp", version, shape), r_dinp, fr_dinp));
    EXPECT_TRUE(bitwise(label("rmsnorm_backward dweight", version, shape), r_dweight, fr_dweight));
    EXPECT_TRUE(
        within(label("rmsnorm_backward dinp vs cpu", version, shape), r_dinp, cr_dinp, kRowTau));
    EXPECT_TRUE(within(label("rmsnorm_backward dweight vs cpu", version, shape), r_dweight,
                       cr_dweight, kRowTau));
  }
}

// C = 37 is odd (scalar loads); C = 64 takes v2's four-element vector loads.
TEST(CudaLowPrecision, NormalizationBf16) {
  check_normalization<bf16_t, bf16_t>(7, 37);
  check_normalization<bf16_t, float>(5, 64);
  check_normalization<bf16_t, bf16_t>(9, 64);
}
TEST(CudaLowPrecision, NormalizationF16) {
  check_normalization<f16_t, f16_t>(7, 37);
  check_normalization<f16_t, float>(5, 64);
  check_normalization<f16_t, f16_t>(9, 64);
}

// ---- GEMMs -----------------------------------------------------------------------------------

template <class A, class G>
void check_matmul(int64_t N, int64_t C, int64_t OC, bool with_bias) {
  const size_t n_c = static_cast<size_t>(N * C), n_oc = static_cast<size_t>(N * OC);
  const size_t oc_c = static_cast<size_t>(OC * C), oc = static_cast<size_t>(OC);
  const std::string shape =
      cat("N", N, "_C", C, "_OC", OC, " G=", type_name<G>(), (with_bias ? "" : " no bias"));
  const std::vector<float> inp = random_values<A>(n_c, 31), weight = random_values<A>(oc_c, 32);
  const std::vector<float> bias = random_values<A>(oc, 33), dout = random_values<A>(n_oc, 34);
  const std::vector<float> dinp0 = random_values<A>(n_c, 35), dweight0 = random_values<G>(oc_c, 36);
  const std::vector<float> dbias0 = random_values<G>(oc, 37);
  const std::vector<A> bias_a = stored<A>(bias);

  std::vector<A> out(n_oc);
  cuda::matmul_forward<A>(out.data(), stored<A>(inp).data(), stored<A>(weight).data(),
                          with_bias ? bias_a.data() : nullptr, N, C, OC);
  std::vector<float> c_out(n_oc);
  cpu::matmul_forward(c_out.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, N,
                      C, OC);
  EXPECT_TRUE(bitwise("matmul_forward vs cpu " + shape, out, c_out));

  std::vector<A> dinp = stored<A>(dinp0);
  std::vector<G> dweight = stored<G>(dweight0), dbias = stored<G>(dbias0);
  cuda::matmul_backward<A, G>(dinp.data(), dweight.data(), with_bias ? dbias.data() : nullptr,
                              stored<A>(dout).data(), stored<A>(inp).data(),
                              stored<A>(weight).data(), N, C, OC);
  std::vector<float> c_dinp = dinp0, c_dweight = dweight0, c_dbias = dbias0;
  cpu::matmul_backward(c_dinp.data(), c_dweight.data(), with_bias ? c_dbias.data() : nullptr,
                       dout.data(), inp.data(), weight.data(), N, C, OC);
  // The emulated GEMM IS the f32 CPU kernel on widened operands: bitwise.
  EXPECT_TRUE(bitwise("matmul_backward dinp vs cpu " + shape, dinp, c_dinp));
  EXPECT_TRUE(bitwise("matmul_backward dweight vs cpu " + shape, dweight, c_dweight));
  EXPECT_TRUE(bitwise("matmul_backward dbias vs cpu " + shape, dbias, c_dbias));
  if (!with_bias) {
    EXPECT_TRUE(bitwise("untouched dbias " + shape, dbias, dbias0));
  }
}

TEST(CudaLowPrecision, MatmulBf16) {
  check_matmul<bf16_t, bf16_t>(7, 13, 5, true);
  check_matmul<bf16_t, float>(9, 16, 11, true);
  check_matmul<bf16_t, bf16_t>(3, 5, 2, false);
}
TEST(CudaLowPrecision, MatmulF16) {
  check_matmul<f16_t, f16_t>(7, 13, 5, true);
  check_matmul<f16_t, float>(9, 16, 11, false);
}

// ---- attention, rope ---------------------------------------------------------------------------

template <class A>
void check_attention(int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D, float p) {
  const size_t q_n = static_cast<size_t>(B * T * H * D),
               kv_n = static_cast<size_t>(B * T * Hkv * D);
  const size_t att_n = static_cast<size_t>(B * H * T * T);
  const std::string shape = cat("B", B, "_T", T, "_H", H, "_Hkv", Hkv, "_D", D, "_p", p);
  const cpu::AttentionDropout dropout{p, 5, 9};
  const std::vector<float> q = random_values<A>(q_n, 41), k = random_values<A>(kv_n, 42);
  const std::vector<float> v = random_values<A>(kv_n, 43), dout = random_values<A>(q_n, 44);
  const std::vector<float> dq0 = random_values<A>(q_n, 45), dk0 = random_values<A>(kv_n, 46);
  const std::vector<float> dv0 = random_values<A>(kv_n, 47);

  std::vector<A> out(q_n), preatt(att_n), att(att_n);
  cuda::attention_forward<A>(out.data(), preatt.data(), att.data(), stored<A>(q).data(),
                             stored<A>(k).data(), stored<A>(v).data(), B, T, H, Hkv, D, dropout);
  std::vector<float> f_out(q_n), f_preatt(att_n), f_att(att_n);
  cuda::attention_forward<float>(f_out.data(), f_preatt.data(), f_att.data(), q.data(), k.data(),
                                 v.data(), B, T, H, Hkv, D, dropout);
  std::vector<float> c_out(q_n), c_preatt(att_n), c_att(att_n);
  cpu::attention_forward(c_out.data(), c_preatt.data(), c_att.data(), q.data(), k.data(), v.data(),
                         B, T, H, Hkv, D, dropout);
  EXPECT_TRUE(bitwise("attention_forward preatt " + shape, preatt, f_preatt));
  EXPECT_TRUE(bitwise("attention_forward att " + shape, att, f_att));
  EXPECT_TRUE(within("attention_forward att vs cpu " + shape, att, c_att, kSumTau));
  // out is computed from att as stored (the forward's output), so its reference widens that.
  std::vector<float> f_out_from_stored(q_n), scratch(att_n), scratch2(att_n);
  {
    std::vector<float> att_stored = widened(att);
    // values only: out = att_stored · v, computed by the CPU reference on the stored att.
    for (int64_t b = 0; b < B; b++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++)
          for (int64_t d = 0; d < D; d++) {
            const int64_t kvh = h / (H / Hkv);
            const int64_t row = ((b * H + h) * T + t) * T;
            double total = 0.0;
            for (int64_t t2 = 0; t2 <= t; t2++) {
              double a = att_stored[static_cast<size_t>(row + t2)];
              if (p > 0.0f) {
                const bool keep = dropout_keep(5, 9 + static_cast<uint64_t>(row + t2), p);
                a = keep ? a * dropout_scale(p) : 0.0;
              }
              total += a * v[static_cast<size_t>(((b * T + t2) * Hkv + kvh) * D + d)];
            }
            f_out_from_stored[static_cast<size_t>(((b * T + t) * H + h) * D + d)] =
                static_cast<float>(total);
          }
  }
  EXPECT_TRUE(
      within("attention_forward out vs stored att " + shape, out, f_out_from_stored, kSumTau));

  std::vector<A> dq = stored<A>(dq0), dk = stored<A>(dk0), dv = stored<A>(dv0), dpreatt(att_n);
  cuda::attention_backward<A>(dq.data(), dk.data(), dv.data(), dpreatt.data(),
                              stored<A>(dout).data(), stored<A>(q).data(), stored<A>(k).data(),
                              stored<A>(v).data(), att.data(), B, T, H, Hkv, D, dropout);
  const std::vector<float> att_in = widened(att);
  std::vector<float> c_dq = dq0, c_dk = dk0, c_dv = dv0, c_dpreatt(att_n);
  cpu::attention_backward(c_dq.data(), c_dk.data(), c_dv.data(), c_dpreatt.data(), dout.data(),
                          q.data(), k.data(), v.data(), att_in.data(), B, T, H, Hkv, D, dropout);
  EXPECT_TRUE(within("attention_backward dpreatt vs cpu " + shape, dpreatt, c_dpreatt, kSumTau));
  EXPECT_TRUE(within("attention_backward dv vs cpu " + shape, dv, c_dv, kSumTau));
  // dq and dk are sums of dpreatt as stored in A: each term carries up to half an ulp_A of
  // dpreatt's rounding, so the bound adds u_A · scale · Σ|dpreatt · k| (resp. · q) per element.
  const double unit = ulp<A>(1.0) / 2.0, scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<float> dq_slack(q_n, 0.0f), dk_slack(kv_n, 0.0f);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t t2 = 0; t2 <= t; t2++) {
          const double g =
              std::fabs(double{c_dpreatt[static_cast<size_t>(((b * H + h) * T + t) * T + t2)]});
          const int64_t kvh = h / (H / Hkv);
          for (int64_t d = 0; d < D; d++) {
            const size_t qi = static_cast<size_t>(((b * T + t) * H + h) * D + d);
            const size_t ki = static_cast<size_t>(((b * T + t2) * Hkv + kvh) * D + d);
            dq_slack[qi] += static_cast<float>(unit * scale * g * std::fabs(double{k[ki]}));
            dk_slack[ki] += static_cast<float>(unit * scale * g * std::fabs(double{q[qi]}));
          }
        }
  const auto within_slack = [&](const char* what, const std::vector<A>& actual,
                                const std::vector<float>& reference,
                                const std::vector<float>& slack) {
    double max_reference = 0.0;
    for (float r : reference) max_reference = std::max(max_reference, std::fabs(double{r}));
    const double d = 2.0 * kSumTau * max_reference;
    double worst_share = 0.0, worst_diff = 0.0;
    size_t worst = 0;
    for (size_t i = 0; i < actual.size(); i++) {
      const double tolerance =
          d + 2.0 * slack[i] + ulp<A>(std::fabs(double{reference[i]}) + d + slack[i]);
      const double diff =
          std::fabs(double{widen(actual[i])} - double{widen(narrow<A>(reference[i]))});
      if (diff / tolerance > worst_share)
        worst_share = diff / tolerance, worst_diff = diff, worst = i;
    }
    EXPECT_LE(worst_share, 1.0) << what << " " << shape << " (" << type_name<A>()
                                << "): max |diff| " << worst_diff << " at [" << worst << "], "
                                << 100.0 * worst_share << "% of the tolerance";
  };
  within_slack("attention_backward dq vs cpu", dq, c_dq, dq_slack);
  within_slack("attention_backward dk vs cpu", dk, c_dk, dk_slack);
}

TEST(CudaLowPrecision, AttentionBf16) {
  check_attention<bf16_t>(2, 7, 4, 2, 8, 0.0f);
  check_attention<bf16_t>(1, 5, 2, 1, 6, 0.25f);
}
TEST(CudaLowPrecision, AttentionF16) {
  check_attention<f16_t>(2, 7, 4, 2, 8, 0.0f);
  check_attention<f16_t>(1, 5, 2, 1, 6, 0.25f);
}

template <class A>
void check_rope(int64_t B, int64_t T, int64_t H, int64_t D) {
  const size_t n = static_cast<size_t>(B * T * H * D);
  const std::string shape = cat("B", B, "_T", T, "_D", D);
  const std::vector<float> inp = random_values<A>(n, 51), dinp0 = random_values<A>(n, 52);
  std::vector<A> out(n), dinp = stored<A>(dinp0);
  cuda::rope_forward<A>(out.data(), stored<A>(inp).data(), B, T, H, D, 10000.0);
  cuda::rope_backward<A>(dinp.data(), stored<A>(inp).data(), B, T, H, D, 10000.0);
  std::vector<float> f_out(n), f_dinp = dinp0, c_out(n), c_dinp = dinp0;
  cuda::rope_forward<float>(f_out.data(), inp.data(), B, T, H, D, 10000.0);
  cuda::rope_backward<float>(f_dinp.data(), inp.data(), B, T, H, D, 10000.0);
  cpu::rope_forward(c_out.data(), inp.data(), B, T, H, D, 10000.0);
  cpu::rope_backward(c_dinp.data(), inp.data(), B, T, H, D, 10000.0);
  EXPECT_TRUE(bitwise("rope_forward " + shape, out, f_out));
  EXPECT_TRUE(bitwise("rope_backward " + shape, dinp, f_dinp));
  EXPECT_TRUE(within("rope_forward vs cpu " + shape, out, c_out, kRowTau));
  EXPECT_TRUE(within("rope_backward vs cpu " + shape, dinp, c_dinp, kRowTau));
}

TEST(CudaLowPrecision, RopeBf16) {
  check_rope<bf16_t>(2, 9, 3, 6);
}
TEST(CudaLowPrecision, RopeF16) {
  check_rope<f16_t>(2, 9, 3, 6);
}

// ---- embedding, cross-entropy ----------------------------------------------------------------

template <class A, class G>
void check_embedding(int64_t B, int64_t T, int64_t C, int64_t V) {
  const size_t btc = static_cast<size_t>(B * T * C), vc = static_cast<size_t>(V * C);
  const size_t tc = static_cast<size_t>(T * C);
  const std::string shape = cat("B", B, "_T", T, "_C", C, "_V", V, " G=", type_name<G>());
  // V small against B·T: tokens repeat, so dwte sums several positions per row.
  const std::vector<int32_t> tokens =
      random_indices(static_cast<size_t>(B * T), static_cast<int32_t>(V), 61);
  const std::vector<float> wte = random_values<A>(vc, 62), wpe = random_values<A>(tc, 63);
  const std::vector<float> dout = random_values<A>(btc, 64), dwte0 = random_values<G>(vc, 65);
  const std::vector<float> dwpe0 = random_values<G>(tc, 66);
  std::vector<A> out(btc);
  const std::vector<A> wpe_a = stored<A>(wpe);
  cuda::embedding_forward<A>(out.data(), tokens.data(), stored<A>(wte).data(), wpe_a.data(), B, T,
                             C, V);
  std::vector<float> c_out(btc);
  cpu::embedding_forward(c_out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, V);
  EXPECT_TRUE(bitwise("embedding_forward vs cpu " + shape, out, c_out));

  std::vector<G> dwte = stored<G>(dwte0), dwpe = stored<G>(dwpe0);
  cuda::embedding_backward<A, G>(dwte.data(), dwpe.data(), stored<A>(dout).data(), tokens.data(), B,
                                 T, C, V);
  std::vector<float> c_dwte = dwte0, c_dwpe = dwpe0;
  cpu::embedding_backward(c_dwte.data(), c_dwpe.data(), dout.data(), tokens.data(), B, T, C, V);
  // A float dwte adds position by position as the CPU does; a 16-bit one sums each token's
  // positions in f32 first (one rounding), an f32 reordering inside the tolerance.
  EXPECT_TRUE(within("embedding_backward dwte vs cpu " + shape, dwte, c_dwte, kRowTau));
  if constexpr (std::is_same_v<G, float>) {
    EXPECT_TRUE(bitwise("embedding_backward dwte (f32) vs cpu " + shape, dwte, c_dwte));
  }
  EXPECT_TRUE(within("embedding_backward dwpe vs cpu " + shape, dwpe, c_dwpe, kRowTau));
  // A 16-bit dwte row is rounded once, however many positions feed it: summing the contributions
  // in f32 and rounding must give the same bits whatever the order within f32's tolerance.
  if constexpr (!std::is_same_v<G, float>) {
    std::vector<float> once = dwte0;
    std::vector<std::vector<float>> totals(static_cast<size_t>(V),
                                           std::vector<float>(static_cast<size_t>(C), 0.0f));
    for (size_t position = 0; position < tokens.size(); position++)
      for (int64_t c = 0; c < C; c++)
        totals[static_cast<size_t>(tokens[position])][static_cast<size_t>(c)] +=
            dout[position * static_cast<size_t>(C) + static_cast<size_t>(c)];
    for (int64_t v = 0; v < V; v++)
      for (int64_t c = 0; c < C; c++)
        once[static_cast<size_t>(v * C + c)] +=
            totals[static_cast<size_t>(v)][static_cast<size_t>(c)];
    EXPECT_TRUE(bitwise("embedding_backward dwte rounded once " + shape, dwte, once));
  }
}

TEST(CudaLowPrecision, EmbeddingBf16) {
  check_embedding<bf16_t, bf16_t>(3, 5, 7, 4);
  check_embedding<bf16_t, float>(3, 5, 7, 4);
}
TEST(CudaLowPrecision, EmbeddingF16) {
  check_embedding<f16_t, f16_t>(3, 5, 7, 4);
  check_embedding<f16_t, float>(2, 6, 9, 3);
}

template <class A>
void check_cross_entropy(int64_t N, int64_t V) {
  const size_t nv = static_cast<size_t>(N * V), n = static_cast<size_t>(N);
  const std::string shape = cat("N", N, "_V", V);
  const std::vector<float> logits = random_values<A>(nv, 71, 3.0);
  const std::vector<int32_t> targets = random_indices(n, static_cast<int32_t>(V), 72);
  for (const KernelVersion version : kVersions) {
    std::vector<float> losses(n), lse(n), f_losses(n), f_lse(n), c_losses(n), c_lse(n);
    std::vector<A> probs(nv);
    std::vector<float> f_probs(nv), c_probs(nv);
    cuda::cross_entropy_forward<A>(losses.data(), lse.data(), probs.data(),
                                   stored<A>(logits).data(), targets.data(), N, V, V, version);
    cuda::cross_entropy_forward<float>(f_losses.data(), f_lse.data(), f_probs.data(), logits.data(),
                                       targets.data(), N, V, V, version);
    cpu::cross_entropy_forward(c_losses.data(), c_lse.data(), c_probs.data(), logits.data(),
                               targets.data(), N, V, V);
    EXPECT_TRUE(bitwise(label("cross_entropy_forward probs", version, shape), probs, f_probs));
    EXPECT_TRUE(bitwise(label("cross_entropy_forward losses", version, shape), losses, f_losses));
    EXPECT_TRUE(within(label("cross_entropy_forward probs vs cpu", version, shape), probs, c_probs,
                       kRowTau));
    EXPECT_TRUE(within(label("cross_entropy_forward losses vs cpu", version, shape), losses,
                       c_losses, kRowTau));
    std::vector<A> dlogits(nv);
    cuda::cross_entropy_dlogits<A>(dlogits.data(), probs.data(), targets.data(), N, V, V,
                                   1.0f / static_cast<float>(N));
    std::vector<float> c_dlogits(nv);
    const std::vector<float> probs_in = widened(probs);
    cpu::cross_entropy_dlogits(c_dlogits.data(), probs_in.data(), targets.data(), N, V, V,
                               1.0f / static_cast<float>(N));
    EXPECT_TRUE(bitwise(label("cross_entropy_dlogits vs cpu", version, shape), dlogits, c_dlogits));
  }
}

TEST(CudaLowPrecision, CrossEntropyBf16) {
  check_cross_entropy<bf16_t>(6, 45);
}
TEST(CudaLowPrecision, CrossEntropyF16) {
  check_cross_entropy<f16_t>(6, 45);
}

// ---- cast, check_gradients ---------------------------------------------------------------------

// Edge values: NaN, ±inf, f16 overflow (70000), f16 and bf16 subnormals, a bf16 tie.
std::vector<float> cast_inputs() {
  std::vector<float> x = random_values<float>(257, 81, 100.0);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            70000.0f,
                            -70000.0f,
                            65504.0f,
                            3e-6f,
                            -6e-8f,
                            1e-40f,
                            1.0f + 1.0f / 256.0f,
                            0.0f,
                            -0.0f};
  for (size_t i = 0; i < std::size(specials); i++) x[i * 7] = specials[i];
  return x;
}

template <class To, class From>
void check_cast() {
  const std::vector<From> inp = stored<From>(cast_inputs());
  std::vector<To> out(inp.size());
  cuda::cast<To, From>(out.data(), inp.data(), static_cast<int64_t>(inp.size()));
  std::vector<float> expected(inp.size());
  for (size_t i = 0; i < inp.size(); i++) expected[i] = widen(inp[i]);
  EXPECT_TRUE(bitwise(std::string("cast from ") + type_name<From>(), out, expected));
}

TEST(CudaLowPrecision, CastEveryPair) {
  check_cast<float, float>();
  check_cast<float, bf16_t>();
  check_cast<float, f16_t>();
  check_cast<bf16_t, float>();
  check_cast<bf16_t, bf16_t>();
  check_cast<bf16_t, f16_t>();
  check_cast<f16_t, float>();
  check_cast<f16_t, bf16_t>();
  check_cast<f16_t, f16_t>();
  // 70000 overflows f16 to inf (not 65504), NaN stays NaN.
  const float values[] = {70000.0f, std::numeric_limits<float>::quiet_NaN()};
  f16_t out[2];
  cuda::cast<f16_t, float>(out, values, 2);
  EXPECT_TRUE(std::isinf(widen(out[0])));
  EXPECT_TRUE(std::isnan(widen(out[1])));
}

template <class T>
void check_gradient_check(int64_t n) {
  const std::string shape = cat(std::string(type_name<T>()), " n", n);
  const std::vector<T> grads = stored<T>(random_values<T>(static_cast<size_t>(n), 91, 1e-2));
  const float multiplier = 0.75f;
  double expected = 0.0;
  for (const T g : grads) {
    const double scaled = static_cast<double>(multiplier * widen(g));
    expected += scaled * scaled;
  }
  for (const KernelVersion version : kVersions) {
    std::vector<T> copy = grads;
    double out[cuda::kCheckGradientsScratch] = {};
    cuda::check_gradients<T>(out, copy.data(), n, multiplier, version);
    EXPECT_NEAR(out[0], expected, 1e-12 * expected + 1e-300)
        << label("check_gradients", version, shape);
    EXPECT_EQ(std::memcmp(copy.data(), grads.data(), grads.size() * sizeof(T)), 0)
        << "gradients changed";
    // NaN, inf, and an f32 overflow of multiplier·g in the last element, where v2's scalar tail
    // and v1's last block see it.
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::infinity(), 60000.0f}) {
      copy = grads;
      copy.back() = narrow<T>(bad);
      const float m = bad == 60000.0f ? 1e35f : multiplier;  // 6e4 · 1e35 > f32 max
      cuda::check_gradients<T>(out, copy.data(), n, m, version);
      EXPECT_FALSE(std::isfinite(out[0]))
          << label("check_gradients", version, shape) << " bad " << bad;
    }
  }
}

// One element past an aligned allocation: no four-element vector loads, v2 takes its scalar loop.
template <class T>
void check_gradient_check_misaligned(int64_t n) {
  const std::vector<T> storage = stored<T>(random_values<T>(static_cast<size_t>(n + 1), 92));
  double expected = 0.0;
  for (size_t i = 1; i < storage.size(); i++) {
    const double scaled = static_cast<double>(2.0f * widen(storage[i]));
    expected += scaled * scaled;
  }
  for (const KernelVersion version : kVersions) {
    double out[cuda::kCheckGradientsScratch] = {};
    cuda::check_gradients<T>(out, storage.data() + 1, n, 2.0f, version);
    EXPECT_NEAR(out[0], expected, 1e-12 * expected)
        << label("check_gradients misaligned", version, cat(type_name<T>(), " n", n));
  }
}

TEST(CudaLowPrecision, CheckGradientsMisaligned) {
  check_gradient_check_misaligned<bf16_t>(1031);
  check_gradient_check_misaligned<f16_t>(1031);
  check_gradient_check_misaligned<float>(1031);
}

TEST(CudaLowPrecision, CheckGradients) {
  for (int64_t n : {1, 5, 1030, 70001}) {
    check_gradient_check<float>(n);
    check_gradient_check<bf16_t>(n);
    check_gradient_check<f16_t>(n);
  }
}

// ---- optimizers --------------------------------------------------------------------------------

template <class P, class R, class S, class W>
void check_adamw(int64_t n, KernelVersion version) {
  const size_t count = static_cast<size_t>(n);
  const std::string shape =
      cat(std::string("param "), type_name<P>(), " grad ", type_name<R>(), " state ",
          type_name<S>(), " working ", (std::is_same_v<W, float> ? "none" : type_name<W>()), " n",
          n, " ", cuda::kernel_version_name(version));
  const std::vector<float> param0 = random_values<P>(count, 101);
  const std::vector<float> grad0 = random_values<R>(count, 102, 64.0);  // a loss-scaled gradient
  const std::vector<float> m0 = random_values<S>(count, 103, 0.1),
                           v0 = positive_values<S>(count, 104);
  const float multiplier = 1.0f / 64.0f;
  cpu::AdamWHyperparameters hp;
  hp.weight_decay = 0.1f;
  std::vector<P> param = stored<P>(param0);
  std::vector<S> m = stored<S>(m0), v = stored<S>(v0);
  std::vector<W> working(count);
  constexpr bool has_working = !std::is_same_v<W, float>;
  cuda::adamw_update<P, R, S>(param.data(), stored<R>(grad0).data(), m.data(), v.data(),
                              has_working ? working.data() : nullptr,
                              std::is_same_v<W, bf16_t> ? DType::bf16 : DType::f16, n, hp,
                              {.step = 3, .grad_multiplier = multiplier}, version);
  std::vector<float> g(count);  // the unscaled gradient the update sees
  for (size_t i = 0; i < count; i++) g[i] = multiplier * grad0[i];
  std::vector<float> f_param = param0, f_m = m0, f_v = v0, c_param = param0, c_m = m0, c_v = v0;
  cuda::adamw_update(f_param.data(), g.data(), f_m.data(), f_v.data(), n, hp, 3, version);
  cpu::adamw_update(c_param.data(), g.data(), c_m.data(), c_v.data(), n, hp, 3);
  EXPECT_TRUE(bitwise("adamw param " + shape, param, f_param));
  EXPECT_TRUE(bitwise("adamw m " + shape, m, f_m));
  EXPECT_TRUE(bitwise("adamw v " + shape, v, f_v));
  EXPECT_TRUE(within("adamw param vs cpu " + shape, param, c_param, kElementwiseTau));
  EXPECT_TRUE(within("adamw v vs cpu " + shape, v, c_v, kElementwiseTau));
  if constexpr (has_working) {
    EXPECT_TRUE(bitwise("adamw working " + shape, working, widened(param)));
  }
}

template <class P, class R, class S, class W>
void check_sgd(int64_t n, bool nesterov) {
  const size_t count = static_cast<size_t>(n);
  const std::string shape = cat(std::string("sgd param "), type_name<P>(), " grad ", type_name<R>(),
                                " state ", type_name<S>(), " n", n);
  const std::vector<float> param0 = random_values<P>(count, 111);
  const std::vector<float> grad0 = random_values<R>(count, 112, 8.0);
  const std::vector<float> buffer0 = random_values<S>(count, 113, 0.5);
  const float multiplier = 0.125f;
  std::vector<P> param = stored<P>(param0);
  std::vector<S> buffer = stored<S>(buffer0);
  std::vector<W> working(count);
  constexpr bool has_working = !std::is_same_v<W, float>;
  cuda::sgd_update<P, R, S>(
      param.data(), stored<R>(grad0).data(), buffer.data(), has_working ? working.data() : nullptr,
      std::is_same_v<W, bf16_t> ? DType::bf16 : DType::f16, n,
      {.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = nesterov},
      {.grad_multiplier = multiplier});
  std::vector<float> g(count);
  for (size_t i = 0; i < count; i++) g[i] = multiplier * grad0[i];
  std::vector<float> c_param = param0, c_buffer = buffer0;
  cpu::sgd_update(
      c_param.data(), g.data(), c_buffer.data(), n,
      {.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = nesterov});
  EXPECT_TRUE(within(shape + " param vs cpu", param, c_param, kElementwiseTau));
  EXPECT_TRUE(within(shape + " buffer vs cpu", buffer, c_buffer, kElementwiseTau));
  if constexpr (has_working) {
    EXPECT_TRUE(bitwise(shape + " working", working, widened(param)));
  }
}

TEST(CudaLowPrecision, OptimizersMixedTypes) {
  for (const KernelVersion version : kVersions) {
    for (int64_t n : {1, 7, 1027}) {
      check_adamw<float, bf16_t, float, bf16_t>(n, version);   // bf16 mixed precision
      check_adamw<float, f16_t, float, f16_t>(n, version);     // f16 with a loss scaler
      check_adamw<float, float, float, float>(n, version);     // fp32 with a multiplier
      check_adamw<bf16_t, bf16_t, bf16_t, float>(n, version);  // pure bf16
      check_adamw<float, f16_t, bf16_t, f16_t>(n, version);    // 16-bit optimizer state
    }
  }
  for (const bool nesterov : {false, true}) {
    check_sgd<float, bf16_t, float, bf16_t>(1027, nesterov);
    check_sgd<bf16_t, bf16_t, bf16_t, float>(33, nesterov);
    check_sgd<float, f16_t, bf16_t, f16_t>(33, nesterov);
  }
}

// ---- the low-memory optimizers ----------------------------------------------------------------
// Each typed launcher twice: against the float launcher of the same version on the widened
// inputs (bitwise: the same f32 arithmetic, each stored value rounded once), and against the CPU
// kernel of the same types on the same inputs (within the elementwise tolerance: the CPU kernels
// are compiled with FMA contraction, the emulated ones without). Adafactor with a 16-bit state
// reads its rounded row and column variances back for V̂, as the CPU kernel does, so only the CPU
// comparison applies there.

template <class W>
DType working_dtype() {
  return std::is_same_v<W, f16_t> ? DType::f16 : DType::bf16;
}

template <class P, class R, class S, class W>
std::string optimizer_case(const char* op, int64_t n, KernelVersion version) {
  return cat(op, " param ", type_name<P>(), " grad ", type_name<R>(), " state ", type_name<S>(),
             " working ", (std::is_same_v<W, float> ? "none" : type_name<W>()), " n", n, " ",
             cuda::kernel_version_name(version));
}

// The CPU kernels take a typed working pointer; "none" is a null bf16 one.
template <class W>
using CpuWorking = std::conditional_t<std::is_same_v<W, float>, bf16_t, W>;

template <class P, class R, class S, class W>
void check_lion(int64_t n, KernelVersion version) {
  const size_t count = static_cast<size_t>(n);
  const std::string what = optimizer_case<P, R, S, W>("lion", n, version);
  const std::vector<float> param0 = random_values<P>(count, 201);
  const std::vector<float> grad0 = random_values<R>(count, 202, 64.0);
  const std::vector<float> m0 = random_values<S>(count, 203, 0.1);
  const float multiplier = 1.0f / 64.0f;
  cpu::LionHyperparameters hp;
  hp.weight_decay = 0.1f;
  constexpr bool has_working = !std::is_same_v<W, float>;
  std::vector<P> param = stored<P>(param0), c_param = param;
  std::vector<S> m = stored<S>(m0), c_m = m;
  const std::vector<R> grad = stored<R>(grad0);
  std::vector<CpuWorking<W>> working(count), c_working(count);
  cuda::lion_update<P, R, S>(param.data(), grad.data(), m.data(),
                             has_working ? working.data() : nullptr, working_dtype<W>(), n, hp,
                             {.grad_multiplier = multiplier}, version);
  cpu::lion_update<P, R, S, CpuWorking<W>>(c_param.data(), grad.data(), c_m.data(),
                                           has_working ? c_working.data() : nullptr, n, hp,
                                           {.grad_multiplier = multiplier});
  std::vector<float> g(count), f_param = param0, f_m = m0;
  for (size_t i = 0; i < count; i++) g[i] = multiplier * grad0[i];
  cuda::lion_update<float, float, float>(f_param.data(), g.data(), f_m.data(), nullptr, DType::bf16,
                                         n, hp, {.grad_multiplier = 1.0f}, version);
  EXPECT_TRUE(bitwise(what + " param", param, f_param));
  EXPECT_TRUE(bitwise(what + " m", m, f_m));
  EXPECT_TRUE(within(what + " param vs cpu", param, widened(c_param), kElementwiseTau));
  EXPECT_TRUE(within(what + " m vs cpu", m, widened(c_m), kElementwiseTau));
  if constexpr (has_working) {
    EXPECT_TRUE(bitwise(what + " working", working, widened(param)));
  }
}

template <class P, class R, class S, class W>
void check_adam_mini(int64_t block_size, int64_t blocks, KernelVersion version) {
  const int64_t n = block_size * blocks;
  const size_t count = static_cast<size_t>(n);
  const std::string what =
      cat(optimizer_case<P, R, S, W>("adam_mini", n, version), " block ", block_size);
  const std::vector<float> param0 = random_values<P>(count, 211);
  const std::vector<float> grad0 = random_values<R>(count, 212, 64.0);
  const std::vector<float> m0 = random_values<S>(count, 213, 0.1);
  const std::vector<float> v0 = positive_values<S>(static_cast<size_t>(blocks), 214);
  const float multiplier = 1.0f / 64.0f;
  cpu::AdamWHyperparameters hp;
  hp.learning_rate = 0.01f;
  hp.weight_decay = 0.1f;
  constexpr bool has_working = !std::is_same_v<W, float>;
  std::vector<P> param = stored<P>(param0), c_param = param;
  std::vector<S> m = stored<S>(m0), c_m = m, v = stored<S>(v0), c_v = v;
  const std::vector<R> grad = stored<R>(grad0);
  std::vector<CpuWorking<W>> working(count), c_working(count);
  cuda::adam_mini_update<P, R, S>(param.data(), grad.data(), m.data(), v.data(),
                                  has_working ? working.data() : nullptr, working_dtype<W>(),
                                  block_size, blocks, hp,
                                  {.step = 3, .grad_multiplier = multiplier}, version);
  cpu::adam_mini_update<P, R, S, CpuWorking<W>>(
      c_param.data(), grad.data(), c_m.data(), c_v.data(), has_working ? c_working.data() : nullptr,
      block_size, blocks, hp, {.step = 3, .grad_multiplier = multiplier});
  std::vector<float> g(count), f_param = param0, f_m = m0, f_v = v0;
  for (size_t i = 0; i < count; i++) g[i] = multiplier * grad0[i];
  cuda::adam_mini_update<float, float, float>(f_param.data(), g.data(), f_m.data(), f_v.data(),
                                              nullptr, DType::bf16, block_size, blocks, hp,
                                              {.step = 3, .grad_multiplier = 1.0f}, version);
  EXPECT_TRUE(bitwise(what + " param", param, f_param));
  EXPECT_TRUE(bitwise(what + " m", m, f_m));
  EXPECT_TRUE(bitwise(what + " v", v, f_v));
  EXPECT_TRUE(within(what + " param vs cpu", param, widened(c_param), kElementwiseTau));
  EXPECT_TRUE(within(what + " v vs cpu", v, widened(c_v), kElementwiseTau));
  if constexpr (has_working) {
    EXPECT_TRUE(bitwise(what + " working", working, widened(param)));
  }
}

template <class P, class R, class S, class W>
void check_adafactor(int64_t rows, int64_t cols, bool factored, KernelVersion version) {
  const int64_t n = rows * cols;
  const size_t count = static_cast<size_t>(n);
  const std::string what = cat(optimizer_case<P, R, S, W>("adafactor", n, version), " ", rows, "x",
                               cols, factored ? " factored" : " unfactored");
  const size_t row_count = static_cast<size_t>(factored ? rows : cols);
  const size_t col_count = static_cast<size_t>(factored ? cols : 0);
  const std::vector<float> param0 = random_values<P>(count, 221);
  const std::vector<float> grad0 = random_values<R>(count, 222, 64.0);
  const std::vector<float> row0 = positive_values<S>(row_count, 223);
  const std::vector<float> col0 = positive_values<S>(col_count, 224);
  const float multiplier = 1.0f / 64.0f;
  cpu::AdafactorHyperparameters hp;
  hp.weight_decay = 0.1f;
  constexpr bool has_working = !std::is_same_v<W, float>;
  std::vector<P> param = stored<P>(param0), c_param = param;
  std::vector<S> row = stored<S>(row0), c_row = row, col = stored<S>(col0), c_col = col;
  const std::vector<R> grad = stored<R>(grad0);
  std::vector<CpuWorking<W>> working(count), c_working(count);
  cuda::adafactor_update<P, R, S>(
      param.data(), grad.data(), row.data(), factored ? col.data() : nullptr,
      has_working ? working.data() : nullptr, working_dtype<W>(), rows, cols, factored, hp,
      {.step = 2, .grad_multiplier = multiplier}, version);
  cpu::adafactor_update<P, R, S, CpuWorking<W>>(
      c_param.data(), grad.data(), c_row.data(), factored ? c_col.data() : nullptr,
      has_working ? c_working.data() : nullptr, rows, cols, factored, hp,
      {.step = 2, .grad_multiplier = multiplier});
  EXPECT_TRUE(within(what + " param vs cpu", param, widened(c_param), kElementwiseTau));
  EXPECT_TRUE(within(what + " row_var vs cpu", row, widened(c_row), kElementwiseTau));
  EXPECT_TRUE(within(what + " col_var vs cpu", col, widened(c_col), kElementwiseTau));
  if constexpr (has_working) {
    EXPECT_TRUE(bitwise(what + " working", working, widened(param)));
  }
  if constexpr (std::is_same_v<S, float>) {
    std::vector<float> g(count), f_param = param0, f_row = row0, f_col = col0;
    for (size_t i = 0; i < count; i++) g[i] = multiplier * grad0[i];
    cuda::adafactor_update<float, float, float>(
        f_param.data(), g.data(), f_row.data(), factored ? f_col.data() : nullptr, nullptr,
        DType::bf16, rows, cols, factored, hp, {.step = 2, .grad_multiplier = 1.0f}, version);
    EXPECT_TRUE(bitwise(what + " param", param, f_param));
    EXPECT_TRUE(bitwise(what + " row_var", row, f_row));
    EXPECT_TRUE(bitwise(what + " col_var", col, f_col));
  }
}

TEST(CudaLowPrecision, LowMemoryOptimizersMixedTypes) {
  for (const KernelVersion version : kVersions) {
    for (int64_t n : {1, 7, 1027}) {
      check_lion<float, bf16_t, float, bf16_t>(n, version);   // bf16 mixed precision
      check_lion<float, f16_t, float, f16_t>(n, version);     // f16 with a loss scaler
      check_lion<float, float, float, float>(n, version);     // fp32 with a multiplier
      check_lion<bf16_t, bf16_t, bf16_t, float>(n, version);  // pure bf16
      check_lion<float, f16_t, bf16_t, f16_t>(n, version);    // 16-bit optimizer state
    }
    for (auto [block_size, blocks] : {std::pair<int64_t, int64_t>{1, 7}, {33, 3}, {300, 2}}) {
      check_adam_mini<float, bf16_t, float, bf16_t>(block_size, blocks, version);
      check_adam_mini<float, float, float, float>(block_size, blocks, version);
      check_adam_mini<bf16_t, bf16_t, bf16_t, float>(block_size, blocks, version);
      check_adam_mini<float, f16_t, bf16_t, f16_t>(block_size, blocks, version);
    }
    for (auto [rows, cols, factored] :
         {std::tuple<int64_t, int64_t, bool>{7, 33, true}, {1, 257, true}, {1, 1001, false}}) {
      check_adafactor<float, bf16_t, float, bf16_t>(rows, cols, factored, version);
      check_adafactor<float, float, float, float>(rows, cols, factored, version);
      check_adafactor<bf16_t, bf16_t, bf16_t, float>(rows, cols, factored, version);
      check_adafactor<float, f16_t, bf16_t, f16_t>(rows, cols, factored, version);
    }
  }
}

// ---- the emulated backend's dispatch ------------------------------------------------------------

TEST(CudaLowPrecision, BackendDispatchesStorageTypes) {
  const auto backend = nn::make_emulated_cuda_kernel_backend();
  const int64_t n = 300;
  const std::vector<float> a = random_values<bf16_t>(static_cast<size_t>(n), 121);
  const std::vector<float> b = random_values<bf16_t>(static_cast<size_t>(n), 122);
  std::vector<bf16_t> a16 = stored<bf16_t>(a), b16 = stored<bf16_t>(b), out(a16.size());
  using memory::TensorView;
  const TensorView va(a16.data(), DType::bf16, {n}), vb(b16.data(), DType::bf16, {n});
  const TensorView vout(out.data(), DType::bf16, {n});
  backend->residual_forward(vout, va, vb);
  std::vector<float> expected(a.size());
  cpu::residual_forward(expected.data(), a.data(), b.data(), n);
  EXPECT_TRUE(bitwise("backend residual_forward", out, expected));

  // cast bf16 -> f16 and check_gradients on the f16 copy, through the backend.
  std::vector<f16_t> h(a.size());
  backend->cast(TensorView(h.data(), DType::f16, {n}), va);
  EXPECT_TRUE(bitwise("backend cast", h, a));
  const auto check = backend->check_gradients(TensorView(h.data(), DType::f16, {n}), 0.5f);
  double expected_sum = 0.0;
  for (const float value : a) expected_sum += double{0.5f * value} * double{0.5f * value};
  EXPECT_FALSE(check.found_inf);
  EXPECT_NEAR(check.sum_of_squares, expected_sum, 1e-12 * expected_sum);
  h[17] = to_f16(std::numeric_limits<float>::infinity());
  EXPECT_TRUE(backend->check_gradients(TensorView(h.data(), DType::f16, {n}), 0.5f).found_inf);

  // linear_backward with an f32 dweight from bf16 operands (G = f32).
  const int64_t N = 5, C = 6, OC = 4;
  const std::vector<float> inp = random_values<bf16_t>(N * C, 123),
                           w = random_values<bf16_t>(OC * C, 124);
  const std::vector<float> dout = random_values<bf16_t>(N * OC, 125);
  std::vector<bf16_t> inp16 = stored<bf16_t>(inp), w16 = stored<bf16_t>(w),
                      dout16 = stored<bf16_t>(dout);
  std::vector<bf16_t> dinp16(static_cast<size_t>(N * C), to_bf16(0.0f));
  std::vector<float> dweight(static_cast<size_t>(OC * C), 0.25f),
      dbias(static_cast<size_t>(OC), -1.0f);
  backend->linear_backward(TensorView(dinp16.data(), DType::bf16, {N, C}),
                           TensorView(dweight.data(), DType::f32, {OC, C}),
                           TensorView(dbias.data(), DType::f32, {OC}),
                           TensorView(dout16.data(), DType::bf16, {N, OC}),
                           TensorView(inp16.data(), DType::bf16, {N, C}),
                           TensorView(w16.data(), DType::bf16, {OC, C}), N, C, OC);
  std::vector<float> c_dinp(static_cast<size_t>(N * C), 0.0f),
      c_dweight(static_cast<size_t>(OC * C), 0.25f), c_dbias(static_cast<size_t>(OC), -1.0f);
  cpu::matmul_backward(c_dinp.data(), c_dweight.data(), c_dbias.data(), dout.data(), inp.data(),
                       w.data(), N, C, OC);
  EXPECT_TRUE(bitwise("backend linear_backward dinp", dinp16, c_dinp));
  EXPECT_TRUE(bitwise("backend linear_backward dweight", dweight, c_dweight));
  EXPECT_TRUE(bitwise("backend linear_backward dbias", dbias, c_dbias));
}

// The optimizers through the backend: OptimizerTypes from the views, f16 gradients with an f16
// working copy (f16 mixed precision), and SGD without a momentum buffer.
TEST(CudaLowPrecision, BackendOptimizersDispatchOptimizerTypes) {
  const auto backend = nn::make_emulated_cuda_kernel_backend();
  using memory::TensorView;
  const int64_t n = 45;
  const size_t count = static_cast<size_t>(n);
  const std::vector<float> param0 = random_values<float>(count, 131);
  const std::vector<float> grad0 = random_values<f16_t>(count, 132, 256.0);
  std::vector<float> param = param0, m(count, 0.0f), v(count, 0.0f);
  std::vector<f16_t> grad = stored<f16_t>(grad0), working(count);
  cpu::AdamWHyperparameters hp;
  backend->adamw_update(
      TensorView(param.data(), DType::f32, {n}), TensorView(grad.data(), DType::f16, {n}),
      TensorView(m.data(), DType::f32, {n}), TensorView(v.data(), DType::f32, {n}),
      TensorView(working.data(), DType::f16, {n}), hp,
      {.step = 1, .grad_multiplier = 1.0f / 256.0f});
  std::vector<float> g(count), c_param = param0, c_m(count, 0.0f), c_v(count, 0.0f);
  for (size_t i = 0; i < count; i++) g[i] = (1.0f / 256.0f) * grad0[i];
  cuda::adamw_update(c_param.data(), g.data(), c_m.data(), c_v.data(), n, hp, 1);
  EXPECT_TRUE(bitwise("backend adamw param", param, c_param));
  EXPECT_TRUE(bitwise("backend adamw working", working, c_param));

  std::vector<bf16_t> bparam = stored<bf16_t>(param0), bgrad = stored<bf16_t>(grad0);
  backend->sgd_update(
      TensorView(bparam.data(), DType::bf16, {n}), TensorView(bgrad.data(), DType::bf16, {n}),
      TensorView{}, TensorView{},
      {.learning_rate = 0.5f, .momentum = 0.0f, .weight_decay = 0.0f, .nesterov = false},
      {.grad_multiplier = 0.25f});
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; i++) {
    const float p = widen(narrow<bf16_t>(param0[i]));
    expected[i] = p - 0.5f * (0.25f * widen(narrow<bf16_t>(grad0[i])));
  }
  EXPECT_TRUE(bitwise("backend sgd bf16 param", bparam, expected));
}

}  // namespace
}  // namespace vramlab
