// Trainer::evaluate: an evaluation loop under no_grad, with grad, and with every batch's graph
// kept (`total_loss += loss`). The three give the same loss to the bit; what the stores hold is
// the estimator's: the per-token losses alone under no_grad, one forward's saved activations with
// grad, M of them with the graphs kept; and the training run around it is unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"

namespace vramlab::train {
namespace {

std::vector<TrainOptions> evaluation_cases() {
  std::vector<TrainOptions> cases;
  TrainOptions gpt2;
  gpt2.model = gpt2_config("test-gpt2", 3, 32, 4, 48, 16);
  gpt2.batch = 3;
  gpt2.seq = 13;
  gpt2.seed = 51;
  cases.push_back(gpt2);
  TrainOptions llama;
  llama.model = llama_config("test-llama", 2, 32, 4, 2, 48, 40, 16);
  llama.batch = 2;
  llama.seq = 11;
  llama.seed = 52;
  llama.plan.amp.precision = plan::Precision::mixed_bf16;
  llama.plan.attention = plan::AttentionKind::flash;
  llama.plan.recompute = recompute::parse_recompute_spec("full");  // not used by an evaluation
  cases.push_back(llama);
  TrainOptions chunked = gpt2;
  chunked.plan.activations.loss_chunks = 4;
  cases.push_back(chunked);
  return cases;
}

TEST(Evaluation, NoGradGradAndKeptGraphsGiveOneLossAndTheEstimatorsBytes) {
  for (const TrainOptions& o : evaluation_cases()) {
    const std::string name = o.model.name + (o.plan.activations.loss_chunks > 1 ? " chunked" : "");
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer trainer(runtime, o);
    (void)trainer.step();
    const int64_t M = 3;
    const EvalResult no_grad = trainer.evaluate({M, true, false});
    const EvalResult grad = trainer.evaluate({M, false, false});
    const EvalResult kept = trainer.evaluate({M, false, true});
    EXPECT_EQ(grad.loss, no_grad.loss) << name;
    EXPECT_EQ(kept.loss, no_grad.loss) << name;
    EXPECT_GT(no_grad.loss, 0.0) << name;
    // The store after a forward with grad and no recompute: the estimator's for that plan.
    TrainOptions eval_plan = o;
    eval_plan.plan.recompute = {};
    const int64_t forward = estimate_step(eval_plan).runtime_bytes_after_forward;
    EXPECT_EQ(grad.saved_bytes, forward) << name;
    EXPECT_EQ(kept.saved_bytes, M * forward) << name;
    EXPECT_EQ(no_grad.saved_bytes, o.batch * o.seq * 4) << name;  // the f32 per-token losses
    EXPECT_LT(no_grad.saved_peak_bytes, grad.saved_peak_bytes) << name;
    EXPECT_EQ(kept.saved_peak_bytes, grad.saved_peak_bytes) << name;
  }
}

// An evaluation between steps changes nothing of the training: the same losses and parameters
// as a run without it, and the model's grad mode is back on.
TEST(Evaluation, LeavesTheTrainingAsItWas) {
  const TrainOptions o = evaluation_cases().front();
  nn::Runtime plain_runtime(memory::parse_device("sim:1GiB"));
  nn::Runtime evaluated_runtime(memory::parse_device("sim:1GiB"));
  Trainer plain(plain_runtime, o), evaluated(evaluated_runtime, o);
  for (int step = 1; step <= 3; ++step) {
    if (step == 2) {
      (void)evaluated.evaluate({2, true, false});
      (void)evaluated.evaluate({2, false, true});
    }
    EXPECT_EQ(evaluated.step().loss, plain.step().loss) << step;
  }
  EXPECT_TRUE(evaluated.model().grad_enabled());
}

TEST(Evaluation, RefusesWhatItCannotRun) {
  const TrainOptions o = evaluation_cases().front();
  nn::Runtime runtime(memory::parse_device("sim:1GiB"));
  Trainer trainer(runtime, o);
  EXPECT_THROW((void)trainer.evaluate({0, true, false}), UsageError);
  EXPECT_THROW((void)trainer.evaluate({2, true, true}), UsageError);  // no graph to keep
}

}  // namespace
}  // namespace vramlab::train
