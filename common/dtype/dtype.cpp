// The DType table: sizes, names and the aliases parse_dtype accepts.
#include "common/dtype/dtype.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab {

namespace {

struct DTypeAlias {
  std::string_view name;
  DType dtype;
};

// Canonical names first (dtype_name reads them), then aliases.
constexpr DTypeAlias kNames[] = {
    {"f32", DType::f32},
    {"f16", DType::f16},
    {"bf16", DType::bf16},
    {"fp8_e4m3", DType::fp8_e4m3},
    {"fp8_e5m2", DType::fp8_e5m2},
    {"i8", DType::i8},
    {"u8", DType::u8},
    {"i32", DType::i32},
    {"i64", DType::i64},
    {"float32", DType::f32},
    {"fp32", DType::f32},
    {"float", DType::f32},
    {"float16", DType::f16},
    {"fp16", DType::f16},
    {"half", DType::f16},
    {"bfloat16", DType::bf16},
    {"e4m3", DType::fp8_e4m3},
    {"float8_e4m3fn", DType::fp8_e4m3},
    {"e5m2", DType::fp8_e5m2},
    {"float8_e5m2", DType::fp8_e5m2},
    {"int8", DType::i8},
    {"uint8", DType::u8},
    {"int32", DType::i32},
    {"int64", DType::i64},
};

}  // namespace

size_t dtype_size_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
    case DType::i8:
    case DType::u8:
      return 1;
    case DType::i64:
      return 8;
  }
  throw std::logic_error("dtype_size_bytes: invalid DType value " +
                         std::to_string(static_cast<int>(dtype)));
}

std::string_view dtype_name(DType dtype) {
  for (const DTypeAlias& entry : kNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  throw std::logic_error("dtype_name: invalid DType value " +
                         std::to_string(static_cast<int>(dtype)));
}

bool dtype_is_floating(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
      return true;
    case DType::i8:
    case DType::u8:
    case DType::i32:
    case DType::i64:
      return false;
  }
  throw std::logic_error("dtype_is_floating: invalid DType value " +
                         std::to_string(static_cast<int>(dtype)));
}

DType parse_dtype(std::string_view name) {
  for (const DTypeAlias& entry : kNames) {
    if (entry.name == name) return entry.dtype;
  }
  std::string expected;
  for (DType dtype : kAllDTypes) {
    expected += expected.empty() ? "" : ", ";
    expected += dtype_name(dtype);
  }
  throw UsageError("unknown dtype '" + std::string(name) + "' (expected one of: " + expected + ")");
}

}  // namespace vramlab
