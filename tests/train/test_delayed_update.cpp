// `--offload-dpu N`, ZeRO-Offload's one-step delayed parameter update (Note [Delayed parameter
// update]): from step N on, each forward uses the parameters one update behind, the numbers of
// an AdamW replayed here from the recorded gradients; on the stream clock the host's update runs
// beside the next step, which saves its time, and the parameters' copy back, at step N.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/plan/plan.h"
#include "common/train/trainer.h"
#include "kernels/cpu/optimizer.h"

namespace vramlab::train {
namespace {

std::vector<float> dpu_floats(nn::Runtime& runtime, const memory::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));  // (numel) fp32
  runtime.copy_to_host(out.data(), t);
  return out;
}

// The parameters each forward starts from, and the gradients each optimizer step gets.
class DpuRecorder final : public nn::StepObserver {
 public:
  explicit DpuRecorder(nn::Runtime& runtime) : runtime_(runtime) {}
  void before(const nn::PhaseEvent& e) override {
    const nn::ParameterStore& store = e.model->parameters();
    if (e.phase == nn::StepPhase::zero_grad)
      forwards.push_back(dpu_floats(runtime_, store.values()));
    if (e.phase == nn::StepPhase::optimizer_step)
      gradients.push_back(dpu_floats(runtime_, store.grads()));
  }
  std::vector<std::vector<float>> forwards, gradients;

 private:
  nn::Runtime& runtime_;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DelayedParameterUpdate, EachForwardFromTheFirstDelayedStepOnUsesTheParametersOneUpdateBehind) {
  for (const int64_t first : {1, 2, 4}) {
    TrainOptions o;
    o.model = gpt2_config("test-gpt2", 2, 32, 4, 48, 16);
    o.batch = 3;
    o.seq = 11;
    o.seed = 31;
    o.plan.optimizer.weight_decay = 0.1f;
    o.plan.offload.optimizer = true;
    o.plan.offload.delay_update_from = first;
    const std::string name = "--offload-dpu " + std::to_string(first);
    nn::Runtime runtime(memory::parse_device("sim:1GiB"));
    Trainer trainer(runtime, o);
    DpuRecorder recorder(runtime);
    trainer.add_observer(recorder);
    constexpr int kSteps = 6;
    for (int step = 1; step <= kSteps; ++step) {
      (void)trainer.step();
      EXPECT_EQ(trainer.optimizer().update_pending(), step >= first) << name << ", step " << step;
    }
    trainer.remove_observer(recorder);
    trainer.optimizer().finish_delayed_update(trainer.model().parameters());
    EXPECT_FALSE(trainer.optimizer().update_pending());
    const std::vector<float> last = dpu_floats(runtime, trainer.model().parameters().values());

    // AdamW over the recorded gradients, from the first forward's parameters: updated[j] after
    // step j's gradients.
    const kernels::cpu::AdamWHyperparameters hp{.learning_rate = o.plan.optimizer.learning_rate,
                                                .weight_decay = o.plan.optimizer.weight_decay};
    std::vector<std::vector<float>> updated{recorder.forwards.at(0)};
    const size_t n = updated[0].size();
    std::vector<float> m(n, 0.0f), v(n, 0.0f);  // (n) the moments
    for (int j = 1; j <= kSteps; ++j) {
      std::vector<float> p = updated.back();
      kernels::cpu::adamw_update(p.data(), recorder.gradients.at(j - 1).data(), m.data(), v.data(),
                                 static_cast<int64_t>(n), hp, j);
      updated.push_back(std::move(p));
    }
    for (int step = 1; step <= kSteps; ++step) {
      // Before the first delayed step a forward uses the last update; from the one after it on,
      // the update before the last; the first delayed step's forward is the last undelayed one.
      const int behind = step > first ? 2 : 1;
      EXPECT_TRUE(same_bits(recorder.forwards.at(step - 1), updated.at(step - behind)))
          << name << ": step " << step << "'s forward is not on the parameters of update "
          << step - behind;
    }
    if (first < kSteps) {
      EXPECT_TRUE(same_bits(recorder.forwards.at(first), recorder.forwards.at(first - 1)))
          << name << ": steps " << first << " and " << first + 1 << " use the same parameters";
    }
    EXPECT_TRUE(same_bits(last, updated.back())) << name << ": the parameters after finishing";
  }
}

TEST(DelayedParameterUpdate, StepsBeforeItAreTheUndelayedRunsBitwiseAndTheLinkCarriesAsManyBytes) {
  TrainOptions o;
  o.model = llama_config("test-llama", 2, 32, 4, 2, 48, 40, 16);
  o.batch = 2;
  o.seq = 13;
  o.seed = 32;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  TrainOptions delayed = o;
  delayed.plan.offload.delay_update_from = 3;
  nn::Runtime plain_runtime(memory::parse_device("sim:1GiB"));
  nn::Runtime delayed_runtime(memory::parse_device("sim:1GiB"));
  Trainer plain(plain_runtime, o), late(delayed_runtime, delayed);
  std::vector<double> plain_losses, late_losses;
  for (int step = 1; step <= 5; ++step) {
    plain_losses.push_back(plain.step().loss);
    late_losses.push_back(late.step().loss);
  }
  // Steps 1-3 run on the same parameters; step 4 on step 2's update, not step 3's.
  for (int step = 1; step <= 3; ++step)
    EXPECT_EQ(late_losses[step - 1], plain_losses[step - 1]) << "step " << step;
  EXPECT_NE(late_losses[3], plain_losses[3]) << "step 4 ran on the latest parameters";
  late.optimizer().finish_delayed_update(late.model().parameters());
  EXPECT_EQ(delayed_runtime.transfer_stats().host_to_device_bytes,
            plain_runtime.transfer_stats().host_to_device_bytes);
  EXPECT_EQ(delayed_runtime.transfer_stats().device_to_host_bytes,
            plain_runtime.transfer_stats().device_to_host_bytes);
  // And the host holds no more for it.
  EXPECT_EQ(late.host_model_state()->optimizer_states, plain.host_model_state()->optimizer_states);
  EXPECT_EQ(late.host_model_state()->gradients, plain.host_model_state()->gradients);
  EXPECT_EQ(late.host_model_state()->parameters, plain.host_model_state()->parameters);
}

