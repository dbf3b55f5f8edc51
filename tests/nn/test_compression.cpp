// INT8 activation compression in the store: what the blocks keep is held as int8 + scales
// between forward and backward (bytes as compressed_bytes() says, for every recompute plan), the
// forward is untouched (the loss is bitwise the same), the gradients move by the quantisation
// error only (per-block scales err less than one scale per tensor), and the store's references
// and accounting survive pack/unpack.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype/counter_rng.h"
#include "common/estimate/runtime_activations.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/nn/step_observer.h"

namespace vramlab::nn {
namespace {

// Records the store's bytes when the forward pass ends.
class ForwardEnd : public StepObserver {
 public:
  void after(const PhaseEvent& e) override {
    if (e.phase == StepPhase::forward) bytes = e.saved->bytes();
  }
  int64_t bytes = -1;
};

struct Outcome {
  double loss = 0.0;
  std::vector<float> grads;
  int64_t bytes_after_forward = 0;
  int64_t peak_bytes = 0;
};

Outcome run(const ModelConfig& config, int64_t B, int64_t T, ActivationCompression compression,
            std::vector<LayerPolicy> plan, const std::string& device = "cpu") {
  Runtime runtime(memory::parse_device(device));
  DecoderModel model(runtime, config, 5);
  ForwardEnd observer;
  model.observers().add(observer);
  std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>(stochastic_bits(1, i) % static_cast<uint32_t>(config.vocab));
    targets[i] = static_cast<int32_t>(stochastic_bits(2, i) % static_cast<uint32_t>(config.vocab));
  }
  const memory::TensorView token_view(tokens.data(), DType::i32, {B, T});
  const memory::TensorView target_view(targets.data(), DType::i32, {B, T});
  SavedActivations saved(runtime, config.layers);
  saved.set_plan(std::move(plan));
  saved.set_storage(make_activation_storage(compression));
  Outcome out;
  out.loss = model.forward(saved, token_view, target_view, B, T);
  model.backward(saved, token_view, target_view, B, T);
  out.bytes_after_forward = observer.bytes;
  out.peak_bytes = saved.peak_bytes();
  EXPECT_EQ(saved.bytes(), 0);
  if (device != "meta") {
    const memory::TensorView g = model.parameters().grads().view();
    out.grads.assign(g.f32(), g.f32() + g.numel());
  }
  return out;
}

// What the store holds after forward under compression, from the layout: each block tensor it
// keeps is int8 + scales, except the norms' (B, T) statistics; outside the blocks nothing is.
int64_t expected_after_forward(const ModelConfig& config, int64_t B, int64_t T,
                               ActivationCompression compression, Recompute recompute) {
  int64_t per_layer = 0;
  for (const auto& spec : estimate::runtime_saved_activations_per_layer(config, B, T)) {
    const bool statistic = spec.name.ends_with("_mean") || spec.name.ends_with("_rstd");
    const bool kept = recompute == Recompute::none ||
                      (recompute == Recompute::selective && spec.name != saved::att) ||
                      (recompute == Recompute::full && spec.name == saved::residual3);
    if (kept)
      per_layer += statistic ? 4 * spec.numel() : compressed_bytes(spec.numel(), compression);
  }
  return config.layers * per_layer +
         estimate::runtime_activation_bytes_outside_layers(config, B, T, DType::f32);
}

TEST(Compression, CompressedBytesAreTheInt8ValuesAndTheirScales) {
  EXPECT_EQ(compressed_bytes(1000, ActivationCompression::none), 4000);
  EXPECT_EQ(compressed_bytes(1000, ActivationCompression::int8), 1004);
  EXPECT_EQ(compressed_bytes(1000, ActivationCompression::int8_block), 1000 + 4 * 4);  // 4 blocks
  EXPECT_EQ(compressed_bytes(1024, ActivationCompression::int8_block), 1024 + 4 * 4);
  EXPECT_EQ(compressed_bytes(1025, ActivationCompression::int8_block), 1025 + 4 * 5);
  const int64_t huge = int64_t{70} << 30;  // 70 Gi elements: no 32-bit arithmetic anywhere
  EXPECT_EQ(compressed_bytes(huge, ActivationCompression::int8_block), huge + 4 * (huge / 256));
  EXPECT_EQ(parse_compression("int8-block"), ActivationCompression::int8_block);
  EXPECT_THROW((void)parse_compression("int4"), UsageError);
}

TEST(Compression, TheStoreHoldsTheCompressedLayoutAfterForwardUnderEveryPlan) {
  const ModelConfig config = gpt2_config("compress-bytes", 3, 32, 4, 41, 16);
  const int64_t B = 2, T = 9;
  for (const auto compression : {ActivationCompression::int8, ActivationCompression::int8_block}) {
    for (const Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
      std::vector<LayerPolicy> plan(3, LayerPolicy{recompute, recompute == Recompute::full});
      const Outcome o = run(config, B, T, compression, plan, "meta");
      EXPECT_EQ(o.bytes_after_forward, expected_after_forward(config, B, T, compression, recompute))
          << compression_name(compression) << " with " << recompute::to_string(recompute);
    }
  }
}

double relative_error(const std::vector<float>& actual, const std::vector<float>& expected) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff += std::pow(static_cast<double>(actual[i]) - expected[i], 2);
    norm += std::pow(static_cast<double>(expected[i]), 2);
  }
  return std::sqrt(diff / norm);
}

