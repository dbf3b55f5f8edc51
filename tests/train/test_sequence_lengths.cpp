// Lengths that vary from step to step (train::SequenceLengths, Trainer::set_seq): the draws lie in
// [min, max], repeat for a seed and differ across seeds, cover the range, and bucketing pads them
// to multiples; each step's saved activations are the estimator's at that step's T; and on the
// caching allocator varying lengths reserve more than the longest fixed length does, bucketing
// less than no bucketing, expandable segments about what they allocate.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "common/memory/device.h"
#include "common/memory/expandable_segments_scope.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/sequence_lengths.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

TEST(SequenceLengths, DrawsEveryLengthInRangeAndRepeatsForASeed) {
  const SequenceLengths lengths{5, 17, 1, 9};
  std::set<int64_t> seen;
  for (int64_t step = 1; step <= 2000; ++step) {
    const int64_t t = lengths.length(step);
    ASSERT_GE(t, 5);
    ASSERT_LE(t, 17);
    EXPECT_EQ(t, lengths.length(step));
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 13u);  // every length of [5, 17]
  const SequenceLengths other{5, 17, 1, 10};
  int same = 0;
  for (int64_t step = 1; step <= 200; ++step) same += lengths.length(step) == other.length(step);
  EXPECT_LT(same, 60);                                      // about 1 in 13 by chance
  EXPECT_EQ((SequenceLengths{0, 17, 1, 9}.length(3)), 17);  // not varying: the run's T
}

TEST(SequenceLengths, BucketsPadUpToAMultipleAndStopAtTheLongest) {
  const SequenceLengths lengths{1, 100, 32, 3};
  std::set<int64_t> seen;
  for (int64_t step = 1; step <= 1000; ++step) seen.insert(lengths.length(step));
  EXPECT_EQ(seen, (std::set<int64_t>{32, 64, 96, 100}));
  EXPECT_THROW((SequenceLengths{0, 100, 0, 1}.validate()), UsageError);
  EXPECT_THROW((SequenceLengths{101, 100, 1, 1}.validate()), UsageError);
}

TEST(SequenceLengths, EachStepSavesTheEstimatorsActivationsForItsLength) {
  TrainOptions o;
  o.model = gpt2_config("test-gpt2", 2, 32, 4, 64, 40);
  o.batch = 3;
  o.seq = 40;
  o.seed = 7;
  nn::Runtime runtime(memory::parse_device("sim:1GiB"));
  Trainer trainer(runtime, o);
  const SequenceLengths lengths{3, 40, 1, o.seed};
  for (int64_t step = 1; step <= 6; ++step) {
    const int64_t t = lengths.length(step);
    trainer.set_seq(t);
    const StepResult r = trainer.step();
    TrainOptions at = o;
    at.seq = t;
    EXPECT_EQ(r.activation_peak_bytes, estimate_step(at).runtime_schedule_peak_bytes) << t;
    EXPECT_TRUE(std::isfinite(r.loss)) << t;
  }
  EXPECT_THROW(trainer.set_seq(41), UsageError);  // beyond the model's context
}

int64_t reserved_after(const TrainOptions& o, const SequenceLengths& lengths, int64_t steps) {
  nn::Runtime runtime(memory::parse_device("meta"));
  Trainer trainer(runtime, o);
  for (int64_t step = 1; step <= steps; ++step) {
    if (lengths.varies()) trainer.set_seq(lengths.length(step));
    (void)trainer.step();
  }
  return trainer.memory_report().reserved_peak_bytes;
}

TEST(SequenceLengths, VaryingLengthsReserveMoreBucketsLessExpandableSegmentsLeast) {
  TrainOptions o;
  o.model = gpt2_config("test-gpt2", 4, 256, 4, 2048, 512);
  o.batch = 8;
  o.seq = 512;
  const int64_t fixed = reserved_after(o, {}, 40);
  const int64_t varying = reserved_after(o, {32, 512, 1, 1}, 40);
  const int64_t bucketed = reserved_after(o, {32, 512, 128, 1}, 40);
  EXPECT_GT(varying, fixed + fixed / 4);  // measured 840 MiB against 538 MiB
  EXPECT_LT(bucketed, varying);
  const memory::ExpandableSegmentsScope expandable(memory::parse_device("meta"));
  const int64_t expanded = reserved_after(o, {32, 512, 1, 1}, 40);
  EXPECT_LT(expanded, fixed);
}

}  // namespace
}  // namespace vramlab::train
