// Tests of exercise 05.3 (the host memory activation offload pins). They run against your code
// (`vramlab check 05.3`) and against the reference (ctest: test_ex_05_3_ref). Expectations: the
// runtime's pinned host allocator. Odd GPT-2 and Llama models train one step with their
// activations offloaded (`--offload-activations on`) on a meta A100, whose host memory is counted
// without being touched, under every kind of recompute schedule, with both attention kernels and
// in fp32 and mixed bf16; the tensors one block saves come from the runtime's layout
// (lessons/05-offload/pinned_inputs.h), and your answer must equal the pinned bytes
// the allocator handed out for activations, to the byte. Then blocks built by hand whose answer
// follows from the contract alone, and bad input.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/05-offload/api/pinned_activations.h"
#include "lessons/05-offload/pinned_inputs.h"

namespace vramlab::lesson05 {
namespace {

using workbook::Comparison;

//! [test]
TEST(PinnedActivations, EqualsThePinnedAllocatorForEveryScheduleModelAndAttention) {
  Comparison bytes("pinned activation bytes", workbook::Unit::kBytes, 0.0, 0.0);
  for (const bool llama : {false, true}) {
    train::TrainOptions o;
    o.model = llama ? llama_config("llama-odd", 7, 640, 10, 2, 1792, 32001, 512)
                    : gpt2_config("gpt2-odd", 7, 576, 9, 50257, 512);
    o.batch = 3;
    o.seq = 500;
    o.plan.activations.offload = true;
    for (const char* schedule : {"none", "selective", "full", "every:2", "every:3", "sqrt"}) {
      for (const plan::AttentionKind attention :
           {plan::AttentionKind::naive, plan::AttentionKind::flash}) {
        o.plan.recompute = recompute::parse_recompute_spec(schedule);
        o.plan.attention = attention;
        o.plan.amp.precision = llama ? plan::Precision::mixed_bf16 : plan::Precision::fp32;
        nn::Runtime runtime(memory::parse_device("meta:a100-40g"));
        train::Trainer trainer(runtime, o);
        (void)trainer.step();
        const int64_t measured =
            runtime.host_allocator().category_stats().of(memory::MemoryCategory::activation).peak;
        bytes.add(o.model.name + ", " + schedule + ", " +
                      std::string(plan::attention_kind_name(attention)),
                  static_cast<double>(measured),
                  static_cast<double>(
                      pinned_activation_bytes(offloaded_activations(o, trainer.schedule()))));
      }
    }
  }
  VRAMLAB_EXPECT_PASSES(bytes);
}
//! [test]

// Blocks whose answer follows from the contract: sizes on both sides of powers of two.
TEST(PinnedActivations, HandMadeBlocksFollowTheContract) {
  Comparison bytes("pinned bytes", workbook::Unit::kBytes, 0.0, 0.0);
  const std::vector<SavedTensor> layer = {
      {"x", 1000, false}, {"att", 4096, false}, {"mean", 24, true}, {"residual3", 1025, false}};
  const auto with = [&](std::vector<BlockSchedule> schedule) {
    return pinned_activation_bytes(OffloadedActivations{layer, std::move(schedule)});
  };
  using R = BlockRecompute;
  // x: 1024, att: 4096, residual3: 2048; mean stays.
  bytes.add("one block, none", 1024 + 4096 + 2048, with({{R::none, false}}));
  bytes.add("one block, selective", 1024 + 2048, with({{R::selective, false}}));
  bytes.add("one span of one block", 2048, with({{R::full, true}}));
  // A span of three: only its last output.
  bytes.add("a span of three", 2048, with({{R::full, true}, {R::full, false}, {R::full, false}}));
  // Two spans of two, then a plain block.
  bytes.add("two spans and a plain block", 2048 + 2048 + (1024 + 4096 + 2048),
            with({{R::full, true},
                  {R::full, false},
                  {R::full, true},
                  {R::full, false},
                  {R::none, false}}));
  bytes.add("no blocks", 0, with({}));
  // Exact powers of two stay as they are; one byte takes one.
  bytes.add("powers of two", 4096 + 1 + 2,
            pinned_activation_bytes(OffloadedActivations{
                {{"a", 4096, false}, {"b", 1, false}, {"c", 2, false}}, {{R::none, false}}}));
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(PinnedActivations, AnEmptyTensorOrASpanWithoutAStartIsRefusedByName) {
  const auto refused = [](const OffloadedActivations& f, const std::string& name) {
    try {
      (void)pinned_activation_bytes(f);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no vramlab::UsageError naming " << name;
  };
  refused({{{"x", 0, false}}, {{BlockRecompute::none, false}}}, "bytes");
  refused({{{"x", -8, false}}, {{BlockRecompute::none, false}}}, "bytes");
  refused({{{"residual3", 8, false}}, {{BlockRecompute::full, false}}}, "span_start");
  refused(
      {{{"residual3", 8, false}}, {{BlockRecompute::none, false}, {BlockRecompute::full, false}}},
      "span_start");
}

}  // namespace
}  // namespace vramlab::lesson05
