// Note [A meta kernel's time: its roofline]
// Why: on meta nothing runs, so the stream clock (Note [The stream clock] in
// common/stream/clock.cpp) cannot take a kernel's measured time; without another duration a
// 70B step on `meta:h100-80g` would show its copies exposed behind compute that takes no time.
// The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful visual
// performance model for multicore architectures", CACM 52(4), 2009) bounds a kernel by its two
// roofs: it cannot finish before its FLOPs at the peak rate, nor before its bytes at the memory
// bandwidth, so its time is the larger of the two. That is what a meta kernel takes, from the
// preset's datasheet figures (docs/design/device-presets.md).
// What is counted (KernelWork, from the op's sizes in kernel_backend.cpp): FLOPs of the
// matmuls, 2 per multiply-add, exactly as estimate/forward_flops.h counts a forward (the causal
// attention's B·C·T(T+1) per matmul; a backward is two matmuls per forward one, flash attention's
// recomputes its scores once more); and the bytes of every operand once. Elementwise FLOPs are
// left out: a few per element against 4-8 bytes per element, far left of every preset's ridge
// point (peak / bandwidth: 25 FLOP/byte on a T4 in fp32, 200 on an A100 in bf16), so their bytes
// decide. Both counts are floors: a real kernel rereads tiles, and a tensor accumulated into or
// updated in place moves twice. And a real GPU reaches only a fraction of either peak. So the
// clock on meta is an optimistic step time; its use is the *comparison* the offload lesson makes,
// a copy against the compute it could hide behind, both from the same datasheet.
// Example (a100-40g, bf16): GPT-2 1.5B's MLP up-projection at B·T = 8192 is 2·8192·1600·6400 =
// 168 GFLOP over 151 MB of operands: 0.54 ms at 312 TFLOP/s against 0.10 ms at 1,555 GB/s, so it
// is compute-bound; the residual add after it moves 79 MB for 13 M additions and takes 0.05 ms.
#include "common/nn/roofline.h"

#include <algorithm>

namespace vramlab::nn {

std::optional<Roofline> Roofline::of(const memory::DeviceSpec& spec) {
  const memory::PeakFlops& p = spec.peak_flops;
  if (spec.memory_bandwidth_bytes_per_s <= 0.0 || p.fp32 <= 0.0 || p.bf16_tensor <= 0.0 ||
      p.fp16_tensor <= 0.0)
    return std::nullopt;
  return Roofline{p, spec.memory_bandwidth_bytes_per_s};
}

double Roofline::peak_flops(DType dtype) const {
  switch (dtype) {
    case DType::bf16:
      return peak.bf16_tensor;
    case DType::f16:
      return peak.fp16_tensor;
    default:
      return peak.fp32;
  }
}

double Roofline::seconds(const KernelWork& work, DType dtype) const {
  return std::max(work.flops / peak_flops(dtype), work.bytes / memory_bytes_per_s);
}

}  // namespace vramlab::nn
