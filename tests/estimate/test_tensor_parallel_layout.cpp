// ModelConfig::parameters(r, t): Megatron's split of every tensor over t tensor-parallel ranks.
//
// Oracles: per-rank counts against closed forms written from the architecture (not from the
// tensor list); the ranks' parts of every split tensor partition the whole tensor exactly (every
// element on exactly one rank), checked element by element through full_index; hand-derived rows
// and columns for GPT-2's fused qkv and Llama's grouped key/value heads; 64-bit indices on a
// tensor of 2³⁶ elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/model/model_config.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

const ParameterSpec& find(const std::vector<ParameterSpec>& specs, const std::string& name) {
  for (const ParameterSpec& s : specs)
    if (s.name == name) return s;
  throw std::runtime_error("no parameter " + name);
}

TEST(TensorParallelLayout, OneRankIsTheWholeModel) {
  for (const char* name : {"gpt2-mini", "llama-tiny", "llama2-70b"}) {
    const ModelConfig c = model_config_by_name(name);
    const auto whole = c.parameters();
    const auto one = c.parameters(0, 1);
    ASSERT_EQ(whole.size(), one.size()) << name;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(whole[i].name, one[i].name);
      EXPECT_EQ(whole[i].shape, one[i].shape) << whole[i].name;
      EXPECT_EQ(whole[i].full_shape(), whole[i].shape) << whole[i].name;
      EXPECT_EQ(whole[i].init, one[i].init) << whole[i].name;
    }
    EXPECT_EQ(c.rank_parameter_count(1), c.parameter_count()) << name;
  }
}

// Per rank, written from Megatron's split (§3 of Shoeybi et al.): GPT-2 per layer
//   ln1 2C + qkv (3C²/t + 3C/t) + proj (C²/t + C) + ln2 2C + fc (4C²/t + 4C/t) + proj (4C²/t + C)
//   = 12C²/t + 7C/t + 6C, plus VC + TC + 2C outside;
// Llama per layer 2C + (2C² + 2·kvC·C + 3CF)/t, plus 2VC + C outside.
TEST(TensorParallelLayout, RankCountsMatchClosedFormsForRandomShapes) {
  std::mt19937_64 rng(20261123);
  std::uniform_int_distribution<int64_t> small(1, 5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t t = int64_t{1} << (small(rng) - 1);  // 1 .. 16
    const int64_t heads = t * small(rng), head_dim = small(rng) * 2 + 1, L = small(rng);
    const int64_t C = heads * head_dim, V = small(rng) * 97 + 3, T = small(rng) * 13;
    const ModelConfig g = gpt2_config("g", L, C, heads, V, T);
    const int64_t gpt2_layer = 12 * C * C / t + 7 * C / t + 6 * C;
    EXPECT_EQ(g.rank_parameter_count(t), V * C + T * C + L * gpt2_layer + 2 * C)
        << "t=" << t << " L=" << L << " C=" << C << " V=" << V << " T=" << T;
    const int64_t kv = heads % (3 * t) == 0 ? heads / 3 : heads;
    const int64_t kvC = kv * head_dim, F = t * (small(rng) * 11 + 1);
    const ModelConfig l = llama_config("l", L, C, heads, kv, F, V, T);
    EXPECT_EQ(l.rank_parameter_count(t),
              2 * V * C + L * (2 * C + (2 * C * C + 2 * kvC * C + 3 * C * F) / t) + C)
        << "t=" << t << " L=" << L << " C=" << C << " kv=" << kv << " F=" << F;
    int64_t listed = 0;
    for (const ParameterSpec& s : l.parameters(t - 1, t)) listed += s.numel();
    EXPECT_EQ(listed, l.rank_parameter_count(t));
  }
}

// Every element of every whole tensor is held by exactly one rank (split tensors) or by every
// rank at the same index (replicated ones), and each part's full_shape is the whole tensor's.
void expect_ranks_partition_the_model(const ModelConfig& c, int64_t t) {
  const auto whole = c.parameters();
  std::map<std::string, std::vector<int>> holders;  // name → (numel) ranks holding each element
  for (const ParameterSpec& s : whole) holders[s.name].assign(static_cast<size_t>(s.numel()), 0);
  for (int64_t r = 0; r < t; ++r) {
    const auto part = c.parameters(r, t);
    ASSERT_EQ(part.size(), whole.size());
    for (size_t i = 0; i < part.size(); ++i) {
      const ParameterSpec& s = part[i];
      ASSERT_EQ(s.name, whole[i].name);
      EXPECT_EQ(s.full_shape(), whole[i].shape) << s.name << " t=" << t;
      EXPECT_EQ(s.tp_rank, r);
      EXPECT_EQ(s.tp_size, t);
      std::vector<int>& count = holders[s.name];
      for (int64_t e = 0; e < s.numel(); ++e) {
        const int64_t f = s.full_index(e);
        ASSERT_GE(f, 0) << s.name;
        ASSERT_LT(f, static_cast<int64_t>(count.size())) << s.name;
        if (s.split == TensorParallelSplit::replicated) {
          ASSERT_EQ(f, e) << s.name;
        }
        ++count[static_cast<size_t>(f)];
      }
    }
  }
  for (const ParameterSpec& s : c.parameters(0, t)) {
    const int expected = s.split == TensorParallelSplit::replicated ? static_cast<int>(t) : 1;
    int64_t wrong = 0;
    for (int n : holders[s.name]) wrong += n != expected ? 1 : 0;
    EXPECT_EQ(wrong, 0) << s.name << " t=" << t << ": elements not held " << expected << " time(s)";
  }
}

