// Names of the memory categories and their parser.
#include "common/memory/memory_category.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::memory {

std::string_view category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::parameter:
      return "parameter";
    case MemoryCategory::gradient:
      return "gradient";
    case MemoryCategory::optimizer_state:
      return "optimizer_state";
    case MemoryCategory::activation:
      return "activation";
    case MemoryCategory::temporary:
      return "temporary";
    case MemoryCategory::input:
      return "input";
    case MemoryCategory::other:
      return "other";
  }
  return "other";
}

MemoryCategory parse_category(std::string_view name) {
  for (MemoryCategory category : kAllMemoryCategories) {
    if (category_name(category) == name) return category;
  }
  throw UsageError("unknown memory category '" + std::string(name) +
                   "' (expected parameter, gradient, optimizer_state, activation, temporary, "
                   "input or other)");
}

}  // namespace vramlab::memory
