/// \file
/// \brief How the flat parameter store is cut into shards: FSDP's units (one per transformer
/// block, one for the embedding, one for the final norm and LM head), each padded to a multiple
/// of the rank count N and split into N equal shards.
///
/// Unit u of n_u elements is padded to p_u = ⌈n_u/N⌉·N elements (p_u − n_u < N zeros at its end,
/// as FSDP pads its FlatParameter) and rank r owns elements [r·s_u, (r+1)·s_u) of it, with
/// s_u = p_u/N. The padded units lie one after another in the store (ShardUnit::offset), so a
/// unit's shards are one reduce-scatter's output and one all-gather's input. A rank's local shard
/// is its s_u elements of every unit, concatenated (ShardUnit::shard_offset): what ZeRO-1/2/3
/// keep of the optimizer states, ZeRO-2/3 of the gradients, ZeRO-3 of the parameters. Every
/// rank's shard has the same size, Σ s_u, which is Ψ/N when N divides every n_u and exceeds it
/// by fewer than (number of units) elements otherwise.
///
/// With N = 1 there is no padding and the offsets are ParameterStore's own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model/model_config.h"

namespace vramlab::dist {

/// Rank r's part of a unit of n elements over N ranks: [first, first + count) of the unit, of
/// which the last `padding` elements (beyond n) are zeros the rank holds but no parameter uses.
struct ShardRange {
  int64_t first = 0;    ///< r·⌈n/N⌉
  int64_t count = 0;    ///< ⌈n/N⌉ (every rank the same)
  int64_t padding = 0;  ///< elements of [first, first + count) at or beyond n
};

/// \param numel n ≥ 0. \param world_size N ≥ 1. \param rank r in [0, N).
/// \return rank r's shard of a unit of n elements (64-bit: n up to 2⁶² works).
/// \throws vramlab::UsageError for a value out of range.
ShardRange shard_range(int64_t numel, int64_t world_size, int64_t rank);

/// One FSDP unit: consecutive parameter tensors gathered, released and reduced together.
struct ShardUnit {
  std::string name;          ///< "embedding", "blocks.3", "head"
  int64_t layer = -1;        ///< the block's index, -1 for the embedding and head units
  int64_t first_tensor = 0;  ///< index of its first tensor in ModelConfig::parameters()
  int64_t tensor_count = 0;  ///< its tensors
  int64_t numel = 0;         ///< n_u: parameters in the unit
  int64_t padded_numel = 0;  ///< p_u = ⌈n_u/N⌉·N
  int64_t shard_numel = 0;   ///< s_u = p_u/N
  int64_t offset = 0;        ///< first element of the unit in the padded store
  int64_t shard_offset = 0;  ///< first element of the unit's shard in the local shard
};

/// The units of a model's parameters over N ranks.
class ShardLayout {
 public:
  /// \param specs ModelConfig::parameters(): tensors of one block are consecutive and carry its
  /// layer; the tensors before the first block form the embedding unit, those after the last
  /// block the head unit (a unit with no tensors is left out).
  /// \param world_size N ≥ 1. \throws vramlab::UsageError for N < 1 or specs out of that order.
  ShardLayout(const std::vector<ParameterSpec>& specs, int64_t world_size);

  /// \return N.
  [[nodiscard]] int64_t world_size() const { return world_size_; }
  /// \return the units in store order.
  [[nodiscard]] const std::vector<ShardUnit>& units() const { return units_; }
  /// \return Σ n_u: the model's parameter count (a tied head counted once).
  [[nodiscard]] int64_t numel() const { return numel_; }
  /// \return Σ p_u: elements of the padded store.
  [[nodiscard]] int64_t padded_numel() const { return padded_numel_; }
  /// \return Σ s_u: elements of every rank's local shard.
  [[nodiscard]] int64_t shard_numel() const { return padded_numel_ / world_size_; }
  /// \return each tensor's first element in the padded store, in specs order.
  [[nodiscard]] const std::vector<int64_t>& tensor_offsets() const { return tensor_offsets_; }
  /// \param tensor index into specs. \return the index of the unit that holds it.
  [[nodiscard]] int64_t unit_of_tensor(int64_t tensor) const;
  /// \param unit_layer a block index, or -1 for the embedding or head unit.
  /// \param head with \p unit_layer -1: true for the head unit, false for the embedding unit.
  /// \return the unit's index, or -1 when there is none.
  [[nodiscard]] int64_t find_unit(int64_t unit_layer, bool head = false) const;
  /// \param tensor index into specs. \return the ranks whose shards hold part of that tensor,
  /// ascending (one rank for a tensor inside a shard, several for one that straddles).
  [[nodiscard]] std::vector<int64_t> owners(int64_t tensor) const;

 private:
  int64_t world_size_;
  std::vector<ShardUnit> units_;
  std::vector<int64_t> tensor_offsets_;
  std::vector<int64_t> tensor_unit_;
  std::vector<int64_t> tensor_numel_;
  int64_t numel_ = 0;
  int64_t padded_numel_ = 0;
};

}  // namespace vramlab::dist
