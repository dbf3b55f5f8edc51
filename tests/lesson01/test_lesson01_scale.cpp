// Lesson 01 at scale: the tutorials' large models, one step each on meta, hold 4 + 4 + 8 bytes
// per parameter of fp32 AdamW state and activations linear in B; the estimator's rows are each
// plan's bytes per parameter (a row computed under the wrong plan fails); the claims file reads
// every claim out of a run with these rows.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/workbook/claims.h"
#include "lessons/01-memory-breakdown/claims_file.h"
#include "lessons/01-memory-breakdown/measure_scale.h"

namespace vramlab::lesson01 {
namespace {

const Scale& scale() {
  static const Scale s = measure_scale();
  return s;
}

TEST(Lesson01Scale, EveryStepHoldsFp32AdamWStatesAndActivationsLinearInTheBatch) {
  ASSERT_EQ(scale().steps.size(), 5u);
  std::map<std::string, int64_t> activations;
  for (const ScaleStep& s : scale().steps) {
    SCOPED_TRACE(s.model + " B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq));
    EXPECT_GT(s.parameter_count, int64_t{1'000'000'000});
    // The allocator's blocks: the requested bytes, plus at most 1 MiB left unsplit per large
    // block (PyTorch's should_split); AdamW's m and v are two blocks.
    const int64_t mib = int64_t{1} << 20;
    EXPECT_GE(s.parameters, 4 * s.parameter_count);
    EXPECT_LE(s.parameters, 4 * s.parameter_count + mib);
    EXPECT_GE(s.gradients, 4 * s.parameter_count);
    EXPECT_LE(s.gradients, 4 * s.parameter_count + mib);
    EXPECT_GE(s.optimizer_states, 8 * s.parameter_count);
    EXPECT_LE(s.optimizer_states, 8 * s.parameter_count + 2 * mib);
    EXPECT_GT(s.activations, 0);
    EXPECT_GE(s.peak, s.parameters + s.gradients + s.optimizer_states);
    activations[s.model + "/" + std::to_string(s.batch) + "/" + std::to_string(s.seq)] =
        s.activations;
  }
  // Eight sequences save eight times one's (to within the allocator's 512-B rounding per
  // tensor); the same tokens as one long sequence save more (the T x T probabilities).
  const double b1 = static_cast<double>(activations.at("gpt-1.3b/1/2048"));
  const double b8 = static_cast<double>(activations.at("gpt-1.3b/8/2048"));
  EXPECT_NEAR(b8 / b1, 8.0, 1e-3);
  EXPECT_GT(activations.at("llama2-7b/1/4096"), activations.at("llama2-7b/4/1024"));
}

TEST(Lesson01Scale, EachEstimatorRowHoldsItsPlansBytesPerParameter) {
  std::map<std::string, const ScaleFormula*> by_plan;
  for (const ScaleFormula& f : scale().formulas)
    by_plan[f.model + "|" + std::to_string(f.batch) + "|" + std::to_string(f.parameter_count) +
            "|" + f.precision + "|" + f.optimizer + "|" + f.offload] = &f;
  const auto row = [&](const std::string& key) -> const ScaleFormula& {
    const auto it = by_plan.find(key);
    if (it == by_plan.end()) throw std::runtime_error("no row " + key);
    return *it->second;
  };
  const double seven = 7e9;
  const auto bpp = [](const ScaleFormula& f) {
    return static_cast<double>(f.device) / static_cast<double>(f.parameter_count);
  };
  EXPECT_DOUBLE_EQ(bpp(row("|0|7000000000|fp32|adamw|none")), 16.0);
  EXPECT_DOUBLE_EQ(bpp(row("|0|7000000000|mixed-fp16|adamw|none")), 16.0);
  EXPECT_DOUBLE_EQ(row("|0|7000000000|mixed-fp16|adamw|none").parameters, 2 * seven);
  EXPECT_DOUBLE_EQ(bpp(row("|0|7000000000|bf16|adamw|none")), 8.0);
  EXPECT_LT(bpp(row("|0|7000000000|bf16|adamw-8bit|none")), 6.1);
  // ZeRO-Offload at ZeRO-2: the gradients' shards go to the host too; the GPU keeps 2 B/param.
  EXPECT_DOUBLE_EQ(bpp(row("|0|7000000000|mixed-bf16|adamw|optimizer")), 2.0);
  EXPECT_DOUBLE_EQ(row("|0|7000000000|mixed-bf16|adamw|optimizer").host, 16 * seven);
  // ZeRO-Infinity at ZeRO-3: the parameters' shards too; the GPU keeps no model state between
  // uses (a gathered unit is working memory), the host the same 16 B/param.
  EXPECT_DOUBLE_EQ(bpp(row("|0|7000000000|mixed-bf16|adamw|both")), 0.0);
  EXPECT_DOUBLE_EQ(row("|0|7000000000|mixed-bf16|adamw|both").host, 16 * seven);
  EXPECT_DOUBLE_EQ(bpp(row("|0|1000000000|fp32|adamw|none")), 16.0);
  const std::string psi = std::to_string(gpt_1_3b().parameter_count());
  const ScaleFormula& one = row("gpt-1.3b|1|" + psi + "|mixed-bf16|adamw|none");
  const ScaleFormula& nine = row("gpt-1.3b|9|" + psi + "|mixed-bf16|adamw|none");
  EXPECT_EQ(one.parameters, 2 * one.parameter_count);
  EXPECT_GT(one.activations, 0);
  EXPECT_EQ(nine.activations, 9 * one.activations);
}

TEST(Lesson01Scale, TheClaimsFileReadsItsScaleClaimsFromTheseRows) {
  // The step's own numbers, as the lesson's JSON has them: enough for claims 1, 8 and 13.
  nlohmann::json run = {
      {"measured_bytes",
       {{"parameters", 400}, {"gradients", 400}, {"optimizer_states", 800}, {"activations", 2000}}},
      {"parameter_count", 100},
      {"model", {{"name", "tiny"}}},
      {"batch", 8},
      {"seq", 128},
      {"scale", scale()}};
  std::vector<int> ids;
  for (const workbook::ClaimResult& c :
       workbook::evaluate_claims(files::claims_json(), "claims.json", run))
    ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  // Without the scale rows only the step's own claims remain.
  run.erase("scale");
  ids.clear();
  for (const workbook::ClaimResult& c :
       workbook::evaluate_claims(files::claims_json(), "claims.json", run))
    ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<int>{1}));
}

}  // namespace
}  // namespace vramlab::lesson01
