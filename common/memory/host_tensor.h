/// \file
/// \brief HostTensor: a flat buffer in host memory that is either pageable (a Tensor of a host
/// runtime's allocator) or pinned (a HostBuffer from a CachingHostAllocator, its block rounded up
/// to a power of two), seen the same way through view(): what an offloaded optimizer keeps on the
/// host, pinned or not as DeepSpeed's `pin_memory` says.
#pragma once

#include <cstdint>
#include <utility>

#include "common/dtype/dtype.h"
#include "common/memory/host_buffer.h"
#include "common/memory/tensor.h"
#include "common/memory/tensor_view.h"

namespace vramlab::memory {

/// A move-only owner of a pageable Tensor or a pinned HostBuffer of `numel` elements.
class HostTensor {
 public:
  /// An empty one.
  HostTensor() = default;
  /// Takes \p pageable (a Tensor of a host runtime).
  explicit HostTensor(Tensor pageable) : pageable_(std::move(pageable)) {}
  /// Takes \p pinned, holding \p numel elements of \p dtype (its bytes at least numel × size).
  HostTensor(HostBuffer pinned, DType dtype, int64_t numel)
      : pinned_(std::move(pinned)), dtype_(dtype), numel_(numel) {}

  /// \return true when it holds nothing.
  [[nodiscard]] bool empty() const { return pageable_.empty() && pinned_.data() == nullptr; }
  /// \return true when it is a pinned block.
  [[nodiscard]] bool pinned() const { return pinned_.data() != nullptr; }
  /// \return its elements as a 1-D view; the none view when empty.
  [[nodiscard]] TensorView view() const {
    if (pinned()) return TensorView(pinned_.data(), dtype_, {numel_});
    return pageable_.view();
  }
  /// \return the bytes asked for (numel × element size; a pinned block may be larger).
  [[nodiscard]] int64_t bytes() const {
    return pinned() ? numel_ * static_cast<int64_t>(dtype_size_bytes(dtype_)) : pageable_.bytes();
  }

 private:
  Tensor pageable_;
  HostBuffer pinned_;
  DType dtype_ = DType::f32;
  int64_t numel_ = 0;
};

}  // namespace vramlab::memory
