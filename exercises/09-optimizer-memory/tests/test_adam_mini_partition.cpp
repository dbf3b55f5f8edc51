// Tests of exercise 09.3 (Adam-mini's partition and one step of its v). They run against your
// code (`vramlab check 09.3`) and against the reference (ctest: test_ex_09_3_ref).
// Expectations: the runtime's layout (optim::optimizer_state_layout, what `vramlab train
// --optimizer adam-mini` allocates) block by block for every tensor of the built-in models (GPT-2
// 124M to Llama 2 70B and Llama 3 8B, with grouped-query attention) and of 60 seeded random
// models with odd sizes; the v count also from a closed form per family derived here, and against
// the estimator; the v step against the runtime's kernel (kernels::cpu::adam_mini_update) within
// the error bound of an f32 sum of the block's squares, per block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/estimate/model_state_memory.h"
#include "common/model/model_config.h"
#include "common/optim/state_layout.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "kernels/cpu/optimizer.h"
#include "lessons/09-optimizer-memory/api/adam_mini_partition.h"

namespace vramlab::lesson09 {
namespace {

using workbook::Comparison;
using workbook::Unit;

// A value as printf's %.9g prints it: every f32 digit, and small values not shown as 0.000000.
std::string g9(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::vector<ModelConfig> builtin_models() {
  std::vector<ModelConfig> models;
  for (const std::string_view name : model_config_names())
    models.push_back(model_config_by_name(name));
  return models;
}

// Random small models of both families: odd head sizes, vocabularies and MLP widths, and for
// Llama every kv_heads that divides heads (grouped-query attention included).
std::vector<ModelConfig> random_models(std::mt19937_64& rng, int count) {
  std::uniform_int_distribution<int64_t> layers(1, 3), head_dim(1, 9), heads(1, 8), vocab(5, 700),
      seq(1, 99), ffn(1, 300);
  std::vector<ModelConfig> models;
  for (int i = 0; i < count; ++i) {
    const int64_t h = heads(rng), hd = head_dim(rng);
    if (i % 2 == 0) {
      models.push_back(gpt2_config("random-gpt2-" + std::to_string(i), layers(rng), h * hd, h,
                                   vocab(rng), seq(rng)));
    } else {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= h; ++d)
        if (h % d == 0) divisors.push_back(d);
      const int64_t kv = divisors[static_cast<size_t>(rng() % divisors.size())];
      models.push_back(llama_config("random-llama-" + std::to_string(i), layers(rng), h * hd, h, kv,
                                    ffn(rng), vocab(rng), seq(rng)));
    }
  }
  return models;
}

std::vector<VBlockRun> runtime_runs(const optim::TensorStateLayout& t) {
  std::vector<VBlockRun> runs;
  for (const optim::BlockRun& r : t.adam_mini_runs)
    runs.push_back({r.offset, r.block_size, r.count});
  return runs;
}

// Walks the blocks of a run list one by one.
struct BlockCursor {
  const std::vector<VBlockRun>& runs;
  size_t run = 0;
  int64_t k = 0;
  [[nodiscard]] bool done() const { return run >= runs.size(); }
  [[nodiscard]] int64_t start() const { return runs[run].offset + k * runs[run].block_size; }
  [[nodiscard]] int64_t size() const { return runs[run].block_size; }
  void next() {
    if (++k >= runs[run].count) {
      ++run;
      k = 0;
    }
  }
};

// The first block where two partitions differ: its index, and each side's (start, size).
struct BlockChecks {
  Comparison sizes{"size of the first Adam-mini block that differs (elements)", Unit::kNumber};
  Comparison starts{"first element of that block", Unit::kNumber};

