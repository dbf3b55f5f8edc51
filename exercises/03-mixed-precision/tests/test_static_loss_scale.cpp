// Tests of exercise 03.4 (the largest safe static loss scale, and GradScaler's backoffs). They
// run against your code (`vramlab check 03.4`) and against the reference (ctest:
// test_ex_03_4_ref).
// Expectations: the runtime's f32 -> f16 conversion (common/dtype/convert.h) decides: S·g must
// round to a finite f16 and 2S·g to infinity, for random magnitudes over all of f32's range and
// at the boundary 65520 = 65504 · (1 + 2^-11); S must be a power of two; the backoffs are counted
// by running GradScaler's rule (halve while the scaled gradient overflows) from 2^16.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/03-mixed-precision/api/static_loss_scale.h"

namespace vramlab::lesson03 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::string describe(float g) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "max|g|=%.9g (f32 0x%08X)", static_cast<double>(g),
                std::bit_cast<uint32_t>(g));
  return buffer;
}

// Whether S·g, computed in f32 and stored as f16, is finite. S·g is exact in double (g has 24
// significant bits, S is a power of two) and, near f16's top, exactly representable in f32.
bool f16_finite(double scale, float g) {
  const double product = scale * static_cast<double>(g);
  if (product >= 131072.0) return false;  // far past f16's range; also keeps the cast in range
  const uint16_t bits = f32_to_f16_bits(static_cast<float>(product));
  return (bits & 0x7C00u) != 0x7C00u;
}

// GradScaler from 2^16, halving after every step whose scaled gradient overflows.
int64_t simulated_backoffs(float g) {
  double scale = 65536.0;
  int64_t backoffs = 0;
  while (!f16_finite(scale, g)) {
    scale *= 0.5;
    ++backoffs;
  }
  return backoffs;
}

// The checks of one magnitude: S a power of two, S·g finite, 2S·g not, backoffs as simulated.
struct ScaleChecks {
  Comparison power{"scale is a power of two (1) or not (0)", Unit::kNumber};
  Comparison finite{"S*g rounds to a finite f16 (1) or not (0)", Unit::kNumber};
  Comparison largest{"2S*g rounds to infinity (1: S is the largest) or not (0)", Unit::kNumber};
  Comparison backoffs{"GradScaler backoffs from 2^16", Unit::kNumber};

  void add(float g) {
    const std::string where = describe(g);
    const double s = largest_safe_loss_scale(g);
    int e = 0;
    const double m = std::frexp(s, &e);
    power.add(where + " S=" + std::to_string(s), 1.0, m == 0.5 ? 1.0 : 0.0);
    finite.add(where + " S=2^" + std::to_string(e - 1), 1.0, f16_finite(s, g) ? 1.0 : 0.0);
    largest.add(where + " S=2^" + std::to_string(e - 1), 1.0, f16_finite(2.0 * s, g) ? 0.0 : 1.0);
    backoffs.add(where, static_cast<double>(simulated_backoffs(g)),
                 static_cast<double>(gradscaler_backoffs(g)));
  }

  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(power);
    VRAMLAB_EXPECT_PASSES(finite);
    VRAMLAB_EXPECT_PASSES(largest);
    VRAMLAB_EXPECT_PASSES(backoffs);
  }
};

//! [test]
TEST(StaticLossScale, TheBoundaryIs65520Not65504Or65536) {
  // For every scale 2^j: g with 2^j·g just below 65520 is safe at 2^j, g with 2^j·g = 65520 (a
  // tie, to even: infinity) or between 65520 and 65536 is not; 65504 and 65519 are safe.
  ScaleChecks checks;
  for (int j = -100; j <= 100; j += 7) {
    for (float top : {65504.0f, 65519.0f, std::nextafter(65520.0f, 0.0f), 65520.0f, 65521.0f,
                      65535.0f, std::nextafter(65536.0f, 0.0f), 65536.0f, 32760.0f, 32768.0f,
                      std::nextafter(32760.0f, 1e9f)}) {
      checks.add(std::ldexp(top, -j));
    }
  }
  checks.expect_passes();
  Comparison exact("largest safe loss scale (by hand)", Unit::kNumber);
  exact.add("max|g| = 1: 2^16 would give 65536", 32768.0, largest_safe_loss_scale(1.0f));
  exact.add("max|g| = 4095/4096: 2^16 gives 65520, a tie to infinity", 32768.0,
            largest_safe_loss_scale(4095.0f / 4096.0f));
  exact.add("max|g| just below 4095/4096", 65536.0,
            largest_safe_loss_scale(std::nextafter(4095.0f / 4096.0f, 0.0f)));
  exact.add("max|g| = 65504/65536", 65536.0, largest_safe_loss_scale(65504.0f / 65536.0f));
  exact.add("max|g| = 65504", 1.0, largest_safe_loss_scale(65504.0f));
  exact.add("max|g| = 65520", 0.5, largest_safe_loss_scale(65520.0f));
  exact.add("max|g| = 0.1", 524288.0, largest_safe_loss_scale(0.1f));
  VRAMLAB_EXPECT_PASSES(exact);
}
//! [test]

