/// \file
/// \brief Exercise 04.1: which elements of an FSDP unit each rank owns, padding included, and
/// which ranks own a given parameter tensor of the unit.
///
/// The one API shared by the stub (exercises/04-zero/shard_ranges.cpp) and the reference
/// (solutions/04-zero/shard_ranges.cpp). The runtime's versions are dist::shard_range and
/// dist::ShardLayout::owners (common/dist/shard_layout.h); the tests compare with them at the
/// sizes of GPT-2 124M, Llama 2 7B and 70B, whose whole-model units pass 2³¹ elements.
///
/// A unit of n elements over N ranks is padded, as FSDP pads its FlatParameter, to a multiple of
/// N, and cut into N equal shards: every rank holds the same number of elements, so one
/// reduce-scatter and one all-gather with equal chunks move the unit, and the padding (zeros that
/// no parameter uses) sits at the end of the last shards.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dist/shard_layout.h"

namespace vramlab::lesson04 {

/// Exercise 04.1: rank \p rank's shard of a unit of \p unit_numel elements over \p world_size
/// ranks, as dist::shard_range returns it.
/// \param unit_numel n ≥ 0. \param world_size N ≥ 1. \param rank r in [0, N).
/// \return first, count (the same on every rank) and padding (elements of the shard at or beyond
///         n). Exact in 64 bits for n up to 2⁶².
/// \throws vramlab::UsageError naming the value for n < 0, N < 1 or r outside [0, N).
dist::ShardRange shard_range(int64_t unit_numel, int64_t world_size, int64_t rank);

/// Exercise 04.1: the ranks whose shards hold part of the tensor [offset, offset + numel) of a
/// unit of \p unit_numel elements over \p world_size ranks.
/// \param unit_numel n ≥ 0. \param world_size N ≥ 1.
/// \param offset the tensor's first element in the unit (≥ 0).
/// \param numel the tensor's elements (≥ 0; offset + numel ≤ n).
/// \return the owning ranks, ascending; none for an empty tensor.
/// \throws vramlab::UsageError naming the value for N < 1, n, offset or numel < 0, or a tensor
///         that ends beyond the unit.
std::vector<int64_t> shard_owners(int64_t unit_numel, int64_t world_size, int64_t offset,
                                  int64_t numel);

}  // namespace vramlab::lesson04
