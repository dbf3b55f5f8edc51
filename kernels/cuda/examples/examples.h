/// \file
/// \brief Host entry points of the SIMT emulator's example kernels (kernels/cuda/examples/*.cu).
///
/// Each function launches one kernel on device pointers and returns when it is done (emulation)
/// or queued (GPU). They exist so the emulator's tests and benchmarks exercise every CUDA feature
/// the emulator provides, from source that nvcc also compiles.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/simt/simt.h"

namespace vramlab::cuda_examples {

/// Per-block sums with a shared-memory tree (any blockDim, not only powers of two).
/// \param x (n) input. \param block_sums (ceil(n / block_threads)) output. \param n elements.
/// \param block_threads threads per block.
void block_sum_shared(const int* x, int* block_sums, std::size_t n, unsigned block_threads);

/// Per-block sums with warp shuffles, then a shuffle over the warps' sums (any blockDim, also <
/// 32). \param x (n) input. \param block_sums (ceil(n / block_threads)) output. \param n elements.
/// \param block_threads threads per block.
void block_sum_warp(const float* x, float* block_sums, std::size_t n, unsigned block_threads);

/// Every shuffle variant, each thread on its own value; lanes past the block's end do not exist.
/// \param x (n) input, one per thread. \param out_idx, out_up, out_down, out_xor (n) results of
/// __shfl_sync(src_lane), __shfl_up_sync(delta), __shfl_down_sync(delta),
/// __shfl_xor_sync(lane_mask). \param out_xor_double (n) __shfl_xor_sync(lane_mask) of (double)x *
/// 0.5 (an 8-byte shuffle). \param n threads (one block). \param src_lane, delta, lane_mask, width
/// the shuffle arguments.
void shuffle_probe(const int* x, int* out_idx, int* out_up, int* out_down, int* out_xor,
                   double* out_xor_double, unsigned n, int src_lane, unsigned delta, int lane_mask,
                   int width);

/// Votes in divergent code: lanes with lane % 3 == 0 vote among themselves, the others among
/// themselves, concurrently. \param x (n) input; the predicate is x > threshold.
/// \param out_ballot, out_any, out_all (n) each thread's results. \param n threads (one block).
/// \param threshold the predicate's threshold.
void divergent_votes(const int* x, unsigned* out_ballot, int* out_any, int* out_all, unsigned n,
                     int threshold);

/// __syncthreads_count/and/or over x > threshold, per block.
/// \param x (n) input. \param out (3 * blocks) count, and, or per block. \param n elements.
/// \param block_threads threads per block. \param threshold the predicate's threshold.
void barrier_votes(const int* x, int* out, std::size_t n, unsigned block_threads, int threshold);

/// Every atomic on global memory. counters layout (int/unsigned/ull mixed, see atomics.cu).
/// \param x (n) input in [0, bins). \param histogram (bins) atomicAdd(int) counts.
/// \param float_sum (1) atomicAdd(float) of x. \param double_sum (1) atomicAdd(double) of x.
/// \param ull_sum (1) atomicAdd(unsigned long long) of x.
/// \param int_min, int_max (1) atomicMin/atomicMax(int) of x - bins/2.
/// \param uint_min, uint_max (1) atomicMin/atomicMax(unsigned) of x.
/// \param ull_max (1) atomicMax(unsigned long long) of x * 2^33.
/// \param exch_winner (1) atomicExch target (every thread writes its index; the final value is one
/// of them). \param exch_seen (n) 1 where a thread received the value another thread stored with
/// atomicExch. \param cas_claim (bins) atomicCAS: the first thread to claim bin b stores its index
/// + 1. \param n elements. \param bins histogram size. \param block_threads threads per block.
void all_atomics(const int* x, int* histogram, float* float_sum, double* double_sum,
                 unsigned long long* ull_sum, int* int_min, int* int_max, unsigned* uint_min,
                 unsigned* uint_max, unsigned long long* ull_max, int* exch_winner, int* exch_seen,
                 unsigned* cas_claim, std::size_t n, int bins, unsigned block_threads);

/// Reverses each block-sized chunk of x through dynamic shared memory.
/// \param x (n) input. \param y (n) output. \param n elements. \param block_threads threads per
/// block.
void reverse_chunks(const float* x, float* y, std::size_t n, unsigned block_threads);

/// Writes, for every thread of a 3D grid of 3D blocks, its global linear index at its global
/// 3D position. \param out (gx*bx, gy*by, gz*bz) row-major with x fastest, initially -1.
/// \param grid gridDim. \param block blockDim.
void index_3d(long long* out, dim3 grid, dim3 block);

/// C = A B, one thread per output. \param a (m, k) \param b (k, n) \param c (m, n) row-major.
void matmul_naive(const float* a, const float* b, float* c, int m, int n, int k);

/// C = A B with 16x16 shared-memory tiles. \param a (m, k) \param b (k, n) \param c (m, n)
/// row-major.
void matmul_tiled(const float* a, const float* b, float* c, int m, int n, int k);

/// An empty kernel, to time the emulator's cost per thread. \param blocks gridDim.x.
/// \param block_threads blockDim.x.
void empty_kernel(unsigned blocks, unsigned block_threads);

/// A kernel that only crosses `barriers` __syncthreads, to time a barrier per thread.
/// \param blocks gridDim.x. \param block_threads blockDim.x. \param barriers barriers per thread.
void barrier_loop(unsigned blocks, unsigned block_threads, int barriers);

}  // namespace vramlab::cuda_examples
