// KernelKind names and parsing (see kernel_backend.h).
#include "common/nn/kernel_backend.h"

#include "common/platform/errors.h"

namespace vramlab::nn {

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::cpu:
      return "cpu";
    case KernelKind::cuda_emulated:
      return "cuda-emulated";
    case KernelKind::cuda:
      return "cuda";
  }
  return "unknown";
}

KernelKind parse_kernel_kind(std::string_view text) {
  for (const KernelKind kind : {KernelKind::cpu, KernelKind::cuda_emulated, KernelKind::cuda})
    if (text == kernel_kind_name(kind)) return kind;
  throw UsageError("unknown kernels '" + std::string(text) +
                   "' (expected cpu, cuda-emulated or cuda)");
}

}  // namespace vramlab::nn
