// The kernel observer: a training step's kernel calls are heard, balanced, named after the
// KernelBackend methods, counted as the model makes them; argument checks that fail are not
// kernels; removing the observer silences it.
//   build/tests/bin/test_nn --gtest_filter='KernelObserver.*'
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/train/trainer.h"

namespace vramlab::nn {
namespace {

// Every public kernel method of KernelBackend (kernel_backend.h).
const std::set<std::string> kPublicKernels = {"fill_zero",
                                              "copy_to_device",
                                              "copy_to_host",
                                              "fill_from_host",
                                              "linear_forward",
                                              "linear_backward",
                                              "layernorm_forward",
                                              "layernorm_backward",
                                              "rmsnorm_forward",
                                              "rmsnorm_backward",
                                              "residual_forward",
                                              "gelu_forward",
                                              "gelu_backward",
                                              "swiglu_forward",
                                              "swiglu_backward",
                                              "dropout_forward",
                                              "dropout_backward",
                                              "quantize_int8",
                                              "dequantize_int8",
                                              "rope_forward",
                                              "rope_backward",
                                              "attention_forward",
                                              "attention_backward",
                                              "flash_attention_forward",
                                              "flash_attention_backward",
                                              "embedding_forward",
                                              "embedding_backward",
                                              "cross_entropy_forward",
                                              "cross_entropy_dlogits",
                                              "sum",
                                              "cast",
                                              "check_gradients",
                                              "adamw_update",
                                              "sgd_update",
                                              "lion_update",
                                              "adam_mini_update",
                                              "adafactor_update",
                                              "adamw_8bit_update"};

struct Call {
  bool started;
  std::string op;
  bool operator==(const Call&) const = default;
};

struct LoggingObserver : KernelObserver {
  std::vector<Call> calls;
  void kernel_started(std::string_view op) noexcept override {
    calls.push_back({true, std::string(op)});
  }
  void kernel_finished(std::string_view op, const KernelWork&) noexcept override {
    calls.push_back({false, std::string(op)});
  }
  // op -> completed calls; fails the test on an unbalanced or nested sequence.
  std::map<std::string, int64_t> counts() const {
    std::map<std::string, int64_t> counted;
    for (size_t i = 0; i < calls.size(); i += 2) {
      EXPECT_TRUE(calls[i].started) << "call " << i << " " << calls[i].op;
      if (i + 1 >= calls.size()) {
        ADD_FAILURE() << calls[i].op << " started and never finished";
        break;
      }
      EXPECT_FALSE(calls[i + 1].started) << calls[i + 1].op << " started inside " << calls[i].op;
      EXPECT_EQ(calls[i + 1].op, calls[i].op) << "call " << i;
      ++counted[calls[i].op];
    }
    return counted;
  }
};

train::TrainOptions options_for(const ModelConfig& model) {
  train::TrainOptions options;
  options.model = model;
  options.batch = 2;
  options.seq = 9;
  options.seed = 3;
  return options;
}

void expect_observed_step(const std::string& device, int64_t layers) {
  SCOPED_TRACE(device + " L=" + std::to_string(layers));
  Runtime runtime(memory::parse_device(device));
  train::Trainer trainer(runtime, options_for(gpt2_config("obs", layers, 32, 4, 40, 16)));
  LoggingObserver observer;
  runtime.kernels().set_observer(&observer);
  EXPECT_EQ(runtime.kernels().observer(), &observer);
  trainer.step();
  runtime.kernels().set_observer(nullptr);
  const std::map<std::string, int64_t> counts = observer.counts();
  for (const auto& [op, count] : counts) {
    EXPECT_TRUE(kPublicKernels.count(op) == 1) << op << " is not a KernelBackend method";
  }
  // GPT-2: q, k and v (three row ranges of the fused qkv weight, attention.cpp), proj, fc and
  // proj per layer, then the LM head.
  const auto at = [&](const char* op) { return counts.count(op) != 0 ? counts.at(op) : 0; };
  EXPECT_EQ(at("linear_forward"), 6 * layers + 1);
  EXPECT_EQ(at("linear_backward"), 6 * layers + 1);
  EXPECT_EQ(at("layernorm_forward"), 2 * layers + 1);
  EXPECT_EQ(at("layernorm_backward"), 2 * layers + 1);
  EXPECT_EQ(at("attention_forward"), layers);
  EXPECT_EQ(at("attention_backward"), layers);
  EXPECT_EQ(at("gelu_forward"), layers);
  EXPECT_EQ(at("gelu_backward"), layers);
  EXPECT_EQ(at("embedding_forward"), 1);
  EXPECT_EQ(at("embedding_backward"), 1);
  EXPECT_EQ(at("cross_entropy_forward"), 1);
  EXPECT_EQ(at("cross_entropy_dlogits"), 1);
  EXPECT_GE(at("adamw_update"), 1);
  EXPECT_EQ(at("copy_to_device"), 2);  // the step's tokens and targets

  // Removed: the next step is not heard.
  const size_t heard = observer.calls.size();
  trainer.step();
  EXPECT_EQ(observer.calls.size(), heard);
}

TEST(KernelObserver, HearsEveryKernelOfAStepBalancedAndNamedOnSim) {
  for (int64_t layers : {1, 3}) expect_observed_step("sim:t4-16g", layers);
}

TEST(KernelObserver, HearsTheMetaBackendsKernelsToo) {
  expect_observed_step("meta", 2);
}

TEST(KernelObserver, ArgumentChecksThatFailAreNotKernels) {
  Runtime runtime(memory::parse_device("cpu"));
  LoggingObserver observer;
  runtime.kernels().set_observer(&observer);
  const Tensor out = runtime.temporary({3, 5}, "out");   // (N, OC)
  const Tensor inp = runtime.temporary({3, 7}, "inp");   // (N, C)
  const Tensor weight = runtime.temporary({5, 6}, "w");  // (OC, C - 1): wrong
  EXPECT_THROW(runtime.kernels().linear_forward(out.view(), inp.view(), weight.view(), {}, 3, 7, 5),
               InternalError);
  EXPECT_TRUE(observer.calls.empty());
  runtime.kernels().fill_zero(out.view());
  EXPECT_EQ(observer.calls, (std::vector<Call>{{true, "fill_zero"}, {false, "fill_zero"}}));
  runtime.kernels().set_observer(nullptr);
}

}  // namespace
}  // namespace vramlab::nn
