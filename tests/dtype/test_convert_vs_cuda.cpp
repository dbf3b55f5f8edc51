// f32 -> f16/bf16/fp8 conversions against the CUDA toolkit's own host-side conversions
// (__float2half_rn, __float2bfloat16_rn, __nv_cvt_float_to_fp8 in both saturation modes), bit for
// bit, on edge values and millions of seeded random f32 patterns.
//   build/tests/bin/test_dtype_vs_cuda
// Without the CUDA headers (cmake cache VRAMLAB_CUDA_HEADERS_DIR empty) every test skips with the
// reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/dtype/convert.h"

#if defined(VRAMLAB_TEST_HAVE_CUDA_HEADERS)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace vramlab {
namespace {

#if defined(VRAMLAB_TEST_HAVE_CUDA_HEADERS)

// Counts disagreements between ours and CUDA's for one conversion and reports the first few.
class Agreement {
 public:
  explicit Agreement(const char* what) : what_(what) {}
  void check(float x, uint32_t ours, uint32_t cuda) {
    ++checked_;
    if (ours != cuda && ++mismatches_ <= 8) {
      ADD_FAILURE() << what_ << "(" << x << " = f32 0x" << std::hex << f32_to_bits(x)
                    << "): ours 0x" << ours << ", CUDA 0x" << cuda;
    }
  }
  ~Agreement() {
    EXPECT_EQ(mismatches_, 0) << what_ << ": " << mismatches_ << " of " << checked_
                              << " inputs differ from CUDA";
  }
  Agreement(const Agreement&) = delete;
  Agreement& operator=(const Agreement&) = delete;

 private:
  const char* what_;
  int64_t checked_ = 0;
  int64_t mismatches_ = 0;
};

void compare_all(const std::vector<float>& inputs) {
  Agreement f16("f32_to_f16_bits"), bf16("f32_to_bf16_bits");
  Agreement e4m3_sat("f32_to_e4m3_bits(sat)"), e4m3_nosat("f32_to_e4m3_bits(nosat)");
  Agreement e5m2_sat("f32_to_e5m2_bits(sat)"), e5m2_nosat("f32_to_e5m2_bits(nosat)");
  for (float x : inputs) {
    f16.check(x, f32_to_f16_bits(x), __half_raw(__float2half_rn(x)).x);
    bf16.check(x, f32_to_bf16_bits(x), __nv_bfloat16_raw(__float2bfloat16_rn(x)).x);
    e4m3_sat.check(x, f32_to_e4m3_bits(x, true),
                   __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    e4m3_nosat.check(x, f32_to_e4m3_bits(x, false),
                     __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3));
    e5m2_sat.check(x, f32_to_e5m2_bits(x, true),
                   __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    e5m2_nosat.check(x, f32_to_e5m2_bits(x, false),
                     __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2));
  }
}

// Adds v, its negation and the f32 values one ulp either side.
void add_with_neighbours(std::vector<float>& out, float v) {
  for (float s : {v, -v}) {
    out.push_back(s);
    out.push_back(std::nextafter(s, std::numeric_limits<float>::infinity()));
    out.push_back(std::nextafter(s, -std::numeric_limits<float>::infinity()));
  }
}

TEST(ConvertVsCuda, EdgeValuesAgreeBitForBit) {
  std::vector<float> inputs;
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t nan_bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    inputs.push_back(bits_to_f32(nan_bits));
  }
  inputs.push_back(inf);
  inputs.push_back(-inf);
  // Zero, f32 subnormals, f32 extremes.
  for (float v : {0.0f, std::numeric_limits<float>::denorm_min(), 0x1p-130f,
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::max(), 1.0f}) {
    add_with_neighbours(inputs, v);
  }
  // Each target's max, just above, the overflow midpoint, min normal, subnormals, half of the
  // smallest subnormal, and midpoints between consecutive small values (ties to even).
  for (float v :
       {65504.0f,    65520.0f,    0x1p-14f,  0x1p-24f,  0x1p-25f,  0x3p-26f,  0x1p-15f,  // f16
        0x1.fep127f, 0x1.ffp127f, 0x1p-133f, 0x1p-134f, 0x3p-135f, 0x1p-127f,            // bf16
        448.0f,      464.0f,      480.0f,    0x1p-6f,   0x1p-9f,   0x1p-10f,  0x3p-11f,
        0x1.1p-6f,                                                                          // e4m3
        57344.0f,    61440.0f,    65536.0f,  0x1p-14f,  0x1p-16f,  0x1p-17f,  0x3p-18f}) {  // e5m2
    add_with_neighbours(inputs, v);
  }
  // Every tie between consecutive fp8 magnitudes, and a sweep of f16 ties around 1.
  for (uint32_t b = 0; b < 0x7F; ++b) {
    add_with_neighbours(inputs, (e4m3_bits_to_f32(static_cast<uint8_t>(b)) +
                                 e4m3_bits_to_f32(static_cast<uint8_t>(b + 1))) /
                                    2);
  }
  for (uint32_t b = 0; b < 0x7B; ++b) {
    add_with_neighbours(inputs, (e5m2_bits_to_f32(static_cast<uint8_t>(b)) +
                                 e5m2_bits_to_f32(static_cast<uint8_t>(b + 1))) /
                                    2);
  }
  for (uint32_t b = 0x3B00; b < 0x3D00; ++b) {
    add_with_neighbours(inputs, (f16_bits_to_f32(static_cast<uint16_t>(b)) +
                                 f16_bits_to_f32(static_cast<uint16_t>(b + 1))) /
                                    2);
  }
  compare_all(inputs);
}

// Uniform bit patterns cover NaN, inf, f32 subnormals and every exponent, but almost all of them
// under- or overflow a narrow format; half the inputs therefore get an exponent drawn around the
// targets' ranges (2^-30 .. 2^20) with a random sign and mantissa.
TEST(ConvertVsCuda, RandomF32PatternsAgreeBitForBit) {
#if defined(VRAMLAB_TEST_SANITIZE)
  constexpr size_t kInputs = size_t{1} << 19;  // ASan/UBSan builds run ~10x slower
#else
  constexpr size_t kInputs = size_t{1} << 22;
#endif
  std::mt19937_64 rng(20261121);
  std::vector<float> inputs(kInputs);
  for (size_t i = 0; i < kInputs; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    if (i % 2 == 0) {
      inputs[i] = bits_to_f32(bits);
    } else {
      const uint32_t exponent = 127u - 30u + static_cast<uint32_t>(rng() % 51u);
      inputs[i] = bits_to_f32((bits & 0x807FFFFFu) | (exponent << 23));
    }
  }
  compare_all(inputs);
}

#else  // no CUDA headers

TEST(ConvertVsCuda, EdgeValuesAgreeBitForBit) {
  GTEST_SKIP() << "CUDA headers not found: cmake cache VRAMLAB_CUDA_HEADERS_DIR has no cuda_fp8.h "
                  "(install the CUDA toolkit or set CUDA_HOME)";
}
TEST(ConvertVsCuda, RandomF32PatternsAgreeBitForBit) {
  GTEST_SKIP() << "CUDA headers not found: cmake cache VRAMLAB_CUDA_HEADERS_DIR has no cuda_fp8.h "
                  "(install the CUDA toolkit or set CUDA_HOME)";
}

#endif

}  // namespace
}  // namespace vramlab
