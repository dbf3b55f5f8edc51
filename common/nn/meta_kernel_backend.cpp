// The meta device's kernels: nothing runs (see meta_kernel_backend.h).
#include "common/nn/meta_kernel_backend.h"

#include "common/nn/cpu_kernel_backend.h"

namespace vramlab::nn {

namespace {

// KernelBackend skips every kernel of a backend whose kind is meta (Note [Meta kernels] in
// kernel_backend.cpp); deriving from the CPU backend only makes this one complete.
class MetaKernelBackend final : public CpuKernelBackend {
 public:
  [[nodiscard]] KernelKind kind() const override { return KernelKind::meta; }
};

}  // namespace

std::unique_ptr<KernelBackend> make_meta_kernel_backend() {
  return std::make_unique<MetaKernelBackend>();
}

}  // namespace vramlab::nn
