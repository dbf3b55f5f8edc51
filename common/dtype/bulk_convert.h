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
/// \param src (n) f32 values. \param dst (n) bf16 bit patterns, written. \param n element count
/// (0 is fine). src and dst must not overlap.
void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n);

/// Converts n floats to f16 bits, round to nearest even (as f32_to_f16_bits).
/// \param src (n) f32 values. \param dst (n) f16 bit patterns, written. \param n element count.
void convert_f32_to_f16(const float* src, uint16_t* dst, size_t n);

/// Widens n bf16 bit patterns to floats, exactly (as bf16_bits_to_f32).
/// \param src (n) bf16 bit patterns. \param dst (n) f32 values, written. \param n element count.
void convert_bf16_to_f32(const uint16_t* src, float* dst, size_t n);

/// Widens n f16 bit patterns to floats, exactly (as f16_bits_to_f32).
/// \param src (n) f16 bit patterns. \param dst (n) f32 values, written. \param n element count.
void convert_f16_to_f32(const uint16_t* src, float* dst, size_t n);

}  // namespace vramlab
