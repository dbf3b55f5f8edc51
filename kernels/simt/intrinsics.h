/// \file
/// \brief The CUDA device intrinsics emulated kernels commonly use: bit counting, bit casts,
/// fast-math spellings, `__ldg`, and CUDA's global min/max overloads.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

/// \return the number of set bits of x.
inline int __popc(unsigned int x) {
  return std::popcount(x);
}
/// \return the number of set bits of x.
inline int __popcll(unsigned long long x) {
  return std::popcount(x);
}
/// \return the number of leading zero bits of x (32 for 0).
inline int __clz(int x) {
  return std::countl_zero(static_cast<unsigned int>(x));
}
/// \return 1 + the index of the least significant set bit of x, or 0 when x is 0.
inline int __ffs(int x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned int>(x)) + 1;
}
/// \return the bits of x reversed.
inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
/// Reinterprets, no conversion (std::bit_cast).
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
/// Reinterprets, no conversion (std::bit_cast).
inline unsigned int __float_as_uint(float x) {
  return std::bit_cast<unsigned int>(x);
}
/// Reinterprets, no conversion (std::bit_cast).
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
/// Reinterprets, no conversion (std::bit_cast).
inline float __uint_as_float(unsigned int x) {
  return std::bit_cast<float>(x);
}
/// \return 1 / sqrt(x).
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
/// \return e^x (the GPU's fast approximation; exact here).
inline float __expf(float x) {
  return std::exp(x);
}
/// \return ln x (the GPU's fast approximation; exact here).
inline float __logf(float x) {
  return std::log(x);
}
/// \return x / y (the GPU's fast approximation; exact here).
inline float __fdividef(float x, float y) {
  return x / y;
}
/// \return x clamped to [0, 1] (NaN gives 0).
inline float __saturatef(float x) {
  return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f;
}
/// Read-only cached load of *address (a plain load under emulation).
template <class T>
T __ldg(const T* address) {
  return *address;
}
/// \return the smaller of a and b.
inline int min(int a, int b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b.
inline unsigned int min(unsigned int a, unsigned int b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b.
inline long long min(long long a, long long b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b.
inline long min(long a, long b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b.
inline unsigned long min(unsigned long a, unsigned long b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b.
inline unsigned long long min(unsigned long long a, unsigned long long b) {
  return b < a ? b : a;
}
/// \return the smaller of a and b (fminf semantics).
inline float min(float a, float b) {
  return std::fmin(a, b);
}
/// \return the smaller of a and b (fmin semantics).
inline double min(double a, double b) {
  return std::fmin(a, b);
}
/// \return the larger of a and b.
inline int max(int a, int b) {
  return b > a ? b : a;
}
/// \return the larger of a and b.
inline unsigned int max(unsigned int a, unsigned int b) {
  return b > a ? b : a;
}
/// \return the larger of a and b.
inline long long max(long long a, long long b) {
  return b > a ? b : a;
}
/// \return the larger of a and b.
inline long max(long a, long b) {
  return b > a ? b : a;
}
/// \return the larger of a and b.
inline unsigned long max(unsigned long a, unsigned long b) {
  return b > a ? b : a;
}
/// \return the larger of a and b.
inline unsigned long long max(unsigned long long a, unsigned long long b) {
  return b > a ? b : a;
}
/// \return the larger of a and b (fmaxf semantics).
inline float max(float a, float b) {
  return std::fmax(a, b);
}
/// \return the larger of a and b (fmax semantics).
inline double max(double a, double b) {
  return std::fmax(a, b);
}
