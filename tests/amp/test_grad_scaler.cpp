// GradScaler against PyTorch's rule (torch/amp/grad_scaler.py, _amp_update_scale_) on scripted
// sequences of found-inf flags, and its static and disabled kinds.
#include "common/amp/grad_scaler.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/platform/errors.h"

namespace vramlab::amp {
namespace {

// One optimizer step: check, step or skip, update. Returns whether the step ran.
bool step(GradScaler& s, bool found_inf) {
  s.unscale(found_inf);
  const bool stepped = s.should_step();
  s.update();
  return stepped;
}

// PyTorch's rule written out independently, on the fp32 scale PyTorch keeps.
struct Model {
  float scale;
  int64_t tracker = 0;
  void update(bool found_inf, float growth, float backoff, int64_t interval) {
    if (found_inf) {
      scale *= backoff;
      tracker = 0;
      return;
    }
    if (++tracker == interval) {
      const float grown = scale * growth;
      if (grown <= FLT_MAX) scale = grown;
      tracker = 0;
    }
  }
};

TEST(GradScaler, StartsAtTwoToTheSixteenthWithPyTorchsDefaults) {
  const GradScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.inverse_scale(), 1.0f / 65536.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_TRUE(s.enabled());
}

TEST(GradScaler, AnOverflowHalvesTheScaleAndSkipsTheStep) {
  GradScaler s;
  EXPECT_FALSE(step(s, true));
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_FALSE(step(s, true));
  EXPECT_EQ(s.scale(), 16384.0);
  EXPECT_TRUE(step(s, false));
  EXPECT_EQ(s.scale(), 16384.0);
  EXPECT_EQ(s.growth_tracker(), 1);
}

TEST(GradScaler, GrowsAfterExactly2000CleanStepsNotOneEarlier) {
  GradScaler s;
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(step(s, false));
  EXPECT_EQ(s.scale(), 65536.0) << "grew one step early (off by one)";
  EXPECT_EQ(s.growth_tracker(), 1999);
  EXPECT_TRUE(step(s, false));
  EXPECT_EQ(s.scale(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0) << "the tracker restarts after a growth";
  for (int i = 0; i < 1999; ++i) step(s, false);
  EXPECT_EQ(s.scale(), 131072.0);
  step(s, false);
  EXPECT_EQ(s.scale(), 262144.0);
}

TEST(GradScaler, AnOverflowInTheWindowRestartsTheCount) {
  GradScaler s;
  for (int i = 0; i < 1500; ++i) step(s, false);
  step(s, true);
  EXPECT_EQ(s.scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  for (int i = 0; i < 1999; ++i) step(s, false);
  EXPECT_EQ(s.scale(), 32768.0) << "the 1500 clean steps before the overflow must not count";
  step(s, false);
  EXPECT_EQ(s.scale(), 65536.0);
}

TEST(GradScaler, AScaleThatWouldGrowPastFloatsRangeStays) {
  GradScalerOptions o;
  o.init_scale = 0x1p127;
  o.growth_interval = 1;
  GradScaler s(o);
  step(s, false);
  EXPECT_EQ(s.scale(), 0x1p127) << "2^128 is inf in fp32: PyTorch keeps the old scale";
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScaler, MatchesTheRuleOnRandomFlagSequences) {
  std::mt19937_64 rng(0x0303);
  for (const int64_t interval : {1, 2, 3, 7, 50}) {
    for (const double p : {0.01, 0.2, 0.7}) {
      GradScalerOptions o;
      o.growth_interval = interval;
      GradScaler s(o);
      Model m{65536.0f};
      std::bernoulli_distribution overflow(p);
      for (int i = 0; i < 3000; ++i) {
        const bool flag = overflow(rng);
        ASSERT_EQ(step(s, flag), !flag);
        m.update(flag, 2.0f, 0.5f, interval);
        ASSERT_EQ(s.scale(), static_cast<double>(m.scale))
            << "step " << i << " interval " << interval << " p " << p;
        ASSERT_EQ(s.growth_tracker(), m.tracker) << "step " << i;
      }
    }
  }
}

TEST(GradScaler, RefusesASecondUnscaleAndAnUpdateWithoutOne) {
  GradScaler s;
  s.unscale(false);
  try {
    s.unscale(false);
    FAIL() << "a second unscale before update() must throw";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(),
                 "unscale_() has already been called on this optimizer since the last update().");
  }
  s.update();
  EXPECT_THROW(s.update(), std::logic_error);
  EXPECT_THROW((void)s.should_step(), std::logic_error);
}

TEST(GradScaler, StaticKeepsItsScaleButStillSkipsOverflows) {
  GradScaler s(parse_loss_scale("static:1024"));
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_FALSE(step(s, true));
  EXPECT_EQ(s.scale(), 1024.0);
  for (int i = 0; i < 2000; ++i) step(s, false);
  EXPECT_EQ(s.scale(), 1024.0);
}

TEST(GradScaler, NoneScalesByOneAndNeverSkips) {
  GradScaler s(parse_loss_scale("none"));
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_TRUE(step(s, true)) << "without a scaler nothing checks the gradients";
  EXPECT_NO_THROW(s.update());
}

TEST(GradScaler, RefusesBadOptionsByName) {
  GradScalerOptions o;
  o.init_scale = 0;
  EXPECT_THROW(GradScaler{o}, UsageError);
  o = {};
  o.growth_factor = 1.0;
  EXPECT_THROW(GradScaler{o}, UsageError);
  o = {};
  o.backoff_factor = 1.0;
  EXPECT_THROW(GradScaler{o}, UsageError);
  o = {};
  o.growth_interval = 0;
  EXPECT_THROW(GradScaler{o}, UsageError);
}

}  // namespace
}  // namespace vramlab::amp