// On a meta device every time is exact. With a fast link and a host update shorter than the
// forward (the next step's first gradient copy waits for it), a delayed step saves exactly the
// update's time; the first delayed step also the parameters' copy back, which it leaves to the
// next. A slow host's update cannot hide: the next step's copies wait for it, and the step takes
// at least the update's time.
TEST(DelayedParameterUpdate, OnTheClockAStepSavesTheUpdateItCanHideAndTheFirstAlsoTheCopyBack) {
  TrainOptions o;
  o.model = llama_config("llama-12l", 12, 1024, 16, 4, 2816, 32000, 1024);
  o.batch = 4;
  o.seq = 1024;
  o.plan.amp.precision = plan::Precision::mixed_bf16;
  o.plan.offload.optimizer = true;
  constexpr int64_t kFirst = 3;
  for (const double host_gbps : {204.8, 1.0}) {
    const auto run = [&](int64_t first) {
      TrainOptions t = o;
      t.plan.offload.delay_update_from = first;
      t.host_memory_bytes_per_s = host_gbps * 1e9;
      memory::Device device = memory::parse_device("meta:a100-40g");
      device.spec.host_to_device_bytes_per_s = device.spec.device_to_host_bytes_per_s = 400e9;
      nn::Runtime runtime(device);
      Trainer trainer(runtime, t);
      std::vector<StepResult> steps;
      for (int step = 1; step <= 6; ++step) steps.push_back(trainer.step());
      const double return_seconds =
          static_cast<double>(trainer.model().parameters().values().bytes()) / 400e9;
      return std::pair{steps, return_seconds};
    };
    const auto [plain, copy_back] = run(0);
    const auto [late, unused] = run(kFirst);
    const std::string name = "host at " + std::to_string(host_gbps) + " GB/s";
    for (size_t i = 0; i < plain.size(); ++i) {
      const StepResult &p = plain[i], &l = late[i];
      const auto step = static_cast<int64_t>(i) + 1;
      const std::string at = name + ", step " + std::to_string(step);
      if (step < kFirst) {
        EXPECT_EQ(l.clock_seconds, p.clock_seconds) << at;
        EXPECT_EQ(l.delayed_update_seconds, 0.0) << at;
        continue;
      }
      // Not on the host's own time: on its thread, the same bytes at the same rate.
      EXPECT_EQ(l.host_update_seconds, 0.0) << at;
      EXPECT_EQ(l.delayed_update_seconds, p.host_update_seconds) << at;
      const double update = p.host_update_seconds;
      const double tolerance = 1e-9 * p.clock_seconds;
      if (step == kFirst) {
        EXPECT_NEAR(l.clock_seconds, p.clock_seconds - update - copy_back, tolerance) << at;
      } else if (host_gbps > 100) {
        EXPECT_NEAR(l.clock_seconds, p.clock_seconds - update, tolerance) << at;
        EXPECT_NEAR(l.exposed_copy_seconds, p.exposed_copy_seconds, tolerance) << at;
      } else {
        // The update (about 3.6 s) is longer than the rest of the step: it sets the pace.
        EXPECT_GT(update, p.clock_seconds - update) << at;
        EXPECT_LT(l.clock_seconds, p.clock_seconds) << at;
        EXPECT_GE(l.clock_seconds, update) << at;
        EXPECT_GT(l.exposed_copy_seconds, p.exposed_copy_seconds) << at;
      }
    }
  }
}

TEST(DelayedParameterUpdate, TheFlagNeedsTheOptimizerOffloadedAndAStepOfOneOrMore) {
  plan::Plan p;
  p.offload.delay_update_from = 2;
  EXPECT_THROW(plan::validate(p), UsageError);
  p.offload.optimizer = true;
  EXPECT_NO_THROW(plan::validate(p));
  p.offload.delay_update_from = -1;
  EXPECT_THROW(plan::validate(p), UsageError);
  EXPECT_EQ(plan::parse_delay_update("off"), 0);
  EXPECT_EQ(plan::parse_delay_update("40"), 40);
  for (const char* bad : {"0", "-3", "on", "", "4x", "99999999999999999999"})
    EXPECT_THROW((void)plan::parse_delay_update(bad), UsageError) << bad;
  EXPECT_EQ(plan::delay_update_name(0), "off");
  EXPECT_EQ(plan::delay_update_name(40), "40");
}

}  // namespace
}  // namespace vramlab::train
