// Tests of exercise 02.4 (a checkpointed block that replays its forward's random numbers). They run
// against your code (`vramlab check 02.4`) and against the reference (ctest: test_ex_02_4_ref).
// The blocks are real: they drop elements with the runtime's dropout kernel
// (nn::CpuKernelBackend::dropout_forward), at the counters the generator hands out. A chain of
// blocks runs forward as training does, with other layers drawing in between; backward then
// recomputes the blocks last to first and must reproduce every output bit for bit, leaving the
// generator exactly where each recompute found it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dtype/dropout_mask.h"
#include "common/dtype/dtype.h"
#include "common/memory/tensor_view.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/02-checkpointing/api/rng_replay.h"

namespace vramlab::lesson02 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// A transformer-like block: h = dropout(tanh(x) · 1.5, p1), y = dropout(h + x, p2); two draws of
// n counters each, through the runtime's kernel.
BlockFunction dropout_block(float p1, float p2) {
  return [p1, p2](std::span<const float> x, std::span<float> y, DropoutGenerator& generator) {
    const nn::CpuKernelBackend kernels;
    const auto n = static_cast<int64_t>(x.size());
    const uint64_t seed = generator.get_state().seed;
    std::vector<float> h(x.size());  // (n)
    for (size_t i = 0; i < x.size(); ++i) h[i] = std::tanh(x[i]) * 1.5f;
    kernels.dropout_forward(memory::TensorView(h.data(), DType::f32, {n}),
                            memory::TensorView(h.data(), DType::f32, {n}), p1, seed,
                            generator.draw(static_cast<uint64_t>(n)));
    for (size_t i = 0; i < x.size(); ++i) h[i] += x[i];
    kernels.dropout_forward(memory::TensorView(y.data(), DType::f32, {n}),
                            memory::TensorView(h.data(), DType::f32, {n}), p2, seed,
                            generator.draw(static_cast<uint64_t>(n)));
  };
}

// Every element depends on its own counter: y[i] = x[i] + uniform(seed, first + i).
BlockFunction noise_block() {
  return [](std::span<const float> x, std::span<float> y, DropoutGenerator& generator) {
    const uint64_t seed = generator.get_state().seed;
    const uint64_t first = generator.draw(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] + dropout_uniform(seed, first + i);
  };
}

std::string describe(const DropoutGenerator::State& s) {
  return "seed " + std::to_string(s.seed) + " offset " + std::to_string(s.offset);
}

size_t differing_bits(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

struct Chain {
  std::vector<CheckpointedBlock> blocks;
  std::vector<std::vector<float>> inputs;  // (L + 1) x (n): the checkpoints; inputs[L] the output
  std::vector<uint64_t> draws_between;     // counters other layers draw after each block
};

// Forward as training does: block l, then another layer draws; returns the chain.
Chain run_forward(std::mt19937_64& rng, size_t layers, size_t n, DropoutGenerator& generator) {
  Chain chain;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  chain.inputs.push_back(x);
  for (size_t l = 0; l < layers; ++l) {
    chain.blocks.emplace_back(l % 3 == 2 ? noise_block()
                                         : dropout_block(0.1f + 0.2f * static_cast<float>(l % 3),
                                                         l % 2 == 0 ? 0.5f : 0.0f));
    std::vector<float> y(n);
    chain.blocks.back().forward(chain.inputs.back(), y, generator);
    chain.inputs.push_back(y);
    chain.draws_between.push_back(std::uniform_int_distribution<uint64_t>(0, 3 * n)(rng));
    generator.draw(chain.draws_between.back());
  }
  return chain;
}

//! [test]
TEST(RngReplay, RecomputesEveryBlockOfAChainBitwiseInBackwardOrder) {
  std::mt19937_64 rng(0x0241);
  Comparison bits("output elements that differ from the forward's (recompute)", Unit::kNumber);
  Comparison offset("generator offset after recompute minus before", Unit::kNumber);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t layers = 1 + static_cast<size_t>(trial % 7),
                 n = 1 + 97 * static_cast<size_t>(trial);
    // Offsets past 2^32: a long run's generator has handed out billions of counters.
    DropoutGenerator generator(rng(), (uint64_t{1} << 40) + static_cast<uint64_t>(trial));
    Chain chain = run_forward(rng, layers, n, generator);
    for (size_t l = layers; l-- > 0;) {
      generator.draw(static_cast<uint64_t>(trial));  // backward draws too (other layers' dropout)
      const DropoutGenerator::State before = generator.get_state();
      std::vector<float> y(n, NAN);
      chain.blocks[l].recompute(chain.inputs[l], y, generator);
      const std::string where = "trial " + std::to_string(trial) + " block " + std::to_string(l) +
                                " of " + std::to_string(layers) + " n=" + std::to_string(n);
      bits.add(where, 0.0, static_cast<double>(differing_bits(chain.inputs[l + 1], y)));
      offset.add(
          where + " from " + describe(before), 0.0,
          static_cast<double>(generator.get_state().offset) - static_cast<double>(before.offset));
      EXPECT_EQ(generator.get_state().seed, before.seed) << where;
    }
  }
  VRAMLAB_EXPECT_PASSES(bits);
  VRAMLAB_EXPECT_PASSES(offset);
}
//! [test]

