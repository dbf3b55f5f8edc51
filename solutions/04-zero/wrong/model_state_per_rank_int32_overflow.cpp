// Known-wrong variant of exercise 04.4 (kept for `vramlab verify`, never linked into a lesson):
// sums the elements in 32-bit integers, which wrap past 2^31 (Llama 2 7B has 6.7 billion
// parameters; a 70B model's padded store is 69 billion elements).
// The exercise's tests must fail for it.
#include <string>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"
#include "lessons/04-zero/api/model_state_per_rank.h"

namespace vramlab::lesson04 {

namespace {

struct ElementBytes {
  int64_t parameter, gradient, optimizer;
};

// AdamW: two moments, plus the fp32 master copy under mixed precision.
ElementBytes element_bytes(amp::Precision precision) {
  switch (precision) {
    case amp::Precision::fp32:
      return {4, 4, 8};
    case amp::Precision::bf16:
      return {2, 2, 4};
    case amp::Precision::mixed_fp16:
    case amp::Precision::mixed_bf16:
      return {2, 2, 4 + 8};
  }
  throw UsageError("unknown precision " + std::to_string(static_cast<int>(precision)));
}

}  // namespace

RankModelStateBytes model_state_bytes_per_rank(const ParallelModelStates& states) {
  const int64_t N = states.data_parallel, t = states.tensor_parallel;
  if (N < 1) throw UsageError("data-parallel ranks must be >= 1, got " + std::to_string(N));
  if (t < 1) throw UsageError("tensor-parallel ranks must be >= 1, got " + std::to_string(t));
  const auto tensor_count = static_cast<int64_t>(states.tensors.size());

  // What one tensor-parallel rank holds of each unit: split tensors by t, replicated ones whole.
  std::vector<int64_t> unit_numel(states.tensors.size(), 0);
  for (const StateTensor& tensor : states.tensors) {
    if (tensor.numel < 0)
      throw UsageError("a tensor of " + std::to_string(tensor.numel) + " elements");
    if (tensor.unit < 0 || tensor.unit >= tensor_count)
      throw UsageError("unit " + std::to_string(tensor.unit) + " outside [0, " +
                       std::to_string(tensor_count) + ")");
    if (tensor.split_by_tensor_parallel && tensor.numel % t != 0)
      throw UsageError("a split tensor of " + std::to_string(tensor.numel) +
                       " elements is not divisible by t = " + std::to_string(t));
    const int64_t local = tensor.split_by_tensor_parallel ? tensor.numel / t : tensor.numel;
    int64_t& n = unit_numel[static_cast<size_t>(tensor.unit)];
    n = checked_add(n, local, "a unit's elements");
  }

  // Ψ_t unpadded, Σ p_u padded, Σ s_u one rank's shard (p_u = s_u·N).
  int32_t whole = 0, padded = 0, shard = 0;
  const auto add32 = [](int32_t a, int64_t b) {  // as int32_t arithmetic wraps on the hardware
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  };
  for (const int64_t n : unit_numel) {
    const int64_t s = ceil_div(n, N);
    whole = add32(whole, n);
    shard = add32(shard, s);
    padded = add32(padded, s * N);
  }

  using dist::ZeroStage;
  const ElementBytes e = element_bytes(states.precision);
  const bool sharding = states.stage != ZeroStage::ddp;  // the store is padded from stage 1 on
  const int64_t replicated = sharding ? padded : whole;
  RankModelStateBytes bytes;
  bytes.parameters = checked_mul(states.stage >= ZeroStage::parameters ? shard : replicated,
                                 e.parameter, "parameter bytes");
  bytes.gradients = checked_mul(states.stage >= ZeroStage::gradients ? shard : replicated,
                                e.gradient, "gradient bytes");
  bytes.optimizer_states = checked_mul(sharding ? shard : whole, e.optimizer, "optimizer bytes");
  return bytes;
}

}  // namespace vramlab::lesson04
