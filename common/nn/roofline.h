/// \file
/// \brief What a kernel call does (KernelWork: its matmul FLOPs and the bytes of its operands) and
/// a device's roofline, the time such work takes at the device's peak rates: what a kernel costs
/// on the stream clock of the meta device, where nothing runs. Note [A meta kernel's time: its
/// roofline] in roofline.cpp.
#pragma once

#include <optional>

#include "common/dtype/dtype.h"
#include "common/memory/device.h"

namespace vramlab::nn {

/// The work of one kernel call, counted from its sizes before it runs.
struct KernelWork {
  /// FLOPs of the op's matmuls, 2 per multiply-add (linear, attention); 0 for elementwise ops,
  /// whose few FLOPs per element are left out as in estimate/forward_flops.h.
  double flops = 0.0;
  /// Bytes of every operand the op reads or writes, each counted once: the traffic no
  /// implementation can avoid (a tensor it accumulates into or updates in place moves twice).
  double bytes = 0.0;
};

/// A device's peak rates: the two roofs of the roofline model.
struct Roofline {
  /// Dense peak FLOP/s per dtype (every one > 0).
  memory::PeakFlops peak;
  /// Device-memory bandwidth in bytes per second (> 0).
  double memory_bytes_per_s = 0.0;

  /// \return the roofline of \p spec, or no value when the spec lacks a peak rate or its
  /// bandwidth (a device given by size, `meta:80GiB`, or `meta` alone).
  [[nodiscard]] static std::optional<Roofline> of(const memory::DeviceSpec& spec);

  /// The peak that matmuls computing in \p dtype run at: fp32 (CUDA cores) for f32, as PyTorch's
  /// matmuls by default (TF32 off since 1.12); the tensor-core rate for bf16 and f16.
  [[nodiscard]] double peak_flops(DType dtype) const;

  /// max(work.flops / peak_flops(dtype), work.bytes / memory_bytes_per_s): the time of \p work at
  /// whichever roof binds, in seconds.
  [[nodiscard]] double seconds(const KernelWork& work, DType dtype) const;
};

}  // namespace vramlab::nn
