/// \file
/// \brief A kernel with a planted race, for the op harness's own test: it must be caught.
#pragma once

#include <cstdint>

namespace vramlab::ops_test {

/// dbias[c] += Σ_row dout[row, c] with blocks of (32, 8) threads whose 8 row partials are added
/// WITHOUT the __syncthreads that must separate writing them from reading them (emulated only).
/// \param dbias (C) \param dout (N, C) \param N rows \param C columns (> 0).
void column_sums_missing_barrier(float* dbias, const float* dout, int64_t N, int64_t C);

}  // namespace vramlab::ops_test
