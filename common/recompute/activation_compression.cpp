// Activation compression modes and their bytes (see activation_compression.h).
#include "common/recompute/activation_compression.h"

namespace vramlab::recompute {

int64_t compressed_bytes(int64_t numel, ActivationCompression compression) {
  switch (compression) {
    case ActivationCompression::none:
      return 4 * numel;
    case ActivationCompression::int8:
      return numel + 4;
    case ActivationCompression::int8_block:
      return numel + 4 * ((numel + kInt8ActivationBlock - 1) / kInt8ActivationBlock);
  }
  return 4 * numel;
}

}  // namespace vramlab::recompute
