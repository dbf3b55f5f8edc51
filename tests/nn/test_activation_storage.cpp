// The activation-storage seam: a strategy sees every packable tensor packed once after its
// layer's forward, prefetched before the backward of the layer after it, and unpacked once before
// its own backward (or before the re-run forward of the span it feeds); a strategy that packs into
// a copy leaves the step bitwise unchanged, and the store counts what the packed form holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/activation_storage.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"

namespace vramlab::nn {
namespace {

// A packed copy that remembers whose it is.
class CopyPacked final : public PackedActivation {
 public:
  CopyPacked(Tensor copy, std::string name) : copy_(std::move(copy)), name_(std::move(name)) {}
  [[nodiscard]] int64_t bytes() const override { return copy_.bytes(); }
  [[nodiscard]] const Tensor& copy() const { return copy_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  Tensor copy_;  // the tensor's shape and dtype
  std::string name_;
};

// Packs every tensor into a copy of itself with a recognisable byte count (the copy is made
// `extra` bytes larger, so the store's accounting shows whose bytes it counts), and records the
// order of the calls.
class RecordingStorage final : public ActivationStorage {
 public:
  struct Call {
    char kind;  // 'p' pack, 'f' prefetch, 'u' unpack
    std::string tensor;
  };
  [[nodiscard]] std::string_view name() const override { return "recording"; }
  [[nodiscard]] std::unique_ptr<PackedActivation> pack(Runtime& runtime,
                                                       const Tensor& tensor) override {
    calls.push_back({'p', tensor.name()});
    Tensor copy = runtime.allocate(tensor.shape(), tensor.dtype(),
                                   memory::MemoryCategory::activation, tensor.name() + ".packed");
    std::memcpy(copy.data(), tensor.data(), static_cast<size_t>(tensor.bytes()));
    return std::make_unique<CopyPacked>(std::move(copy), tensor.name());
  }
  void prefetch(Runtime& runtime, PackedActivation& packed) override {
    (void)runtime;
    calls.push_back({'f', dynamic_cast<CopyPacked&>(packed).name()});
  }
  [[nodiscard]] Tensor unpack(Runtime& runtime, PackedActivation& packed,
                              const std::vector<int64_t>& shape, DType dtype,
                              const std::string& name) override {
    const auto& copy = dynamic_cast<const CopyPacked&>(packed);
    calls.push_back({'u', name});
    EXPECT_EQ(copy.name(), name) << "unpacked under the name it was packed with";
    Tensor tensor = runtime.allocate(shape, dtype, memory::MemoryCategory::activation, name);
    std::memcpy(tensor.data(), copy.copy().data(), static_cast<size_t>(tensor.bytes()));
    return tensor;
  }
  std::vector<Call> calls;
};

struct Step {
  double loss = 0.0;
  std::vector<float> grads;  // (numel of the parameters)
  std::vector<RecordingStorage::Call> calls;
};

Step run(const ModelConfig& config, int64_t B, int64_t T, std::vector<LayerPolicy> plan,
         bool recording) {
  Runtime runtime(memory::parse_device("cpu"));
  DecoderModel model(runtime, config, 11);
  std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(tokens.size());  // (B, T)
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>(stochastic_bits(3, i) % static_cast<uint32_t>(config.vocab));
    targets[i] = static_cast<int32_t>(stochastic_bits(4, i) % static_cast<uint32_t>(config.vocab));
  }
  const memory::TensorView token_view(tokens.data(), DType::i32, {B, T});
  const memory::TensorView target_view(targets.data(), DType::i32, {B, T});
  SavedActivations saved(runtime, config.layers);
  saved.set_plan(std::move(plan));
  auto storage = std::make_unique<RecordingStorage>();
  RecordingStorage* record = storage.get();
  if (recording) saved.set_storage(std::move(storage));
  Step out;
  out.loss = model.forward(saved, token_view, target_view, B, T);
  model.backward(saved, token_view, target_view, B, T);
  EXPECT_EQ(saved.bytes(), 0);
  const memory::TensorView g = model.parameters().grads().view();
  out.grads.assign(g.f32(), g.f32() + g.numel());
  if (recording) out.calls = record->calls;
  return out;
}

// Checks the order of one step's calls: a tensor is prefetched or unpacked only while packed, and
// packed only when it is not. (A span's kept output may be released while packed: its re-run
// forward makes it again.)
void expect_ordered(const std::vector<RecordingStorage::Call>& calls, const std::string& what) {
  std::map<std::string, std::string> seen;  // tensor -> its calls' kinds so far
  for (const auto& call : calls) seen[call.tensor] += call.kind;
  ASSERT_FALSE(seen.empty()) << what;
  for (const auto& [tensor, kinds] : seen) {
    for (size_t i = 0; i < kinds.size(); ++i) {
      const char k = kinds[i];
      const char before = i > 0 ? kinds[i - 1] : '\0';
      if (k == 'p') {
        EXPECT_TRUE(before == '\0' || before == 'u') << what << ": " << tensor << " " << kinds;
      } else if (k == 'f') {
        EXPECT_TRUE(before == 'p') << what << ": " << tensor << " " << kinds;
      } else if (k == 'u') {
        EXPECT_TRUE(before == 'p' || before == 'f') << what << ": " << tensor << " " << kinds;
      }
    }
  }
}

TEST(ActivationStorage, ACopyingStrategyLeavesTheStepBitwiseUnchangedUnderEveryPlan) {
  // Odd sizes, and four layers so that a span has an inside.
  for (const ModelConfig& config : {gpt2_config("storage-gpt2", 4, 24, 3, 37, 16),
                                    llama_config("storage-llama", 4, 32, 4, 2, 64, 41, 16)}) {
    const int64_t L = config.layers;
    const std::vector<std::pair<std::string, std::vector<LayerPolicy>>> plans = {
        {"none", std::vector<LayerPolicy>(static_cast<size_t>(L))},
        {"full", std::vector<LayerPolicy>(static_cast<size_t>(L), {Recompute::full, true})},
        {"one span",
         [&] {
           std::vector<LayerPolicy> p(static_cast<size_t>(L), {Recompute::full, false});
           p[0].span_start = true;
           return p;
         }()},
        {"selective", std::vector<LayerPolicy>(static_cast<size_t>(L), {Recompute::selective})},
    };
    for (const auto& [name, plan] : plans) {
      const Step kept = run(config, 2, 7, plan, false);
      const Step packed = run(config, 2, 7, plan, true);
      EXPECT_EQ(packed.loss, kept.loss) << config.name << " " << name;
      ASSERT_EQ(packed.grads.size(), kept.grads.size());
      EXPECT_EQ(0, std::memcmp(packed.grads.data(), kept.grads.data(),
                               packed.grads.size() * sizeof(float)))
          << config.name << " " << name << ": gradients differ";
      expect_ordered(packed.calls, config.name + " " + name);
    }
  }
}

TEST(ActivationStorage, EveryPackableTensorIsPackedAfterItsForwardAndItsStatisticsStayInPlace) {
  const ModelConfig config = model_config_by_name("gpt2-mini");
  const Step step =
      run(config, 1, 5, std::vector<LayerPolicy>(static_cast<size_t>(config.layers)), true);
  std::map<std::string, std::string> kinds;  // tensor -> its calls' kinds
  for (const auto& call : step.calls) kinds[call.tensor] += call.kind;
  for (const auto& [tensor, k] : kinds)
    EXPECT_TRUE(k == "pu" || k == "pfu") << tensor << ": " << k << ", without recompute each "
                                         << "packed tensor is unpacked once, maybe prefetched";
  int64_t packs = 0;
  for (const auto& call : step.calls) {
    if (call.kind != 'p') continue;
    ++packs;
    EXPECT_EQ(call.tensor.rfind("blocks.", 0), 0u) << call.tensor << ": only the layers' tensors";
    EXPECT_FALSE(call.tensor.ends_with("_mean") || call.tensor.ends_with("_rstd"))
        << call.tensor << " is not packable";
  }
  // Every layer's output is packed once its reader (the next layer, or the head) is done.
  for (int64_t l = 0; l < config.layers; ++l) {
    const std::string output = layer_module_name(l) + "." + saved::residual3;
    int64_t n = 0;
    for (const auto& call : step.calls) n += call.kind == 'p' && call.tensor == output;
    EXPECT_EQ(n, 1) << output;
  }
  EXPECT_GT(packs, 3 * config.layers);
}

TEST(ActivationStorage, TheStoreCountsThePackedFormAndRefusesAChangeWhilePacked) {
  Runtime runtime(memory::parse_device("cpu"));
  SavedActivations saved(runtime, 1);
  saved.set_storage(std::make_unique<RecordingStorage>());
  Tensor& a = saved.save(0, "a", {3, 5});  // 60 bytes in f32
  for (int64_t i = 0; i < 15; ++i) a.f32()[i] = static_cast<float>(i) - 7.5f;
  saved.pack(0, "a");
  EXPECT_EQ(saved.bytes(), 60);
  EXPECT_EQ(saved.peak_bytes(), 120) << "the copy and the tensor exist together for a moment";
  EXPECT_THROW((void)saved.get(0, "a"), std::logic_error);
  EXPECT_THROW(saved.set_storage(make_activation_storage(ActivationCompression::none)),
               std::logic_error);
  const std::vector<SavedActivationInfo> listed = saved.list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].packed);
  EXPECT_EQ(listed[0].shape, (std::vector<int64_t>{3, 5}));
  saved.unpack(0, "a");
  const float* back = saved.get(0, "a").f32();
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(back[i], static_cast<float>(i) - 7.5f) << i;
  EXPECT_FALSE(saved.list()[0].packed);
  saved.unpack(0, "a");  // not packed: nothing happens
  EXPECT_EQ(saved.bytes(), 60);
}

TEST(ActivationStorage, TheStrategiesOfThePlanSpellTheirNames) {
  for (const ActivationCompression c : {ActivationCompression::none, ActivationCompression::int8,
                                        ActivationCompression::int8_block})
    EXPECT_EQ(make_activation_storage(c)->name(), compression_name(c));
}

}  // namespace
}  // namespace vramlab::nn
