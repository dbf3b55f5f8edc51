/// \file
/// \brief Host entry points of kernels with deliberately planted bugs (planted_bugs.cu): the
/// emulator's tests prove each bug is caught (wrong result under a schedule, or a clear error).
#pragma once

#include <cstddef>

#include "kernels/simt/simt.h"

namespace vramlab::cuda_examples {

/// Shared-memory tree sum with the __syncthreads inside the loop missing (a race).
/// \param x (n) input. \param block_sums (ceil(n / block_threads)) output. \param n elements.
/// \param block_threads a power of two <= 256.
void planted_sum_missing_barrier(const int* x, int* block_sums, std::size_t n,
                                 unsigned block_threads);

/// y[i] = x[i - 1] staged through shared memory, without the barrier between write and read.
/// In index order every thread's left neighbour has already written, which hides the race.
/// \param x (n) input. \param y (n) output (y[0] = 0). \param n threads, one block, <= 1024.
void planted_shift_missing_barrier(const int* x, int* y, unsigned n);

/// Writes one element past a static VRAMLAB_SHARED array of 64 ints (the last thread).
/// \param out (64) output.
void planted_static_shared_overflow(int* out);

/// Writes one element past the dynamic shared memory (block_threads ints).
/// \param out (block_threads) output. \param block_threads threads of the one block.
void planted_dynamic_shared_overflow(int* out, unsigned block_threads);

/// Threads below 16 call an extra __syncthreads inside an if: a barrier in divergent code.
/// \param out (64) output.
void planted_barrier_in_divergent_branch(int* out);

/// Lanes below 16 wait in __syncthreads while lanes 16..31 wait in __syncwarp: a true deadlock.
/// \param out (32) output.
void planted_warp_deadlock(int* out);

/// A NOT IMPLEMENTED device stub, the way exercises mark device code left to the learner.
/// \param y (n) output. \param n elements.
void planted_not_implemented(float* y, std::size_t n);

/// Lane 5 calls __shfl_sync with a mask that does not contain it.
/// \param out (32) output.
void planted_lane_outside_mask(int* out);

}  // namespace vramlab::cuda_examples