  void add(const std::string& where, const std::vector<VBlockRun>& expected,
           const std::vector<VBlockRun>& got) {
    for (const VBlockRun& r : got)
      if (r.block_size < 1 || r.count < 1) {
        sizes.add(where + ": a run of " + std::to_string(r.count) + " blocks of " +
                      std::to_string(r.block_size),
                  1, static_cast<double>(std::min(r.block_size, r.count)));
        return;
      }
    BlockCursor e{expected}, g{got};
    int64_t index = 0;
    for (; !e.done() && !g.done(); e.next(), g.next(), ++index)
      if (e.start() != g.start() || e.size() != g.size()) break;
    const std::string at = where + ", block " + std::to_string(index);
    if (e.done() && g.done()) {
      sizes.add(where, 0, 0);
    } else if (g.done()) {
      sizes.add(at + " (yours ends here: too few blocks)", static_cast<double>(e.size()), 0);
    } else if (e.done()) {
      sizes.add(at + " (the layout ends here: too many blocks)", 0, static_cast<double>(g.size()));
    } else {
      sizes.add(at, static_cast<double>(e.size()), static_cast<double>(g.size()));
      starts.add(at, static_cast<double>(e.start()), static_cast<double>(g.start()));
    }
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(sizes);
    if (starts.count() > 0) VRAMLAB_EXPECT_PASSES(starts);
  }
};

//! [test]
TEST(AdamMiniPartition, BlocksOfEveryTensorEqualTheRuntimesLayoutForRealModels) {
  BlockChecks checks;
  for (const ModelConfig& model : builtin_models())
    for (const optim::TensorStateLayout& t : optim::optimizer_state_layout(model)) {
      ParameterSpec tensor;
      tensor.name = t.name;
      tensor.shape = t.shape;
      checks.add(model.name + " " + t.name, runtime_runs(t), adam_mini_runs(model, tensor));
    }
  checks.expect_passes();
}
//! [test]

TEST(AdamMiniPartition, BlocksEqualTheRuntimesLayoutForRandomModelsWithOddSizesAndGQA) {
  std::mt19937_64 rng(931);
  BlockChecks checks;
  for (const ModelConfig& model : random_models(rng, 60)) {
    const std::vector<ParameterSpec> tensors = model.parameters();
    const std::vector<optim::TensorStateLayout> layout = optim::optimizer_state_layout(model);
    ASSERT_EQ(tensors.size(), layout.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string where = model.name + " (C=" + std::to_string(model.hidden) +
                                " H=" + std::to_string(model.heads) +
                                " kv=" + std::to_string(model.kv_heads) + ") " + tensors[i].name;
      checks.add(where, runtime_runs(layout[i]), adam_mini_runs(model, tensors[i]));
    }
  }
  checks.expect_passes();
}

// The v count from the shapes: per layer, Q and K one per head, every other matrix one per row,
// every vector one; then the embeddings by token and the final norm.
int64_t v_count_from_the_shapes(const ModelConfig& m) {
  const int64_t C = m.hidden, H = m.heads, kv = m.kv_heads, kvC = m.kv_hidden(), F = m.ffn_hidden;
  if (m.family == ModelFamily::gpt2) {
    // ln1 (2), qkv: Q by head, K by head, V by row (kvC), + bias, proj (C rows) + bias, ln2 (2),
    // fc (F rows) + bias, proj (C rows) + bias. The LM head is wte: not a second table.
    const int64_t layer = 2 + (H + kv + kvC + 1) + (C + 1) + 2 + (F + 1) + (C + 1);
    return m.vocab + m.max_seq + m.layers * layer + 2;
  }
  // norm1, q (H), k (kv), v (kvC rows), o (C rows), norm2, gate and up (F rows), down (C rows).
  const int64_t layer = 1 + H + kv + kvC + C + 1 + 2 * F + C;
  return m.vocab + m.layers * layer + 1 + m.vocab;  // embed, layers, normf, lm_head
}

TEST(AdamMiniPartition, VCountEqualsTheEstimatorsAndAThousandthOfTheParametersAtScale) {
  std::mt19937_64 rng(932);
  Comparison layout("Adam-mini v values (the estimator's count)", Unit::kNumber);
  Comparison shapes("Adam-mini v values (from the shapes, per family)", Unit::kNumber);
  std::vector<ModelConfig> models = builtin_models();
  for (ModelConfig& m : random_models(rng, 40)) models.push_back(std::move(m));
  for (const ModelConfig& model : models) {
    const int64_t got = adam_mini_v_count(model);
    layout.add(model.name, static_cast<double>(estimate::adam_mini_v_blocks(model)),
               static_cast<double>(got));
    shapes.add(model.name, static_cast<double>(v_count_from_the_shapes(model)),
               static_cast<double>(got));
  }
  VRAMLAB_EXPECT_PASSES(layout);
  VRAMLAB_EXPECT_PASSES(shapes);
  // The paper's claim (abstract): at least 99.9% of Adam's v can go.
  for (const char* name : {"gpt2-124m", "llama2-7b", "llama2-70b", "llama3-8b"}) {
    const ModelConfig model = model_config_by_name(name);
    EXPECT_LE(static_cast<double>(adam_mini_v_count(model)),
              1e-3 * static_cast<double>(model.parameter_count()))
        << name << ": Adam-mini keeps more than a thousandth of v";
  }
}

TEST(AdamMiniPartition, OneStepOfVEqualsTheRuntimeKernelWithinTheF32SumBound) {
  std::mt19937_64 rng(933);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  // |v − kernel's v| / bound per block, where the bound is twice the error of an f32 sum of the
  // block's B positive squares, (B − 1)·2^-24 relative (Higham, Accuracy and Stability of
  // Numerical Algorithms, §4.2), plus 4·2^-24 for the square, the mean and the β2 update.
  Comparison ratio("|v - the kernel's v| / (2 (B + 3) 2^-24 |v|) per block", Unit::kNumber, 1.0);
  std::vector<ModelConfig> models = {model_config_by_name("gpt2-mini"),
                                     model_config_by_name("llama-tiny")};
  for (ModelConfig& m : random_models(rng, 6)) models.push_back(std::move(m));
  for (const float beta2 : {0.95f, 0.999f})
    for (const ModelConfig& model : models)
      for (const optim::TensorStateLayout& t : optim::optimizer_state_layout(model)) {
        const std::vector<VBlockRun> runs = runtime_runs(t);
        // Gradients whose scale changes from row to row, as real ones do.
        std::vector<float> grad(static_cast<size_t>(t.numel));
        for (size_t i = 0; i < grad.size(); ++i)
          grad[i] = normal(rng) * std::pow(10.0f, -3.0f * unit(rng));
        int64_t blocks = 0;
        for (const VBlockRun& r : runs) blocks += r.count;
        std::vector<float> v(static_cast<size_t>(blocks));
        for (float& x : v) x = unit(rng) * 1e-3f;
        std::vector<float> expected = v, got = v;
        std::vector<float> param(grad.size(), 0.5f), m(grad.size(), 0.0f);
        kernels::cpu::AdamWHyperparameters hp;
        hp.beta2 = beta2;
        size_t first_v = 0;
        for (const VBlockRun& r : runs) {
          const auto at = static_cast<size_t>(r.offset);
          kernels::cpu::adam_mini_update<float, float, float, bf16_t>(
              param.data() + at, grad.data() + at, m.data() + at, expected.data() + first_v,
              nullptr, r.block_size, r.count, hp, {.step = 1, .grad_multiplier = 1.0f});
          first_v += static_cast<size_t>(r.count);
        }
        adam_mini_v_step(got, grad, runs, beta2);
        double worst = 0.0;
        size_t worst_block = 0, b = 0;
        for (const VBlockRun& r : runs)
          for (int64_t k = 0; k < r.count; ++k, ++b) {
            const double bound = 2.0 * static_cast<double>(r.block_size + 3) * 0x1p-24 *
                                 std::fabs(static_cast<double>(expected[b]));
            const double diff = std::fabs(static_cast<double>(got[b]) - expected[b]);
            const double this_ratio = diff == 0.0 ? 0.0 : diff / bound;
            if (!(this_ratio <= worst)) {
              worst = this_ratio;
              worst_block = b;
            }
          }
        ratio.add(model.name + " " + t.name + " beta2=" + g9(beta2) + " block " +
                      std::to_string(worst_block) + " (v " + g9(expected[worst_block]) +
                      " expected, " + g9(got[worst_block]) + " got)",
                  0.0, worst);
      }
  VRAMLAB_EXPECT_PASSES(ratio);
}

TEST(AdamMiniPartition, RejectsAVOrGradientOfTheWrongSizeNamingIt) {
  const std::vector<VBlockRun> runs = {{0, 4, 3}};  // 12 elements, 3 blocks
  std::vector<float> v(3), short_v(2);
  const std::vector<float> grad(12), long_grad(13);
  try {
    adam_mini_v_step(short_v, grad, runs, 0.99f);
    ADD_FAILURE() << "adam_mini_v_step accepted 2 v values for 3 blocks";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find('2'), std::string::npos) << e.what();
  }
  try {
    adam_mini_v_step(v, long_grad, runs, 0.99f);
    ADD_FAILURE() << "adam_mini_v_step accepted 13 gradient values for 12 elements";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("13"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vramlab::lesson09