// The forward reads nothing compressed (a tensor is compressed after its last forward reader),
// so the loss is bitwise the fp32 one; the gradients carry the quantisation error: present, and
// small. An int8 absmax step is max|x|/127, so each kept value is within 0.4% of its tensor's (or
// block's) largest; through a few layers that stays far below 10% of the gradient's norm, while
// a wrong scale, a lost sign or a stale buffer is off by O(1).
TEST(Compression, TheLossIsUnchangedAndTheGradientsMoveByTheQuantisationErrorOnly) {
  for (const ModelConfig& config : {gpt2_config("compress-gpt2", 3, 32, 4, 41, 16),
                                    llama_config("compress-llama", 3, 32, 4, 2, 48, 41, 16)}) {
    const std::vector<LayerPolicy> keep(3);
    const Outcome exact = run(config, 2, 9, ActivationCompression::none, keep);
    const Outcome tensor = run(config, 2, 9, ActivationCompression::int8, keep);
    const Outcome block = run(config, 2, 9, ActivationCompression::int8_block, keep);
    EXPECT_EQ(tensor.loss, exact.loss) << config.name;
    EXPECT_EQ(block.loss, exact.loss) << config.name;
    const double tensor_error = relative_error(tensor.grads, exact.grads);
    const double block_error = relative_error(block.grads, exact.grads);
    EXPECT_GT(tensor_error, 0.0) << config.name << ": compression changed nothing";
    EXPECT_LT(tensor_error, 0.1) << config.name;
    EXPECT_LT(block_error, tensor_error) << config.name << ": smaller blocks, smaller steps";
    // With full recompute only the checkpoints are compressed; the recomputed tensors are exact.
    std::vector<LayerPolicy> full(3, LayerPolicy{Recompute::full, true});
    const Outcome checkpoints = run(config, 2, 9, ActivationCompression::int8, full);
    EXPECT_EQ(checkpoints.loss, exact.loss);
    EXPECT_LT(relative_error(checkpoints.grads, exact.grads), 0.1) << config.name;
    EXPECT_LT(checkpoints.peak_bytes,
              run(config, 2, 9, ActivationCompression::none, full).peak_bytes);
  }
}

TEST(Compression, PackAndUnpackKeepTheOtherReferencesAndTheAccounting) {
  Runtime runtime(memory::parse_device("cpu"));
  SavedActivations saved(runtime, 1);
  saved.set_storage(make_activation_storage(ActivationCompression::int8_block));
  const Tensor& a = saved.save(0, "a", {2, 128});  // one block of 256
  const Tensor& stat = saved.save(0, "stat", {3}, DType::f32, false);
  // Multiples of amax / 127 = 0.5: exact in int8.
  auto value = [](int64_t i) { return 0.5f * static_cast<float>(i % 255 - 127); };
  for (int64_t i = 0; i < 256; ++i) a.f32()[i] = value(i);
  EXPECT_EQ(saved.bytes(), 1024 + 12);
  saved.pack_after_forward(0);  // a layer without an output: everything packable is packed
  EXPECT_EQ(saved.bytes(), compressed_bytes(256, ActivationCompression::int8_block) + 12);
  EXPECT_EQ(&saved.get(0, "stat"), &stat) << "not compressible: untouched";
  EXPECT_THROW((void)saved.get(0, "a"), std::logic_error) << "packed: unpack first";
  saved.unpack_for_backward(0);
  EXPECT_EQ(saved.bytes(), 1036);
  const float* back = saved.get(0, "a").f32();
  for (int64_t i = 0; i < 256; ++i) EXPECT_EQ(back[i], value(i)) << i;
  EXPECT_EQ(saved.peak_bytes(), 1036 + compressed_bytes(256, ActivationCompression::int8_block))
      << "the int8 form exists beside the fp32 one for a moment, each way";
}

}  // namespace
}  // namespace vramlab::nn
