// Known-wrong variant of exercise 09.4 (kept for `vramlab verify`, never linked into a lesson):
// takes ceil(total / B) blocks over all quantized elements together, as if blocks spanned tensors.
// The exercise's tests must fail for it.
#include <string>

#include "common/platform/errors.h"
#include "lessons/09-optimizer-memory/api/moment_bytes.h"

namespace vramlab::lesson09 {

namespace {

void require_at_least(int64_t value, int64_t minimum, const std::string& name) {
  if (value < minimum)
    throw UsageError(name + " must be >= " + std::to_string(minimum) + ", got " +
                     std::to_string(value));
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw UsageError(std::string(what) + " does not fit in 64 bits (" + std::to_string(a) + " x " +
                     std::to_string(b) + ")");
  return product;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    throw UsageError(std::string(what) + " does not fit in 64 bits (" + std::to_string(a) + " + " +
                     std::to_string(b) + ")");
  return sum;
}

// The elements of a tensor, its dimensions checked.
int64_t numel(const ParameterSpec& tensor) {
  int64_t n = 1;
  for (const int64_t d : tensor.shape) {
    require_at_least(d, 0, "a dimension of " + tensor.name);
    n = checked_mul(n, d, "a tensor's element count");
  }
  return n;
}

}  // namespace

EightBitMomentBytes adamw_8bit_moment_bytes(std::span<const ParameterSpec> tensors,
                                            int64_t block_size, int64_t min_8bit_size) {
  require_at_least(block_size, 1, "the quantization block size");
  require_at_least(min_8bit_size, 0, "min_8bit_size");
  EightBitMomentBytes bytes;
  int64_t quantized = 0;
  for (const ParameterSpec& tensor : tensors) {
    const int64_t n = numel(tensor);
    if (n < min_8bit_size) {  // too small to be worth quantizing: m and v in f32
      bytes.fp32_bytes = checked_add(bytes.fp32_bytes, checked_mul(n, 8, "f32 bytes"), "f32 bytes");
      continue;
    }
    // Blocks restart at every tensor, so each tensor rounds its own last block up.
    quantized = checked_add(quantized, n, "quantized elements");
    bytes.code_bytes = checked_add(bytes.code_bytes, checked_mul(n, 2, "code bytes"), "code bytes");
  }
  const int64_t blocks = quantized / block_size + (quantized % block_size != 0 ? 1 : 0);
  bytes.absmax_bytes = checked_mul(blocks, 8, "absmax bytes");
  bytes.total = checked_add(checked_add(bytes.code_bytes, bytes.absmax_bytes, "moment bytes"),
                            bytes.fp32_bytes, "moment bytes");
  return bytes;
}

int64_t adafactor_moment_bytes(std::span<const ParameterSpec> tensors,
                               int64_t state_element_bytes) {
  require_at_least(state_element_bytes, 1, "state element bytes");
  int64_t values = 0;
  for (const ParameterSpec& tensor : tensors) {
    const int64_t n = numel(tensor);
    if (tensor.shape.size() == 2)  // a matrix: one factor per row and one per column
      values = checked_add(values, checked_add(tensor.shape[0], tensor.shape[1], "values"),
                           "Adafactor values");
    else if (tensor.shape.size() == 1)
      values = checked_add(values, n, "Adafactor values");
    else
      throw UsageError("Adafactor here takes 1-D and 2-D tensors; " + tensor.name + " has " +
                       std::to_string(tensor.shape.size()) + " dimensions");
  }
  return checked_mul(values, state_element_bytes, "Adafactor bytes");
}

}  // namespace vramlab::lesson09
