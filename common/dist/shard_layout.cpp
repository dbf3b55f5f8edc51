// ShardLayout: FSDP units padded to a multiple of the rank count (see shard_layout.h).
#include "common/dist/shard_layout.h"

#include <algorithm>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::dist {

ShardRange shard_range(int64_t numel, int64_t world_size, int64_t rank) {
  if (numel < 0) throw UsageError("a unit of " + std::to_string(numel) + " elements");
  if (world_size < 1)
    throw UsageError("a world needs >= 1 rank, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    throw UsageError("rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size) +
                     ")");
  // ⌈n/N⌉ as n/N + (n%N != 0): n + N − 1 could overflow near 2⁶³.
  const int64_t count = numel / world_size + (numel % world_size != 0 ? 1 : 0);
  const int64_t first = rank * count;
  const int64_t end = first + count;
  const int64_t padding = end <= numel ? 0 : end - std::max(first, numel);
  return ShardRange{first, count, padding};
}

ShardLayout::ShardLayout(const std::vector<ParameterSpec>& specs, int64_t world_size)
    : world_size_(world_size) {
  if (world_size < 1)
    throw UsageError("a world needs >= 1 rank, got " + std::to_string(world_size));
  // Unit keys in store order: embedding (layer -1 before any block), blocks, head (after).
  bool seen_block = false;
  int64_t last_layer = -1;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParameterSpec& spec = specs[i];
    std::string name;
    int64_t layer = spec.layer;
    if (spec.layer >= 0) {
      if (spec.layer < last_layer)
        throw UsageError("parameter '" + spec.name + "' of block " + std::to_string(spec.layer) +
                         " is out of the blocks' order");
      if (!units_.empty() && units_.back().name == "head")
        throw UsageError("parameter '" + spec.name + "' of a block comes after the head");
      seen_block = true;
      last_layer = spec.layer;
      name = layer_module_name(spec.layer);
    } else {
      name = seen_block ? "head" : "embedding";
    }
    if (units_.empty() || units_.back().name != name) {
      ShardUnit unit;
      unit.name = name;
      unit.layer = layer;
      unit.first_tensor = static_cast<int64_t>(i);
      units_.push_back(unit);
    }
    ShardUnit& unit = units_.back();
    tensor_unit_.push_back(static_cast<int64_t>(units_.size()) - 1);
    tensor_offsets_.push_back(unit.numel);  // relative to the unit for now
    tensor_numel_.push_back(spec.numel());
    ++unit.tensor_count;
    unit.numel = checked_add(unit.numel, spec.numel(), "a unit's parameter count");
  }
  int64_t offset = 0, shard_offset = 0;
  for (ShardUnit& unit : units_) {
    const ShardRange shard = shard_range(unit.numel, world_size_, 0);
    unit.shard_numel = shard.count;
    unit.padded_numel = checked_mul(shard.count, world_size_, "a padded unit");
    unit.offset = offset;
    unit.shard_offset = shard_offset;
    offset = checked_add(offset, unit.padded_numel, "the padded store");
    shard_offset += unit.shard_numel;
    numel_ += unit.numel;
  }
  padded_numel_ = offset;
  for (size_t i = 0; i < tensor_offsets_.size(); ++i)
    tensor_offsets_[i] += units_[static_cast<size_t>(tensor_unit_[i])].offset;
}

int64_t ShardLayout::unit_of_tensor(int64_t tensor) const {
  if (tensor < 0 || tensor >= static_cast<int64_t>(tensor_unit_.size()))
    throw InternalError("ShardLayout: no tensor " + std::to_string(tensor));
  return tensor_unit_[static_cast<size_t>(tensor)];
}

int64_t ShardLayout::find_unit(int64_t unit_layer, bool head) const {
  const std::string name =
      unit_layer >= 0 ? layer_module_name(unit_layer) : (head ? "head" : "embedding");
  for (size_t u = 0; u < units_.size(); ++u)
    if (units_[u].name == name) return static_cast<int64_t>(u);
  return -1;
}

std::vector<int64_t> ShardLayout::owners(int64_t tensor) const {
  const ShardUnit& unit = units_[static_cast<size_t>(unit_of_tensor(tensor))];
  const int64_t first = tensor_offsets_[static_cast<size_t>(tensor)] - unit.offset;
  const int64_t last = first + tensor_numel_[static_cast<size_t>(tensor)] - 1;
  std::vector<int64_t> ranks;
  if (unit.shard_numel == 0 || last < first) return ranks;
  for (int64_t r = first / unit.shard_numel; r <= last / unit.shard_numel; ++r) ranks.push_back(r);
  return ranks;
}

}  // namespace vramlab::dist
