/// \file
/// \brief Reductions over a whole buffer: sum, sum of squares and L2 norm (e.g. the global gradient
/// norm for clipping), accumulated in double.
///
/// The fast path splits the buffer into fixed 4096-element chunks (independent of the thread
/// count), sums each chunk in double, and adds the chunk sums in order: bitwise reproducible for
/// any number of threads. The reference uses Kahan-compensated double summation.
#pragma once

#include <cstdint>

namespace vramlab::kernels::cpu {

/// Σ x over x (n), in double. \throws vramlab::UsageError when n < 0.
double sum(const float* x, int64_t n);
/// Σ x² over x (n), in double. \throws vramlab::UsageError when n < 0.
double sum_of_squares(const float* x, int64_t n);
/// √(Σ x²) over x (n). \throws vramlab::UsageError when n < 0.
double l2_norm(const float* x, int64_t n);

/// sum on storage A (kernels/cpu/storage.h): the same chunks, every element widened exactly.
/// \tparam A float, bf16_t or f16_t. \throws vramlab::UsageError when n < 0.
template <typename A>
double sum(const A* x, int64_t n);
/// Reference of sum (Kahan summation in double). \tparam Real float or double.
template <typename Real>
double sum_reference(const Real* x, int64_t n);
/// Reference of sum_of_squares (Kahan summation in double). \tparam Real float or double.
template <typename Real>
double sum_of_squares_reference(const Real* x, int64_t n);
/// Reference of l2_norm. \tparam Real float or double.
template <typename Real>
double l2_norm_reference(const Real* x, int64_t n);

}  // namespace vramlab::kernels::cpu
