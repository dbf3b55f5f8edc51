// Bulk f32 <-> bf16/f16 array conversions give, bit for bit, what the scalar conversions give, at
// odd sizes (0, 1, 7, 1000003) and on special values.
//   build/tests/bin/test_dtype --gtest_filter='BulkConvert*'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/dtype/bulk_convert.h"
#include "common/dtype/convert.h"

namespace vramlab {
namespace {

std::vector<float> random_inputs(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> values(n);  // (n)
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            bits_to_f32(0xFFFFFFFFu),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            65520.0f,
                            1.0f + 0x1p-8f};
  for (size_t i = 0; i < n; ++i) {
    values[i] = i % 16 < 10 ? specials[i % 16] : bits_to_f32(static_cast<uint32_t>(rng()));
    if (i % 3 == 0) values[i] = bits_to_f32(static_cast<uint32_t>(rng()) % 0x48000000u);
  }
  return values;
}

TEST(BulkConvert, NarrowingMatchesTheScalarConversionsBitForBit) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000003}}) {
    const std::vector<float> src = random_inputs(n, n + 11);        // (n)
    std::vector<uint16_t> bf16(n + 1, 0xABCD), f16(n + 1, 0xABCD);  // (n) + a guard element
    convert_f32_to_bf16(src.data(), bf16.data(), n);
    convert_f32_to_f16(src.data(), f16.data(), n);
    int64_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) {
      if (bf16[i] != f32_to_bf16_bits(src[i]) && ++mismatches <= 5) {
        ADD_FAILURE() << "bf16 at " << i << " of " << n << ": f32 0x" << std::hex
                      << f32_to_bits(src[i]) << " -> 0x" << bf16[i] << ", scalar 0x"
                      << f32_to_bf16_bits(src[i]);
      }
      if (f16[i] != f32_to_f16_bits(src[i]) && ++mismatches <= 5) {
        ADD_FAILURE() << "f16 at " << i << " of " << n << ": f32 0x" << std::hex
                      << f32_to_bits(src[i]) << " -> 0x" << f16[i];
      }
    }
    EXPECT_EQ(mismatches, 0) << "n=" << n;
    EXPECT_EQ(bf16[n], 0xABCD) << "wrote past n=" << n;
    EXPECT_EQ(f16[n], 0xABCD) << "wrote past n=" << n;
  }
}

TEST(BulkConvert, WideningMatchesTheScalarConversionsForEveryPattern) {
  std::vector<uint16_t> patterns(65536);  // (65536)
  for (size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
  std::vector<float> from_bf16(patterns.size()), from_f16(patterns.size());  // (65536)
  convert_bf16_to_f32(patterns.data(), from_bf16.data(), patterns.size());
  convert_f16_to_f32(patterns.data(), from_f16.data(), patterns.size());
  int64_t mismatches = 0;
  for (size_t i = 0; i < patterns.size(); ++i) {
    mismatches += f32_to_bits(from_bf16[i]) != f32_to_bits(bf16_bits_to_f32(patterns[i]));
    mismatches += f32_to_bits(from_f16[i]) != f32_to_bits(f16_bits_to_f32(patterns[i]));
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace vramlab
