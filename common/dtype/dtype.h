/// \file
/// \brief DType: the element types a tensor can hold, their sizes, names and parsing.
#pragma once

#include <cstddef>
#include <string_view>

namespace vramlab {

/// The element type of a tensor.
enum class DType {
  f32,       ///< IEEE-754 binary32
  f16,       ///< IEEE-754 binary16
  bf16,      ///< bfloat16 (8 exponent, 7 mantissa bits)
  fp8_e4m3,  ///< OCP FP8 E4M3 (no infinity, max 448)
  fp8_e5m2,  ///< OCP FP8 E5M2 (IEEE-style specials, max 57344)
  i8,        ///< signed 8-bit integer
  u8,        ///< unsigned 8-bit integer
  i32,       ///< signed 32-bit integer
  i64        ///< signed 64-bit integer
};

/// Every DType, in declaration order.
inline constexpr DType kAllDTypes[] = {DType::f32,      DType::f16,      DType::bf16,
                                       DType::fp8_e4m3, DType::fp8_e5m2, DType::i8,
                                       DType::u8,       DType::i32,      DType::i64};

/// Bytes one element occupies: 1, 2, 4 or 8.
size_t dtype_size_bytes(DType dtype);

/// The canonical name: "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2", "i8", "u8", "i32", "i64".
/// Static storage: the view never dangles.
std::string_view dtype_name(DType dtype);

/// True for the floating-point types (f32, f16, bf16, fp8_e4m3, fp8_e5m2).
bool dtype_is_floating(DType dtype);

/// Parses a canonical name or a common alias (float32, fp32, float16, half, fp16, bfloat16, e4m3,
/// e5m2, int8, uint8, int32, int64; also float8_e4m3fn, float8_e5m2 as PyTorch spells them).
/// Matching is exact (case-sensitive).
/// \throws vramlab::UsageError "unknown dtype 'NAME' (expected one of: f32, ...)" for anything
/// else.
DType parse_dtype(std::string_view name);

}  // namespace vramlab
