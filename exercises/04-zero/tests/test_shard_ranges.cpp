// Tests of exercise 04.1 (a unit's shards with FSDP's padding, and a tensor's owners). They run
// against your code (`vramlab check 04.1`) and against the reference (ctest: test_ex_04_1_ref).
// Expectations: the runtime's dist::shard_range and dist::ShardLayout::owners
// (common/dist/shard_layout.h), for every unit and every tensor of GPT-2 124M, Llama 2 7B and
// Llama 2 70B (by block, and each whole model as one unit, past 2³¹ elements), for N in
// {1, 2, 3, 4, 7, 8, 64, 1000}, random odd units, and tensors ending exactly at a shard boundary.
// Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dist/shard_layout.h"
#include "common/model/model_config.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/04-zero/api/shard_ranges.h"

namespace vramlab::lesson04 {
namespace {

using workbook::Comparison;

constexpr int64_t kWorldSizes[] = {1, 2, 3, 4, 7, 8, 64, 1000};

const std::vector<ModelConfig>& real_models() {
  static const std::vector<ModelConfig> models = {model_config_by_name("gpt2-124m"),
                                                  model_config_by_name("llama2-7b"),
                                                  model_config_by_name("llama2-70b")};
  return models;
}

// The model's tensors as one unit (FSDP without a wrap policy: one FlatParameter).
std::vector<ParameterSpec> as_one_unit(std::vector<ParameterSpec> specs) {
  for (ParameterSpec& spec : specs) spec.layer = -1;
  return specs;
}

ParameterSpec vector_spec(int64_t numel) {
  ParameterSpec spec;
  spec.name = "t";
  spec.shape = {numel};
  return spec;
}

std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text + "}";
}

// Every shard_range field of rank r, against the runtime's.
struct RangeChecks {
  Comparison first{"first element of rank r's shard (dist::shard_range)"};
  Comparison count{"elements of each shard, padding included (dist::shard_range)"};
  Comparison padding{"padding elements of rank r's shard (dist::shard_range)"};

  void add(const std::string& unit, int64_t n, int64_t world_size, int64_t rank) {
    const dist::ShardRange expected = dist::shard_range(n, world_size, rank);
    const dist::ShardRange got = shard_range(n, world_size, rank);
    const std::string where = unit + " (n=" + std::to_string(n) +
                              "), N=" + std::to_string(world_size) + ", r=" + std::to_string(rank);
    first.add(where, static_cast<double>(expected.first), static_cast<double>(got.first));
    count.add(where, static_cast<double>(expected.count), static_cast<double>(got.count));
    padding.add(where, static_cast<double>(expected.padding), static_cast<double>(got.padding));
  }
  void add_all_ranks(const std::string& unit, int64_t n, int64_t world_size) {
    if (world_size <= 64) {
      for (int64_t r = 0; r < world_size; ++r) add(unit, n, world_size, r);
      return;
    }
    for (const int64_t r : {int64_t{0}, int64_t{1}, world_size / 2, world_size - 2, world_size - 1})
      add(unit, n, world_size, r);
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(first);
    VRAMLAB_EXPECT_PASSES(count);
    VRAMLAB_EXPECT_PASSES(padding);
  }
};

// Owner lists against the runtime's, the first few mismatches spelled out.
struct OwnerChecks {
  int64_t cases = 0;
  int64_t mismatches = 0;
  std::string first_failures;