TEST(RngReplay, TheDrawsAfterARecomputeAreTheDrawsWithoutIt) {
  // Two generators in step: one model recomputes a block, the other does not. Whatever follows
  // must see the same counters.
  DropoutGenerator with(42, 1000), without(42, 1000);
  CheckpointedBlock block(dropout_block(0.3f, 0.2f));
  std::vector<float> x(333, 0.5f), y(333);
  block.forward(x, y, with);
  CheckpointedBlock(dropout_block(0.3f, 0.2f)).forward(x, y, without);
  with.draw(77);
  without.draw(77);
  block.recompute(x, y, with);
  EXPECT_EQ(with.draw(5), without.draw(5))
      << "the first counter drawn after the recompute moved: " << describe(with.get_state())
      << " instead of " << describe(without.get_state());
}

TEST(RngReplay, ANewForwardIsWhatTheNextRecomputeReplays) {
  // Step 2 runs the same block again: the recompute must replay step 2's numbers, not step 1's.
  DropoutGenerator generator(7, 0);
  CheckpointedBlock block(noise_block());
  std::vector<float> x(50, 1.0f), step1(50), step2(50), again(50);
  block.forward(x, step1, generator);
  block.forward(x, step2, generator);
  generator.draw(1234);
  block.recompute(x, again, generator);
  EXPECT_EQ(differing_bits(step2, again), 0u) << "the recompute does not replay the latest forward";
  EXPECT_NE(differing_bits(step1, step2), 0u) << "the test's two steps should differ";
}

TEST(RngReplay, ABlockThatThrowsInItsRecomputeLeavesTheGeneratorAsItWas) {
  // torch.random.fork_rng restores the state in a `finally`: an exception is no excuse.
  int calls = 0;
  CheckpointedBlock block(
      [&calls](std::span<const float> x, std::span<float> y, DropoutGenerator& generator) {
        generator.draw(x.size());
        if (++calls == 2) throw std::runtime_error("out of memory in the recompute");
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i];
      });
  DropoutGenerator generator(3, 500);
  std::vector<float> x(10, 1.0f), y(10);
  block.forward(x, y, generator);
  generator.draw(90);
  const DropoutGenerator::State before = generator.get_state();
  EXPECT_THROW(block.recompute(x, y, generator), std::runtime_error);
  EXPECT_EQ(generator.get_state(), before)
      << "after a throwing recompute the generator is at " << describe(generator.get_state())
      << ", not at " << describe(before);
}

TEST(RngReplay, RejectsMisuseNamingTheValue) {
  EXPECT_THROW(CheckpointedBlock(BlockFunction{}), UsageError) << "an empty block function";
  CheckpointedBlock block(noise_block());
  DropoutGenerator generator(1);
  std::vector<float> x(8), y(8), y7(7);
  try {
    block.recompute(x, y, generator);
    ADD_FAILURE() << "no vramlab::UsageError for recompute() before any forward()";
  } catch (const UsageError&) {
  }
  try {
    block.forward(x, y7, generator);
    ADD_FAILURE() << "no vramlab::UsageError for an output of 7 elements for an input of 8";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    if (message.find('7') == std::string::npos || message.find('8') == std::string::npos)
      ADD_FAILURE() << "the message should name both lengths, 8 and 7: " << message;
  }
  EXPECT_EQ(generator.get_state(), (DropoutGenerator::State{1, 0}))
      << "a rejected call must not draw";
}

}  // namespace
}  // namespace vramlab::lesson02
