/// \file
/// \brief What a piece of memory is for: the categories of PyTorch's memory profiler.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace vramlab::memory {

/// The role of an allocation in a training step. The names and order follow
/// torch.profiler._memory_profiler.Category (minus AUTOGRAD_DETAIL), plus `other`.
enum class MemoryCategory : unsigned char {
  parameter,        ///< model weights
  gradient,         ///< gradients of the weights
  optimizer_state,  ///< optimizer moments, master weights
  activation,       ///< forward outputs kept for backward
  temporary,        ///< buffers freed inside the op that made them
  input,            ///< the batch and labels
  other,            ///< anything not labelled
};

/// Number of MemoryCategory values.
inline constexpr std::size_t kMemoryCategoryCount = 7;

/// Every category in declaration order.
inline constexpr std::array<MemoryCategory, kMemoryCategoryCount> kAllMemoryCategories = {
    MemoryCategory::parameter,  MemoryCategory::gradient,  MemoryCategory::optimizer_state,
    MemoryCategory::activation, MemoryCategory::temporary, MemoryCategory::input,
    MemoryCategory::other};

/// \return the lower-case name of \p category, e.g. "optimizer_state".
std::string_view category_name(MemoryCategory category);

/// Parses a category name as printed by category_name().
/// \param name e.g. "activation".
/// \throws vramlab::UsageError naming \p name when it is not a category.
MemoryCategory parse_category(std::string_view name);

}  // namespace vramlab::memory