TEST(StaticLossScale, RandomMagnitudesOverAllOfF32) {
  // Every binade of f32, subnormals included: the safe scale ranges from 2^-113 to 2^164.
  std::mt19937_64 rng(0x0341);
  ScaleChecks checks;
  for (int i = 0; i < 100000; ++i) {
    const auto bits = static_cast<uint32_t>(rng() % 0x7F800000u);  // finite, >= 0
    const float g = std::bit_cast<float>(bits);
    if (g > 0.0f) checks.add(g);
  }
  // Magnitudes of real gradients, 1e-8 to 1e4, and the extremes.
  std::uniform_real_distribution<float> exponent(-8.0f, 4.0f);
  for (int i = 0; i < 50000; ++i) checks.add(std::pow(10.0f, exponent(rng)));
  for (float g : {std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), 1.0f, 65504.0f})
    checks.add(g);
  checks.expect_passes();
}

TEST(StaticLossScale, BackoffsFromTheDefaultScale) {
  Comparison backoffs("GradScaler backoffs from 2^16 (by hand)", Unit::kNumber);
  backoffs.add("max|g| = 0.5: 2^16 gives 32768, safe", 0, gradscaler_backoffs(0.5f));
  backoffs.add("max|g| = 1e-6: safe", 0, gradscaler_backoffs(1e-6f));
  backoffs.add("max|g| just below 4095/4096: safe", 0,
               gradscaler_backoffs(std::nextafter(4095.0f / 4096.0f, 0.0f)));
  backoffs.add("max|g| = 4095/4096: one", 1, gradscaler_backoffs(4095.0f / 4096.0f));
  backoffs.add("max|g| = 1: one", 1, gradscaler_backoffs(1.0f));
  backoffs.add("max|g| = 3: 2^16·3 → 2^14·3 = 49152", 2, gradscaler_backoffs(3.0f));
  backoffs.add("max|g| = 65504: 16", 16, gradscaler_backoffs(65504.0f));
  backoffs.add("max|g| = f32 max: 16 + 113", 129,
               gradscaler_backoffs(std::numeric_limits<float>::max()));
  VRAMLAB_EXPECT_PASSES(backoffs);
}

TEST(StaticLossScale, RejectsBadInputNamingTheValue) {
  auto expect_usage_error = [](const std::string& what, const std::string& named, auto call) {
    try {
      call();
      ADD_FAILURE() << "no vramlab::UsageError for " << what;
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(named) == std::string::npos)
        ADD_FAILURE() << what << ": the message should name " << named << ": " << e.what();
    }
  };
  const float inf = std::numeric_limits<float>::infinity();
  expect_usage_error("max|g| = 0", "0", [] { largest_safe_loss_scale(0.0f); });
  expect_usage_error("max|g| = -2.5", "-2.5", [] { largest_safe_loss_scale(-2.5f); });
  expect_usage_error("max|g| = inf", "inf", [inf] { largest_safe_loss_scale(inf); });
  expect_usage_error("max|g| = NaN", "nan",
                     [] { largest_safe_loss_scale(std::numeric_limits<float>::quiet_NaN()); });
  expect_usage_error("backoffs for max|g| = -0.25", "-0.25", [] { gradscaler_backoffs(-0.25f); });
  expect_usage_error("backoffs for max|g| = inf", "inf", [inf] { gradscaler_backoffs(inf); });
}

}  // namespace
}  // namespace vramlab::lesson03