TEST(TensorParallelLayout, RanksPartitionEverySplitTensorExactly) {
  for (int64_t t : {2, 4}) {
    expect_ranks_partition_the_model(gpt2_config("g", 2, 24, 4, 37, 9), t);
    expect_ranks_partition_the_model(llama_config("l", 2, 24, 8, 4, 20, 37, 9), t);
  }
  expect_ranks_partition_the_model(llama_config("l", 1, 40, 8, 8, 24, 11, 4), 8);
}

// Megatron's split of each kind, by hand: which tensors are cut, along which dimension.
TEST(TensorParallelLayout, ColumnParallelCutRowsRowParallelCutColumnsTheRestIsWhole) {
  const ModelConfig g = gpt2_config("g", 1, 24, 4, 37, 9);  // C 24, F 96
  const auto gpt2 = g.parameters(1, 2);
  const std::map<std::string, std::vector<int64_t>> gpt2_shapes = {
      {"wte", {37, 24}},
      {"wpe", {9, 24}},
      {"blocks.0.ln1.weight", {24}},
      {"blocks.0.attn.qkv.weight", {36, 24}},
      {"blocks.0.attn.qkv.bias", {36}},
      {"blocks.0.attn.proj.weight", {24, 12}},
      {"blocks.0.attn.proj.bias", {24}},
      {"blocks.0.mlp.fc.weight", {48, 24}},
      {"blocks.0.mlp.fc.bias", {48}},
      {"blocks.0.mlp.proj.weight", {24, 48}},
      {"blocks.0.mlp.proj.bias", {24}},
      {"lnf.bias", {24}}};
  for (const auto& [name, shape] : gpt2_shapes) EXPECT_EQ(find(gpt2, name).shape, shape) << name;
  EXPECT_EQ(find(gpt2, "blocks.0.attn.proj.bias").split, TensorParallelSplit::replicated);
  EXPECT_EQ(find(gpt2, "blocks.0.attn.proj.weight").split, TensorParallelSplit::columns);
  EXPECT_EQ(find(gpt2, "blocks.0.mlp.fc.bias").split, TensorParallelSplit::rows);
  EXPECT_EQ(find(gpt2, "blocks.0.attn.proj.weight").init, InitKind::residual_normal);

  const ModelConfig l = llama_config("l", 1, 24, 8, 4, 20, 37, 9);  // D 3, kvC 12
  const auto llama = l.parameters(3, 4);
  const std::map<std::string, std::vector<int64_t>> llama_shapes = {
      {"embed", {37, 24}},
      {"blocks.0.attn.q.weight", {6, 24}},
      {"blocks.0.attn.k.weight", {3, 24}},
      {"blocks.0.attn.v.weight", {3, 24}},
      {"blocks.0.attn.o.weight", {24, 6}},
      {"blocks.0.mlp.gate.weight", {5, 24}},
      {"blocks.0.mlp.up.weight", {5, 24}},
      {"blocks.0.mlp.down.weight", {24, 5}},
      {"normf.weight", {24}},
      {"lm_head.weight", {37, 24}}};
  for (const auto& [name, shape] : llama_shapes) EXPECT_EQ(find(llama, name).shape, shape) << name;
}

// GPT-2's fused (3C, C) qkv: C = 24, 4 heads of 6, t = 2. Rank 1 holds heads 2 and 3, i.e. rows
// 12..23 of q, 36..47 (24 + 12..23) of k and 60..71 of v, in that order.
TEST(TensorParallelLayout, FusedQkvRankHoldsItsHeadsOfQOfKAndOfV) {
  const ParameterSpec qkv =
      find(gpt2_config("g", 1, 24, 4, 37, 9).parameters(1, 2), "blocks.0.attn.qkv.weight");
  ASSERT_EQ(qkv.shape, (std::vector<int64_t>{36, 24}));
  for (int64_t row = 0; row < 36; ++row) {
    const int64_t expected_row = row < 12 ? 12 + row : row < 24 ? 36 + (row - 12) : 60 + (row - 24);
    for (int64_t col : {0, 7, 23})
      EXPECT_EQ(qkv.full_index(row * 24 + col), expected_row * 24 + col) << "row " << row;
  }
  const ParameterSpec bias =
      find(gpt2_config("g", 1, 24, 4, 37, 9).parameters(1, 2), "blocks.0.attn.qkv.bias");
  EXPECT_EQ(bias.full_index(0), 12);
  EXPECT_EQ(bias.full_index(12), 36);
  EXPECT_EQ(bias.full_index(35), 71);
}

