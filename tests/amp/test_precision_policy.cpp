// The storage types of every precision, and their parsing.
#include "common/amp/precision_policy.h"

#include <gtest/gtest.h>

#include "common/platform/errors.h"

namespace vramlab::amp {
namespace {

TEST(PrecisionPolicy, EachModeStoresWhatTheTableSays) {
  const PrecisionPolicy fp32 = precision_policy(Precision::fp32);
  EXPECT_EQ(fp32.parameters, DType::f32);
  EXPECT_EQ(fp32.gradients, DType::f32);
  EXPECT_EQ(fp32.activations, DType::f32);
  EXPECT_EQ(fp32.optimizer_states, DType::f32);
  EXPECT_FALSE(fp32.master_weights);

  const PrecisionPolicy bf16 = precision_policy(Precision::bf16);
  EXPECT_EQ(bf16.parameters, DType::bf16);
  EXPECT_EQ(bf16.gradients, DType::bf16);
  EXPECT_EQ(bf16.optimizer_states, DType::bf16) << "model.to(bfloat16): Adam's states follow";
  EXPECT_FALSE(bf16.master_weights);

  for (const auto& [mode, half] : {std::pair{Precision::mixed_bf16, DType::bf16},
                                  std::pair{Precision::mixed_fp16, DType::f16}}) {
    const PrecisionPolicy p = precision_policy(mode);
    EXPECT_EQ(p.parameters, half);
    EXPECT_EQ(p.activations, half);
    EXPECT_EQ(p.gradients, half);
    EXPECT_EQ(p.optimizer_states, DType::f32);
    EXPECT_TRUE(p.master_weights);
    EXPECT_EQ(precision_policy(mode, true).gradients, DType::f32);
  }
}

TEST(PrecisionPolicy, Fp32GradientsNeedMixedPrecision) {
  EXPECT_THROW((void)precision_policy(Precision::fp32, true), UsageError);
  EXPECT_THROW((void)precision_policy(Precision::bf16, true), UsageError);
}

TEST(PrecisionPolicy, TheOpTableKeepsReductionsInFp32) {
  bool softmax = false, norms = false, loss = false;
  for (const OpPrecision& row : op_precision_table()) {
    if (row.op == "softmax") softmax = row.compute == "fp32";
    if (row.op.starts_with("layernorm")) norms = row.compute == "fp32";
    if (row.op == "cross-entropy") loss = row.compute == "fp32";
  }
  EXPECT_TRUE(softmax && norms && loss);
}

}  // namespace
}  // namespace vramlab::amp
