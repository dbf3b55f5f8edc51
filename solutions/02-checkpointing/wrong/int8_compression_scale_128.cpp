// Known-wrong variant of exercise 02.3 (kept for `vramlab verify`, never linked into a lesson):
// divides the absmax by 128 (the int8 range's size) instead of 127 (its largest symmetric
// value): the largest element maps to 128, is clamped to 127, and misses by a whole scale.
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/platform/errors.h"
#include "lessons/02-checkpointing/api/int8_compression.h"

namespace vramlab::lesson02 {

namespace {

void require_block(int64_t block) {
  if (block < 1)
    throw UsageError("int8 block size must be >= 1 element, got " + std::to_string(block));
}

void require_size(const char* what, size_t got, int64_t expected) {
  if (static_cast<int64_t>(got) != expected)
    throw UsageError(std::string(what) + " holds " + std::to_string(got) + " elements, expected " +
                     std::to_string(expected));
}

}  // namespace

int64_t int8_block_count(int64_t n, int64_t block) {
  if (n < 0) throw UsageError("int8 element count must be >= 0, got " + std::to_string(n));
  require_block(block);
  // Not (n + block - 1) / block, which overflows for n near INT64_MAX.
  return n / block + (n % block != 0 ? 1 : 0);
}

int64_t int8_compressed_bytes(int64_t n, int64_t block) {
  const int64_t blocks = int8_block_count(n, block);
  const int64_t max = std::numeric_limits<int64_t>::max();
  if (blocks > (max - n) / 4)
    throw UsageError("int8 compressed bytes of " + std::to_string(n) + " elements in blocks of " +
                     std::to_string(block) + " overflow int64");
  return n + 4 * blocks;
}

void quantize_int8(std::span<const float> x, int64_t block, std::span<int8_t> q,
                   std::span<float> scales) {
  const auto n = static_cast<int64_t>(x.size());
  const int64_t blocks = int8_block_count(n, block);
  require_size("q", q.size(), n);
  require_size("scales", scales.size(), blocks);
  for (int64_t j = 0; j < blocks; ++j) {
    const int64_t first = j * block, last = first + std::min(block, n - first);
    float amax = 0.0f;
    bool finite = true;
    for (int64_t i = first; i < last; ++i) {
      finite = finite && std::isfinite(x[static_cast<size_t>(i)]);
      amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
    }
    const float scale = finite ? amax / 128.0f : std::numeric_limits<float>::quiet_NaN();
    scales[static_cast<size_t>(j)] = scale;
    for (int64_t i = first; i < last; ++i) {
      // An all-zero block (scale 0) and a non-finite one (NaN) store 0: no 0/0.
      float r = 0.0f;
      if (scale > 0.0f)
        r = std::clamp(std::nearbyint(x[static_cast<size_t>(i)] / scale), -127.0f, 127.0f);
      q[static_cast<size_t>(i)] = static_cast<int8_t>(r);
    }
  }
}

void dequantize_int8(std::span<const int8_t> q, std::span<const float> scales, int64_t block,
                     std::span<float> x) {
  const auto n = static_cast<int64_t>(q.size());
  require_size("scales", scales.size(), int8_block_count(n, block));
  require_size("x", x.size(), n);
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] =
        static_cast<float>(q[static_cast<size_t>(i)]) * scales[static_cast<size_t>(i / block)];
}

}  // namespace vramlab::lesson02
