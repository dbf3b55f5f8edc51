/// \file
/// \brief Bulk conversions between f32 arrays and bf16/f16 arrays on the CPU.
///
/// Same results, bit for bit, as calling the scalar conversions of convert.h on every element (they
/// are those loops); the f32 -> bf16/f16 conversions are branch-free, so their loops vectorize.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vramlab {

/// Converts n floats to bf16 bits, round to nearest even (as f32_to_bf16_bits).
/// src (n) f32, dst (n) bf16 bits, written; n may be 0. src and dst must not overlap.
void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n);

/// Converts n floats to f16 bits, round to nearest even (as f32_to_f16_bits).
/// src (n) f32, dst (n) f16 bits, written.
void convert_f32_to_f16(const float* src, uint16_t* dst, size_t n);

/// Widens n bf16 bit patterns to floats, exactly (as bf16_bits_to_f32).
/// src (n) bf16 bits, dst (n) f32, written.
void convert_bf16_to_f32(const uint16_t* src, float* dst, size_t n);

/// Widens n f16 bit patterns to floats, exactly (as f16_bits_to_f32).
/// src (n) f16 bits, dst (n) f32, written.
void convert_f16_to_f32(const uint16_t* src, float* dst, size_t n);

}  // namespace vramlab
