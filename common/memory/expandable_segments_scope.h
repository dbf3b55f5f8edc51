/// \file
/// \brief ExpandableSegmentsScope: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for the
/// allocators made while it lives, the caller's setting restored afterwards.
///
/// Why the lessons measure with it: with expandable segments every block is split, so each
/// category's allocated peak is its live tensors' own 512-byte-rounded sizes, never a remainder of
/// 1 MiB or less that a large block keeps unsplit (PyTorch's should_split). A measured peak can
/// then equal a formula to the byte.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "common/memory/device.h"

namespace vramlab::memory {

/// Sets expandable_segments:True on construction (except on the cpu device, whose allocator has
/// no capacity to map segments into and refuses the first allocation with them on) and restores
/// the previous PYTORCH_CUDA_ALLOC_CONF on destruction. The allocator reads the variable when it
/// is made: make the Runtime inside the scope.
class ExpandableSegmentsScope {
 public:
  /// \param device the device the scope's runtimes allocate on.
  explicit ExpandableSegmentsScope(const Device& device) {
    if (const char* old = std::getenv(kVariable)) old_ = old;
    if (device.kind != DeviceKind::cpu) setenv(kVariable, "expandable_segments:True", 1);
  }
  ~ExpandableSegmentsScope() {
    if (old_)
      setenv(kVariable, old_->c_str(), 1);
    else
      unsetenv(kVariable);
  }
  ExpandableSegmentsScope(const ExpandableSegmentsScope&) = delete;
  ExpandableSegmentsScope& operator=(const ExpandableSegmentsScope&) = delete;

 private:
  static constexpr const char* kVariable = "PYTORCH_CUDA_ALLOC_CONF";
  std::optional<std::string> old_;
};

}  // namespace vramlab::memory
