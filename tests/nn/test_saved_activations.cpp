// SavedActivations: what a training step keeps for backward equals the estimator's runtime
// layout tensor by tensor (names, shapes, bytes), plans are validated, releasing keeps the rest,
// the store empties during backward, and meta/cuda dispatch behave as documented.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/estimate/runtime_activations.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"

namespace vramlab::nn {
namespace {

std::vector<int32_t> token_ids(int64_t n, int64_t vocab, int64_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + salt) % vocab);
  return ids;
}

// Runs a forward on `device` and compares the store's listing with the estimator's contract.
void expect_layout_matches_estimator(const ModelConfig& config, int64_t B, int64_t T,
                                     const std::string& device,
                                     AttentionKind attention = AttentionKind::naive) {
  Runtime runtime(memory::parse_device(device));
  DecoderModel model(runtime, config, 1);
  model.set_attention(attention);
  SavedActivations saved(runtime, config.layers);
  auto tokens = token_ids(B * T, config.vocab, 1), targets = token_ids(B * T, config.vocab, 2);
  // sim and cpu memory is host memory and meta runs no kernel, so host vectors serve as inputs.
  const memory::TensorView token_view(tokens.data(), DType::i32, {B, T});
  const memory::TensorView target_view(targets.data(), DType::i32, {B, T});
  model.forward(saved, token_view, target_view, B, T);
  const auto listed = saved.list();
  const auto per_layer = estimate::runtime_saved_activations_per_layer(config, B, T, attention);
  const auto outside = estimate::runtime_saved_activations_outside_layers(config, B, T);
  ASSERT_EQ(listed.size(), per_layer.size() * static_cast<size_t>(config.layers) + outside.size())
      << config.name << " on " << device;
  std::vector<SavedActivationInfo> by_layer_outside;
  size_t index_in_layer = 0;
  int64_t current_layer = 0;
  int64_t layer_bytes = 0;
  for (const SavedActivationInfo& info : listed) {
    if (info.layer < 0) {
      by_layer_outside.push_back(info);
      continue;
    }
    if (info.layer != current_layer) {
      EXPECT_EQ(layer_bytes,
                estimate::runtime_activation_bytes_per_layer(config, B, T, DType::f32, attention))
          << "layer " << current_layer;
      current_layer = info.layer;
      index_in_layer = 0;
      layer_bytes = 0;
    }
    ASSERT_LT(index_in_layer, per_layer.size());
    const auto& spec = per_layer[index_in_layer++];
    EXPECT_EQ(info.name, spec.name) << "layer " << info.layer;
    EXPECT_EQ(info.bytes, spec.numel() * 4) << info.name;
    // qkv is stored as three planes (3, B, T, C) instead of (B, T, 3C): same bytes.
    if (info.name != "qkv") {
      EXPECT_EQ(info.shape, spec.shape) << info.name;
    }
    EXPECT_EQ(info.dtype, DType::f32);
    layer_bytes += info.bytes;
  }
  EXPECT_EQ(layer_bytes,
            estimate::runtime_activation_bytes_per_layer(config, B, T, DType::f32, attention));
  ASSERT_EQ(by_layer_outside.size(), outside.size());
  for (size_t i = 0; i < outside.size(); ++i) {
    EXPECT_EQ(by_layer_outside[i].name, outside[i].name);
    EXPECT_EQ(by_layer_outside[i].shape, outside[i].shape) << outside[i].name;
  }
  EXPECT_EQ(saved.bytes(),
            estimate::runtime_activation_bytes_total(config, B, T, DType::f32, attention));
  // The allocator sees them as activations: each block rounded up to 512 bytes, and a large-pool
  // block keeps a remainder below 1 MiB unsplit (PyTorch's should_split).
  const int64_t activation_bytes =
      runtime.allocator().category_stats().of(memory::MemoryCategory::activation).current;
  EXPECT_GE(activation_bytes, saved.bytes());
  EXPECT_LT(activation_bytes,
            saved.bytes() + (int64_t{1} << 20) * static_cast<int64_t>(listed.size()));
  model.backward(saved, token_view, target_view, B, T);
  EXPECT_TRUE(saved.list().empty());
  EXPECT_EQ(runtime.allocator().category_stats().of(memory::MemoryCategory::activation).current, 0);
  EXPECT_EQ(runtime.allocator().category_stats().of(memory::MemoryCategory::temporary).current, 0);
}

TEST(SavedActivations, Gpt2LayoutIsTheEstimatorsRuntimeLayout) {
  expect_layout_matches_estimator(gpt2_config("layout-gpt2", 3, 32, 4, 50, 16), 3, 11, "cpu");
}

TEST(SavedActivations, LlamaLayoutIsTheEstimatorsRuntimeLayout) {
  expect_layout_matches_estimator(llama_config("layout-llama", 2, 32, 4, 2, 40, 50, 16), 2, 9,
                                  "sim:64MiB");
}

TEST(SavedActivations, MetaDeviceSavesTheSameLayoutWithoutRunningKernels) {
  expect_layout_matches_estimator(model_config_by_name("gpt2-124m"), 4, 1024, "meta");
}

