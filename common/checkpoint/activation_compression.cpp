// Activation compression modes and their bytes (see activation_compression.h).
#include "common/checkpoint/activation_compression.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab::checkpoint {

std::string_view compression_name(ActivationCompression compression) {
  switch (compression) {
    case ActivationCompression::none:
      return "none";
    case ActivationCompression::int8:
      return "int8";
    case ActivationCompression::int8_block:
      return "int8-block";
  }
  return "unknown";
}

ActivationCompression parse_compression(std::string_view text) {
  for (const ActivationCompression c : {ActivationCompression::none, ActivationCompression::int8,
                                        ActivationCompression::int8_block})
    if (text == compression_name(c)) return c;
  throw UsageError("unknown activation compression '" + std::string(text) +
                   "' (expected none, int8 or int8-block)");
}

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

}  // namespace vramlab::checkpoint
