// DType: sizes, canonical names, parse_dtype's aliases and its error for unknown names.
//   build/tests/bin/test_dtype --gtest_filter='DType*'
#include <gtest/gtest.h>

#include <string>

#include "common/dtype/dtype.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

TEST(DType, SizesInBytes) {
  EXPECT_EQ(dtype_size_bytes(DType::f32), 4u);
  EXPECT_EQ(dtype_size_bytes(DType::f16), 2u);
  EXPECT_EQ(dtype_size_bytes(DType::bf16), 2u);
  EXPECT_EQ(dtype_size_bytes(DType::fp8_e4m3), 1u);
  EXPECT_EQ(dtype_size_bytes(DType::fp8_e5m2), 1u);
  EXPECT_EQ(dtype_size_bytes(DType::i8), 1u);
  EXPECT_EQ(dtype_size_bytes(DType::u8), 1u);
  EXPECT_EQ(dtype_size_bytes(DType::i32), 4u);
  EXPECT_EQ(dtype_size_bytes(DType::i64), 8u);
}

TEST(DType, CanonicalNamesParseBackToTheSameDType) {
  const char* names[] = {"f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i8", "u8", "i32", "i64"};
  size_t i = 0;
  for (DType dtype : kAllDTypes) {
    EXPECT_EQ(dtype_name(dtype), names[i]);
    EXPECT_EQ(parse_dtype(names[i]), dtype) << names[i];
    ++i;
  }
  EXPECT_EQ(i, 9u);
}

TEST(DType, CommonAliasesAreAccepted) {
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("e4m3"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype("e5m2"), DType::fp8_e5m2);
  EXPECT_EQ(parse_dtype("int8"), DType::i8);
  EXPECT_EQ(parse_dtype("uint8"), DType::u8);
  EXPECT_EQ(parse_dtype("int32"), DType::i32);
  EXPECT_EQ(parse_dtype("int64"), DType::i64);
}

TEST(DType, FloatingAndIntegerKinds) {
  EXPECT_TRUE(dtype_is_floating(DType::bf16));
  EXPECT_TRUE(dtype_is_floating(DType::fp8_e5m2));
  EXPECT_FALSE(dtype_is_floating(DType::u8));
  EXPECT_FALSE(dtype_is_floating(DType::i64));
}

TEST(DType, UnknownNameThrowsUsageErrorNamingIt) {
  for (const char* bad : {"nope", "", "F32", "fp8"}) {
    try {
      parse_dtype(bad);
      ADD_FAILURE() << "parse_dtype(\"" << bad << "\") did not throw";
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("expected one of: f32, f16, bf16"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace vramlab
