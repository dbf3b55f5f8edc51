// Tests of train::find_max_batch (common/train/max_batch.h): the largest micro-batch that fits,
// found by running whole steps, on a meta device (bytes without data: each trial takes
// milliseconds), and the estimator's prediction beside it.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"
#include "common/train/max_batch.h"

namespace vramlab::train {
namespace {

TrainOptions gpt2_124m_at(int64_t seq) {
  TrainOptions o;
  o.model = model_config_by_name("gpt2-124m");
  o.seq = seq;
  return o;
}

// Whether micro-batch `batch` runs `steps` whole steps on `device`: one trial, on its own.
bool fits(const memory::Device& device, const TrainOptions& options, int64_t batch) {
  MaxBatchOptions one;
  one.first_batch = batch;
  one.max_trials = 1;
  return find_max_batch(device, options, one).trials.at(0).fits;
}

// The search ends where a batch fits and the next one does not, whatever the first batch and the
// sequence, each judged by a trial of its own.
TEST(MaxBatch, BinsearchEndsAtABatchThatFitsWhoseNextDoesNot) {
  const memory::Device device = memory::parse_device("meta:t4-16g");
  for (const int64_t seq : {256, 1024}) {
    for (const int64_t first : {1, 3, 64}) {
      SCOPED_TRACE("T=" + std::to_string(seq) + ", first B=" + std::to_string(first));
      const TrainOptions o = gpt2_124m_at(seq);
      MaxBatchOptions search;
      search.first_batch = first;
      const MaxBatchResult r = find_max_batch(device, o, search);
      ASSERT_GT(r.largest, 0);
      EXPECT_FALSE(r.hit_max_trials);
      EXPECT_TRUE(fits(device, o, r.largest));
      EXPECT_FALSE(fits(device, o, r.largest + 1));
      for (const BatchTrial& t : r.trials) {
        EXPECT_EQ(t.fits, t.batch <= r.largest) << "B=" << t.batch;
        if (t.fits) {
          EXPECT_LE(t.peak_bytes, static_cast<int64_t>(device.spec.capacity_bytes));
        } else {
          EXPECT_NE(t.out_of_memory.find("out of memory"), std::string::npos);
        }
      }
    }
  }
}

// `power` keeps the last doubling that fitted: first·2^k, with first·2^(k+1) failing.
TEST(MaxBatch, PowerKeepsTheLastDoublingThatFitted) {
  const memory::Device device = memory::parse_device("meta:t4-16g");
  const TrainOptions o = gpt2_124m_at(1024);
  MaxBatchOptions search;
  search.search = BatchSearch::power;
  search.first_batch = 3;
  const MaxBatchResult r = find_max_batch(device, o, search);
  ASSERT_GE(r.trials.size(), 2u);
  EXPECT_EQ(r.largest, r.trials.at(r.trials.size() - 2).batch);
  EXPECT_EQ(r.trials.back().batch, 2 * r.largest);
  EXPECT_FALSE(r.trials.back().fits);
  int64_t power = r.largest / 3;
  while (power % 2 == 0) power /= 2;
  EXPECT_EQ(power, 1) << r.largest;
  MaxBatchOptions bisect = search;
  bisect.search = BatchSearch::binsearch;
  EXPECT_GE(find_max_batch(device, o, bisect).largest, r.largest);
}

// A first batch too large is halved until one fits; when even B=1 does not, the answer is 0.
TEST(MaxBatch, AFirstBatchThatFailsIsHalvedAndNoFitIsZero) {
  const TrainOptions o = gpt2_124m_at(1024);
  MaxBatchOptions search;
  search.first_batch = 512;
  const MaxBatchResult r = find_max_batch(memory::parse_device("meta:t4-16g"), o, search);
  EXPECT_FALSE(r.trials.at(0).fits);
  EXPECT_EQ(r.trials.at(1).batch, 256);
  EXPECT_GT(r.largest, 0);
  const MaxBatchResult none = find_max_batch(memory::parse_device("meta:1GiB"), o, search);
  EXPECT_EQ(none.largest, 0);
  EXPECT_EQ(none.trials.back().batch, 1);
  EXPECT_EQ(none.predicted, 0);
}

// --max-trials stops the search where it is, and says so.
TEST(MaxBatch, MaxTrialsStopsTheSearch) {
  MaxBatchOptions search;
  search.first_batch = 1;
  search.max_trials = 2;
  const MaxBatchResult r =
      find_max_batch(memory::parse_device("meta:t4-16g"), gpt2_124m_at(1024), search);
  EXPECT_EQ(r.trials.size(), 2u);
  EXPECT_TRUE(r.hit_max_trials);
  EXPECT_EQ(r.largest, 2);
}

// The estimator's largest batch is the last whose predicted peak fits the capacity; the step's
// temporaries, which it leaves out, make the runs' answer no larger.
TEST(MaxBatch, ThePredictionIsTheEstimatorsLastBatchUnderTheCapacity) {
  const memory::Device device = memory::parse_device("meta:t4-16g");
  const TrainOptions o = gpt2_124m_at(1024);
  const MaxBatchResult r = find_max_batch(device, o, MaxBatchOptions{});
  ASSERT_GT(r.predicted, 0);
  TrainOptions at = o;
  at.batch = r.predicted;
  EXPECT_LE(predicted_peak_bytes(at), static_cast<int64_t>(device.spec.capacity_bytes));
  at.batch = r.predicted + 1;
  EXPECT_GT(predicted_peak_bytes(at), static_cast<int64_t>(device.spec.capacity_bytes));
  EXPECT_LE(r.largest, r.predicted);
}

TEST(MaxBatch, RefusesSearchSettingsThatCannotWork) {
  const memory::Device device = memory::parse_device("meta:t4-16g");
  const TrainOptions o = gpt2_124m_at(128);
  MaxBatchOptions one_step;
  one_step.steps_per_trial = 1;
  EXPECT_THROW(find_max_batch(device, o, one_step), UsageError);
  MaxBatchOptions zero;
  zero.first_batch = 0;
  EXPECT_THROW(find_max_batch(device, o, zero), UsageError);
  EXPECT_THROW(parse_batch_search("halve"), UsageError);
  EXPECT_THROW(find_max_batch(device, gpt2_124m_at(4096), MaxBatchOptions{}), UsageError);
}

}  // namespace
}  // namespace vramlab::train
