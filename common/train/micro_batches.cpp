// Gradient accumulation's micro-batch split (see micro_batches.h).
#include "common/train/micro_batches.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::train {

std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t micro_batches) {
  if (batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(batch));
  if (micro_batches < 1 || micro_batches > batch)
    throw UsageError("--grad-accum " + std::to_string(micro_batches) + " outside [1, " +
                     std::to_string(batch) + "]: every micro-batch needs at least one of the " +
                     std::to_string(batch) + " sequences of --batch");
  std::vector<int64_t> sizes(static_cast<size_t>(micro_batches), batch / micro_batches);
  for (int64_t i = 0; i < batch % micro_batches; ++i) ++sizes[static_cast<size_t>(i)];
  return sizes;
}

}  // namespace vramlab::train
