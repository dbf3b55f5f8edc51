/// \file
/// \brief MetaKernelBackend: the kernels of the meta device, which run nothing. Buffers on meta
/// have addresses but no memory, so every op returns at once after the typed checks of
/// KernelBackend (dtypes and sizes are still checked: a bug shows on meta as it would on a GPU).
/// The modules call the kernels the same way on every device; the device decides what runs.
#pragma once

#include <memory>

#include "common/nn/kernel_backend.h"

namespace vramlab::nn {

/// \return the meta kernels (KernelKind::meta): every op is a no-op and sum() is 0.
std::unique_ptr<KernelBackend> make_meta_kernel_backend();

}  // namespace vramlab::nn