  // Every tensor of \p specs (in a ShardLayout over N ranks) against layout.owners.
  void add_layout(const std::string& what, const std::vector<ParameterSpec>& specs,
                  int64_t world_size) {
    const dist::ShardLayout layout(specs, world_size);
    for (size_t i = 0; i < specs.size(); ++i) {
      const auto t = static_cast<int64_t>(i);
      const dist::ShardUnit& unit = layout.units()[static_cast<size_t>(layout.unit_of_tensor(t))];
      const int64_t offset = layout.tensor_offsets()[i] - unit.offset;
      const std::vector<int64_t> expected = layout.owners(t);
      const std::vector<int64_t> got =
          shard_owners(unit.numel, world_size, offset, specs[i].numel());
      ++cases;
      if (got == expected) continue;
      if (++mismatches <= 3)
        first_failures += "\n  " + what + ", N=" + std::to_string(world_size) + ", tensor '" +
                          specs[i].name + "' [" + std::to_string(offset) + ", " +
                          std::to_string(offset + specs[i].numel()) + ") of unit '" + unit.name +
                          "' (n=" + std::to_string(unit.numel) + ", shard " +
                          std::to_string(unit.shard_numel) + "): expected ranks " +
                          ranks_text(expected) + ", got " + ranks_text(got);
    }
  }
  void expect_passes() const {
    EXPECT_GT(cases, 0);
    EXPECT_EQ(mismatches, 0) << "shard_owners: " << mismatches << " of " << cases
                             << " tensors have other owners than dist::ShardLayout::owners; first:"
                             << first_failures;
  }
};

//! [test]
TEST(ShardRanges, EveryUnitOfGpt2Llama7BAnd70BEqualsTheRuntimesShards) {
  RangeChecks checks;
  for (const ModelConfig& model : real_models()) {
    const dist::ShardLayout units(model.parameters(), 1);
    for (const int64_t world_size : kWorldSizes) {
      checks.add_all_ranks(model.name + " embedding", units.units().front().numel, world_size);
      checks.add_all_ranks(model.name + " blocks.0", units.units()[1].numel, world_size);
      checks.add_all_ranks(model.name + " head", units.units().back().numel, world_size);
      checks.add_all_ranks(model.name + " as one unit", model.parameter_count(), world_size);
    }
  }
  checks.expect_passes();
}
//! [test]

TEST(ShardRanges, SmallOddAndHugeUnitsHaveTheRuntimesShardsAndPadding) {
  std::mt19937_64 rng(401);
  std::uniform_int_distribution<int64_t> small(0, 5000), world(1, 97);
  RangeChecks checks;
  for (const int64_t world_size : kWorldSizes)
    for (const int64_t n :
         {int64_t{0}, int64_t{1}, world_size - 1, world_size, world_size + 1, 2 * world_size - 1,
          int64_t{1} << 31, (int64_t{1} << 62) - 1, int64_t{1} << 62})
      if (n >= 0) checks.add_all_ranks("edge unit", n, world_size);
  for (int i = 0; i < 300; ++i) checks.add_all_ranks("random unit", small(rng), world(rng));
  checks.expect_passes();
}

TEST(ShardRanges, OwnersOfEveryTensorOfRealModelsByBlockAndAsOneUnit) {
  OwnerChecks checks;
  for (const ModelConfig& model : real_models()) {
    const std::vector<ParameterSpec> specs = model.parameters();
    const std::vector<ParameterSpec> one_unit = as_one_unit(specs);
    for (const int64_t world_size : kWorldSizes) {
      checks.add_layout(model.name + " by block", specs, world_size);
      checks.add_layout(model.name + " as one unit", one_unit, world_size);
    }
  }
  checks.expect_passes();
}

TEST(ShardRanges, TensorsEndingExactlyAtAShardBoundaryBelongOnlyToTheirShards) {
  // Units of three tensors [0, a), [a, b), [b, n) whose a and b sit on, just before and just
  // after shard boundaries, the last tensor ending at the unit's end (and so in the padding's
  // shard, or exactly at the last boundary when N divides n).
  std::mt19937_64 rng(402);
  std::uniform_int_distribution<int64_t> world(1, 70), shard(1, 900);
  OwnerChecks checks;
  for (int i = 0; i < 400; ++i) {
    const int64_t world_size = world(rng), count = shard(rng);
    const int64_t n =
        count * world_size -
        static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min<int64_t>(count, world_size)));
    const int64_t boundary =
        count * static_cast<int64_t>(rng() % static_cast<uint64_t>(world_size));
    const int64_t a = std::clamp<int64_t>(boundary + static_cast<int64_t>(rng() % 3) - 1, 0, n);
    const int64_t b = std::clamp<int64_t>(a + count * static_cast<int64_t>(rng() % 3), a, n);
    checks.add_layout(
        "n=" + std::to_string(n) + " cut at " + std::to_string(a) + " and " + std::to_string(b),
        {vector_spec(a), vector_spec(b - a), vector_spec(n - b)}, world_size);
  }
  checks.expect_passes();
}

TEST(ShardRanges, OwnersOfRandomTensorListsOfOddSizes) {
  std::mt19937_64 rng(403);
  std::uniform_int_distribution<int64_t> world(1, 130), tensors(1, 9), size(0, 3000);
  OwnerChecks checks;
  for (int i = 0; i < 300; ++i) {
    std::vector<ParameterSpec> specs;
    const int64_t count = tensors(rng);
    for (int64_t t = 0; t < count; ++t) specs.push_back(vector_spec(size(rng)));
    checks.add_layout("random list " + std::to_string(i), specs, world(rng));
  }
  checks.expect_passes();
}

template <typename F>
void expect_usage_error_naming(const std::string& call, const std::string& value, F f) {
  try {
    f();
    ADD_FAILURE() << call << " accepted " << value;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos)
        << call << ": the message should name " << value << ": " << e.what();
  }
}

TEST(ShardRanges, RejectsBadInputNamingTheValue) {
  expect_usage_error_naming("shard_range(n = -5)", "-5", [] { (void)shard_range(-5, 4, 0); });
  expect_usage_error_naming("shard_range(N = 0)", "0", [] { (void)shard_range(10, 0, 0); });
  expect_usage_error_naming("shard_range(r = 4 of N = 4)", "4",
                            [] { (void)shard_range(10, 4, 4); });
  expect_usage_error_naming("shard_range(r = -1)", "-1", [] { (void)shard_range(10, 4, -1); });
  expect_usage_error_naming("shard_owners(N = -3)", "-3", [] { (void)shard_owners(10, -3, 0, 1); });
  expect_usage_error_naming("shard_owners(offset = -2)", "-2",
                            [] { (void)shard_owners(10, 4, -2, 1); });
  expect_usage_error_naming("shard_owners(numel = -7)", "-7",
                            [] { (void)shard_owners(10, 4, 0, -7); });
  expect_usage_error_naming("shard_owners(a tensor ending at 11 of a unit of 10)", "10",
                            [] { (void)shard_owners(10, 4, 4, 7); });
}

}  // namespace
}  // namespace vramlab::lesson04
