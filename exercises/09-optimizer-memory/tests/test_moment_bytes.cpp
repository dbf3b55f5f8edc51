// Tests of exercise 09.4 (the moment bytes of 8-bit AdamW and Adafactor from the tensors'
// shapes). They run against your code (`vramlab check 09.4`) and against the reference (ctest:
// test_ex_09_4_ref).
// Expectations: the estimator (estimate::estimate_memory, what `vramlab estimate --optimizer
// adamw-8bit|adafactor` prints) for every built-in model from 1 M to 70 B parameters, block sizes
// from 1 to 65536 and minimum sizes at the exact element count of a model's tensors; the three
// parts against the runtime's layout counts; tensor lists past 2^40 elements whose bytes are
// exact in double. Every value is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/estimate/estimator.h"
#include "common/model/model_config.h"
#include "common/optim/state_layout.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/09-optimizer-memory/api/moment_bytes.h"

namespace vramlab::lesson09 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::vector<ModelConfig> builtin_models() {
  std::vector<ModelConfig> models;
  for (const std::string_view name : model_config_names())
    models.push_back(model_config_by_name(name));
  return models;
}

std::vector<ModelConfig> random_models(std::mt19937_64& rng, int count) {
  std::uniform_int_distribution<int64_t> layers(1, 6), head_dim(1, 40), heads(1, 12),
      vocab(3, 9000), seq(1, 700), ffn(1, 2000);
  std::vector<ModelConfig> models;
  for (int i = 0; i < count; ++i) {
    const int64_t h = heads(rng), hd = head_dim(rng);
    if (i % 2 == 0) {
      models.push_back(gpt2_config("random-gpt2-" + std::to_string(i), layers(rng), h * hd, h,
                                   vocab(rng), seq(rng)));
    } else {
      const int64_t kv = h % 2 == 0 ? h / 2 : h;
      models.push_back(llama_config("random-llama-" + std::to_string(i), layers(rng), h * hd, h, kv,
                                    ffn(rng), vocab(rng), seq(rng)));
    }
  }
  return models;
}

int64_t estimator_moment_bytes(const ModelConfig& model, estimate::Optimizer optimizer,
                               int64_t block_size, int64_t min_8bit_size,
                               estimate::Precision precision = estimate::Precision::mixed_bf16) {
  estimate::EstimateInputs in;
  in.model = model;
  in.plan.optimizer.name = optimizer;
  in.plan.amp.precision = precision;
  in.plan.optimizer.eight_bit.block_size = block_size;
  in.plan.optimizer.eight_bit.min_8bit_size = min_8bit_size;
  return estimate::estimate_memory(in).unpartitioned.optimizer_moments;
}

std::string case_name(const ModelConfig& model, int64_t block_size, int64_t min_8bit_size) {
  return model.name + " (" + std::to_string(model.parameter_count()) +
         " params) B=" + std::to_string(block_size) +
         " min_8bit_size=" + std::to_string(min_8bit_size);
}

struct EightBitChecks {
  Comparison total{"8-bit AdamW moment bytes (estimate_memory's optimizer moments)", Unit::kBytes};
  Comparison codes{"code bytes (2 per quantized element)", Unit::kBytes};
  Comparison absmax{"absmax bytes (2 f32 per block)", Unit::kBytes};
  Comparison fp32{"f32 moment bytes of the small tensors (8 per element)", Unit::kBytes};

  EightBitChecks() { total.per_unit("parameter"); }

  void add(const ModelConfig& model, int64_t block_size, int64_t min_8bit_size) {
    const std::vector<ParameterSpec> tensors = model.parameters();
    const EightBitMomentBytes got = adamw_8bit_moment_bytes(tensors, block_size, min_8bit_size);
    const std::string where = case_name(model, block_size, min_8bit_size);
    total.add(where,
              static_cast<double>(estimator_moment_bytes(model, estimate::Optimizer::adamw_8bit,
                                                         block_size, min_8bit_size)),
              static_cast<double>(got.total), static_cast<double>(model.parameter_count()));
    plan::EightBitOptions options;
    options.block_size = block_size;
    options.min_8bit_size = min_8bit_size;
    const optim::StateTotals counts =
        optim::state_totals(optim::optimizer_state_layout(model, options));
    codes.add(where, 2.0 * static_cast<double>(counts.eight_bit_quantized),
              static_cast<double>(got.code_bytes));
    absmax.add(where, 8.0 * static_cast<double>(counts.eight_bit_absmax),
               static_cast<double>(got.absmax_bytes));
    fp32.add(where, 8.0 * static_cast<double>(counts.eight_bit_fp32),
             static_cast<double>(got.fp32_bytes));
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(total);
    VRAMLAB_EXPECT_PASSES(codes);
    VRAMLAB_EXPECT_PASSES(absmax);
    VRAMLAB_EXPECT_PASSES(fp32);
  }
};

//! [test]
TEST(MomentBytes, EightBitAdamWEqualsTheEstimatorForEveryModelFrom1MTo70B) {
  EightBitChecks checks;
  for (const ModelConfig& model : builtin_models())
    for (const int64_t block_size : {1, 7, 64, 255, 256, 2048, 4096, 65536})
      for (const int64_t min_8bit_size : {0, 4096, 100000})
        checks.add(model, block_size, min_8bit_size);
  checks.expect_passes();
}
//! [test]