// Llama with GQA: 8 query heads, 4 kv heads of D = 3, t = 4: rank 2 holds query heads 4 and 5
// (q rows 12..17), kv head 2 (k rows 6..8), o columns 12..17 and F units 10..14 (F = 20).
TEST(TensorParallelLayout, LlamaRankHoldsWholeQueryAndKeyValueHeads) {
  const auto llama = llama_config("l", 1, 24, 8, 4, 20, 37, 9).parameters(2, 4);
  const ParameterSpec& q = find(llama, "blocks.0.attn.q.weight");
  const ParameterSpec& k = find(llama, "blocks.0.attn.k.weight");
  const ParameterSpec& o = find(llama, "blocks.0.attn.o.weight");
  const ParameterSpec& down = find(llama, "blocks.0.mlp.down.weight");
  EXPECT_EQ(q.full_index(0), 12 * 24);
  EXPECT_EQ(q.full_index(5 * 24 + 23), 17 * 24 + 23);
  EXPECT_EQ(k.full_index(0), 6 * 24);
  EXPECT_EQ(k.full_index(2 * 24 + 1), 8 * 24 + 1);
  EXPECT_EQ(o.full_index(0), 12);                        // row 0, column 12 of (24, 24)
  EXPECT_EQ(o.full_index(1 * 6 + 5), 24 + 17);           // row 1, column 17
  EXPECT_EQ(down.full_index(23 * 5 + 4), 23 * 20 + 14);  // row 23, column 14 of (24, 20)
  EXPECT_THROW((void)q.full_index(6 * 24), InternalError);
  EXPECT_THROW((void)q.full_index(-1), InternalError);
}

// 2³⁶-element gate weight: the last element of rank 7's part is the last of the whole tensor.
TEST(TensorParallelLayout, IndicesBeyondThirtyTwoBitsAreExact) {
  const ModelConfig c = llama_config("huge", 1, 65536, 64, 8, int64_t{1} << 20, 32000, 8);
  const ParameterSpec gate = find(c.parameters(7, 8), "blocks.0.mlp.gate.weight");
  ASSERT_EQ(gate.shape, (std::vector<int64_t>{131072, 65536}));
  EXPECT_EQ(gate.full_index(gate.numel() - 1), (int64_t{1} << 36) - 1);
  EXPECT_EQ(gate.full_index(0), int64_t{7} * 131072 * 65536);
  const ParameterSpec down = find(c.parameters(3, 8), "blocks.0.mlp.down.weight");
  EXPECT_EQ(down.full_index(down.numel() - 1),
            int64_t{65535} * (int64_t{1} << 20) + 4 * 131072 - 1);
  // 70B over 8 ranks: the split part divides by 8, the embeddings, head and norms are whole.
  const ModelConfig big = model_config_by_name("llama2-70b");
  const int64_t C = 8192, V = 32000, kvC = 1024, F = 28672, L = 80;
  EXPECT_EQ(big.rank_parameter_count(8),
            2 * V * C + C + L * (2 * C + (2 * C * C + 2 * kvC * C + 3 * C * F) / 8));
}

void expect_usage_error(const std::function<void()>& call, const std::string& expected) {
  try {
    call();
    ADD_FAILURE() << "expected UsageError containing: " << expected;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(TensorParallelLayout, BadDegreesAreUsageErrorsNamingTheValue) {
  const ModelConfig g = model_config_by_name("gpt2-tiny");   // 4 heads
  const ModelConfig l = model_config_by_name("llama-tiny");  // 4 heads, 2 kv heads, F 688
  expect_usage_error([&] { g.validate_tensor_parallel(0); }, "at least 1, got 0");
  expect_usage_error([&] { (void)g.parameters(0, -2); }, "at least 1, got -2");
  expect_usage_error([&] { g.validate_tensor_parallel(3); },
                     "tensor-parallel degree 3 must divide heads (4)");
  expect_usage_error([&] { (void)l.rank_parameter_count(4); },
                     "tensor-parallel degree 4 must divide kv_heads (2)");
  const ModelConfig f = llama_config("f", 1, 16, 4, 4, 10, 32, 8);
  expect_usage_error([&] { f.validate_tensor_parallel(4); },
                     "tensor-parallel degree 4 must divide ffn_hidden (10)");
  expect_usage_error([&] { (void)g.parameters(2, 2); }, "tensor-parallel rank 2 outside [0, 2)");
  expect_usage_error([&] { (void)g.parameters(-1, 2); }, "tensor-parallel rank -1 outside [0, 2)");
  ModelConfig bad = g;
  bad.heads = 0;
  expect_usage_error([&] { bad.validate_tensor_parallel(2); }, "heads must be positive, got 0");
  EXPECT_NO_THROW(g.validate_tensor_parallel(4));
  EXPECT_NO_THROW(l.validate_tensor_parallel(2));
}

}  // namespace
}  // namespace vramlab