// Flash attention saves lse (B, H, T) instead of att (B, H, T, T): the layout, measured on every
// device kind, is still the estimator's, and the backward still empties the store.
TEST(SavedActivations, FlashAttentionLayoutIsTheEstimatorsOnEveryDevice) {
  expect_layout_matches_estimator(gpt2_config("flash-gpt2", 2, 32, 4, 50, 40), 2, 37, "cpu",
                                  AttentionKind::flash);
  expect_layout_matches_estimator(llama_config("flash-llama", 2, 48, 6, 2, 40, 50, 24), 3, 19,
                                  "sim:64MiB", AttentionKind::flash);
  expect_layout_matches_estimator(model_config_by_name("llama2-7b"), 1, 4096, "meta",
                                  AttentionKind::flash);
}

TEST(SavedActivations, APlanMustHaveOneEntryPerLayerAndFullLayersStartTheirSpan) {
  Runtime runtime(memory::parse_device("cpu"));
  SavedActivations saved(runtime, 4);
  const LayerPolicy none{}, selective{Recompute::selective, false};
  const LayerPolicy start{Recompute::full, true}, inside{Recompute::full, false};
  EXPECT_NO_THROW(saved.set_plan({start, inside, selective, start}));
  EXPECT_EQ(saved.policy(1), inside);
  EXPECT_EQ(saved.policy(-1), none);
  EXPECT_EQ(saved.span_first(1), 0);
  EXPECT_FALSE(saved.span_last(0));
  EXPECT_TRUE(saved.span_last(1));
  EXPECT_TRUE(saved.span_last(3));
  EXPECT_THROW(saved.set_plan({none, none, none}), UsageError);
  try {
    saved.set_plan({none, inside, none, none});
    FAIL() << "a span without a start was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(saved.policy(1), inside) << "a refused plan must leave the previous one";
}

TEST(SavedActivations, ReleasingOneTensorKeepsTheOthersAndCountsBytes) {
  Runtime runtime(memory::parse_device("cpu"));
  SavedActivations saved(runtime, 1);
  const Tensor& a = saved.save(0, "a", {3});
  const Tensor& b = saved.save(0, "b", {5});
  const Tensor& c = saved.save(0, "c", {7});
  const float* c_data = c.view().f32();
  EXPECT_EQ(saved.bytes(), 60);
  saved.release(0, "b");
  EXPECT_EQ(saved.bytes(), 40);
  EXPECT_EQ(&saved.get(0, "a"), &a) << "the other references stay valid";
  EXPECT_EQ(saved.get(0, "c").view().f32(), c_data);
  EXPECT_FALSE(saved.contains(0, "b"));
  EXPECT_THROW(saved.release(0, "b"), std::logic_error);
  saved.release_all_except(0, "c");
  EXPECT_EQ(saved.bytes(), 28);
  EXPECT_EQ(saved.peak_bytes(), 60);
  saved.clear();
  EXPECT_EQ(saved.bytes(), 0);
  (void)b;
}

TEST(SavedActivations, ListsNameLayerShapeDtypeAndBytesAndRefusesDuplicates) {
  Runtime runtime(memory::parse_device("cpu"));
  SavedActivations saved(runtime, 2);
  saved.save(1, "att", {2, 3, 5, 5});
  saved.save(-1, "tokens", {2, 5}, DType::i32);
  EXPECT_THROW(saved.save(1, "att", {1}), std::logic_error);
  EXPECT_THROW(saved.save(2, "x", {1}), std::logic_error);
  const auto list = saved.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "att");
  EXPECT_EQ(list[0].layer, 1);
  EXPECT_EQ(list[0].shape, (std::vector<int64_t>{2, 3, 5, 5}));
  EXPECT_EQ(list[0].bytes, 2 * 3 * 5 * 5 * 4);
  EXPECT_EQ(list[1].dtype, DType::i32);
  EXPECT_EQ(list[1].bytes, 40);
  EXPECT_EQ(saved.bytes(), 600 + 40);
  EXPECT_THROW((void)saved.get(0, "att"), std::logic_error);
  saved.release_layer(1);
  EXPECT_EQ(saved.list().size(), 1u);
}

// No GPU here (nor in CI): the cuda device is refused with the reason, never a crash. A machine
// with a GPU and a CUDA build skips this.
TEST(Runtime, CudaDeviceWithoutAGpuIsRefusedWithTheReason) {
  try {
    Runtime runtime(memory::parse_device("cuda:0"));
    EXPECT_EQ(runtime.kernel_kind(), KernelKind::cuda);
    GTEST_SKIP() << "a usable GPU is present";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("device 'cuda:0' is not available: "), std::string::npos) << message;
  }
}

TEST(Runtime, EachDeviceKindGetsItsDefaultKernels) {
  EXPECT_EQ(Runtime(memory::parse_device("meta")).kernel_kind(), KernelKind::meta);
  EXPECT_EQ(Runtime(memory::parse_device("cpu")).kernel_kind(), KernelKind::cpu);
  EXPECT_EQ(Runtime(memory::parse_device("sim:t4-16g")).kernel_kind(), KernelKind::cpu);
}

TEST(Runtime, MetaKernelsRunOnlyOnTheMetaDevice) {
  EXPECT_THROW(Runtime(memory::parse_device("cpu"), KernelKind::meta), UsageError);
  EXPECT_THROW(Runtime(memory::parse_device("sim:t4-16g"), KernelKind::meta), UsageError);
  EXPECT_THROW(Runtime(memory::parse_device("meta"), KernelKind::cpu), UsageError);
  EXPECT_THROW(Runtime(memory::parse_device("meta"), KernelKind::cuda_emulated), UsageError);
}

}  // namespace
}  // namespace vramlab::nn