TEST(MomentBytes, EightBitAdamWForRandomModelsAndMinimumSizesAtATensorsExactSize) {
  std::mt19937_64 rng(941);
  std::uniform_int_distribution<int64_t> block(1, 3000);
  EightBitChecks checks;
  for (const ModelConfig& model : random_models(rng, 40)) {
    // A minimum equal to a tensor's size quantizes it; one more keeps it in f32.
    const std::vector<ParameterSpec> tensors = model.parameters();
    const int64_t n = tensors[static_cast<size_t>(rng() % tensors.size())].numel();
    for (const int64_t min_8bit_size : {n, n + 1, model.hidden, model.hidden + 1})
      checks.add(model, block(rng), min_8bit_size);
  }
  checks.expect_passes();
}

TEST(MomentBytes, AdafactorEqualsTheEstimatorInF32AndBf16States) {
  std::mt19937_64 rng(942);
  Comparison bytes("Adafactor second-moment bytes (estimate_memory's optimizer moments)",
                   Unit::kBytes);
  bytes.per_unit("parameter");
  std::vector<ModelConfig> models = builtin_models();
  for (ModelConfig& m : random_models(rng, 30)) models.push_back(std::move(m));
  for (const ModelConfig& model : models)
    for (const auto& [precision, element_bytes] :
         {std::pair{estimate::Precision::fp32, 4}, std::pair{estimate::Precision::mixed_bf16, 4},
          std::pair{estimate::Precision::bf16, 2}}) {
      const std::vector<ParameterSpec> tensors = model.parameters();
      bytes.add(model.name + " (" + std::to_string(model.parameter_count()) + " params) " +
                    std::string(estimate::precision_name(precision)),
                static_cast<double>(estimator_moment_bytes(model, estimate::Optimizer::adafactor,
                                                           256, 4096, precision)),
                static_cast<double>(adafactor_moment_bytes(tensors, element_bytes)),
                static_cast<double>(model.parameter_count()));
    }
  VRAMLAB_EXPECT_PASSES(bytes);
}

ParameterSpec tensor(std::string name, std::vector<int64_t> shape) {
  ParameterSpec p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  return p;
}

TEST(MomentBytes, TensorListsPast2To40ElementsAreExactIn64Bits) {
  // Sizes whose bytes double holds exactly (below 2^53), so the expectation is computed here.
  Comparison eight_bit("8-bit AdamW moment bytes of a huge tensor list", Unit::kBytes);
  Comparison adafactor("Adafactor moment bytes of a huge tensor list", Unit::kBytes);
  const int64_t big = int64_t{1} << 20;
  for (const int64_t block_size : {256, 2048, 1000003}) {
    // 2^40 + 2^20 + 5 elements: one (2^20, 2^20) matrix, a 2^20 vector and a 5-element vector.
    const std::vector<ParameterSpec> tensors = {tensor("huge", {big, big}), tensor("long", {big}),
                                                tensor("norm", {5})};
    const auto blocks = [block_size](double n) {
      return static_cast<double>(static_cast<int64_t>(n) / block_size +
                                 (static_cast<int64_t>(n) % block_size != 0 ? 1 : 0));
    };
    const double huge = static_cast<double>(big) * static_cast<double>(big);
    const double expected = 2.0 * (huge + static_cast<double>(big)) +
                            8.0 * (blocks(huge) + blocks(static_cast<double>(big))) + 8.0 * 5;
    eight_bit.add("B=" + std::to_string(block_size) + ", 2^40 + 2^20 + 5 elements", expected,
                  static_cast<double>(adamw_8bit_moment_bytes(tensors, block_size, 4096).total));
    adafactor.add("B irrelevant, 2^40 + 2^20 + 5 elements",
                  4.0 * (2.0 * static_cast<double>(big) + static_cast<double>(big) + 5),
                  static_cast<double>(adafactor_moment_bytes(tensors, 4)));
  }
  VRAMLAB_EXPECT_PASSES(eight_bit);
  VRAMLAB_EXPECT_PASSES(adafactor);
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

TEST(MomentBytes, RejectsBadInputAndCountsPast64BitsNamingTheValue) {
  const std::vector<ParameterSpec> ok = {tensor("w", {64, 64})};
  expect_usage_error_naming("adamw_8bit_moment_bytes(B = 0)", "0",
                            [&] { adamw_8bit_moment_bytes(ok, 0, 4096); });
  expect_usage_error_naming("adamw_8bit_moment_bytes(min_8bit_size = -7)", "-7",
                            [&] { adamw_8bit_moment_bytes(ok, 256, -7); });
  const std::vector<ParameterSpec> negative = {tensor("w", {64, -3})};
  expect_usage_error_naming("adamw_8bit_moment_bytes(shape {64, -3})", "-3",
                            [&] { adamw_8bit_moment_bytes(negative, 256, 4096); });
  expect_usage_error_naming("adafactor_moment_bytes(state bytes 0)", "0",
                            [&] { adafactor_moment_bytes(ok, 0); });
  const std::vector<ParameterSpec> cube = {tensor("conv", {3, 3, 3})};
  expect_usage_error_naming("adafactor_moment_bytes(a 3-D tensor)", "3",
                            [&] { adafactor_moment_bytes(cube, 4); });
  // 2^62 elements fit in an int64_t; their two code bytes each do not (any message will do).
  const std::vector<ParameterSpec> too_big = {tensor("w", {int64_t{1} << 31, int64_t{1} << 31})};
  expect_usage_error_naming("adamw_8bit_moment_bytes(2^62 elements)", "",
                            [&] { adamw_8bit_moment_bytes(too_big, 256, 4096); });
}

}  // namespace
}  // namespace vramlab::lesson09
