// Known-wrong variant of exercise 09.1 (kept for `vramlab verify`, never linked into a lesson):
// builds v's map with the signed map's bins per decade (one fraction bit fewer), padding with
// zeros.
// The exercise's tests must fail for it.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/platform/errors.h"
#include "lessons/09-optimizer-memory/api/blockwise_quantization.h"

namespace vramlab::lesson09 {

namespace {

void require_block_size(int64_t block_size) {
  if (block_size < 1)
    throw UsageError("quantization block size must be >= 1, got " + std::to_string(block_size));
}

}  // namespace

CodeMap dynamic_code_map(bool is_signed) {
  // 8 bits: a sign bit (signed map only), k zero bits for the decade 10^-k, an indicator bit, and
  // the bits left over select one of 2^bits bins of [0.1, 1]. Dropping the sign gives v's map one
  // more fraction bit, so twice the codes per decade.
  std::vector<double> codes;
  for (int k = 0; k <= 6; ++k) {
    const int64_t bins = int64_t{1} << (6 - k);
    const double width = 0.9 / static_cast<double>(bins);
    for (int64_t b = 0; b < bins; ++b) {
      const double midpoint = (0.1 + width * (static_cast<double>(b) + 0.5)) * std::pow(10.0, -k);
      codes.push_back(midpoint);
      if (is_signed) codes.push_back(-midpoint);
    }
  }
  codes.push_back(0.0);
  codes.push_back(1.0);
  codes.resize(256, 0.0);
  std::sort(codes.begin(), codes.end());
  CodeMap map{};
  std::transform(codes.begin(), codes.end(), map.begin(),
                 [](double c) { return static_cast<float>(c); });
  return map;
}

uint8_t nearest_code(const CodeMap& code, float normalized) {
  // The largest index whose code is <= normalized (0 when every code is above it) ...
  int64_t lo = 0, hi = static_cast<int64_t>(code.size()) - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (code[static_cast<size_t>(mid)] <= normalized)
      lo = mid;
    else
      hi = mid - 1;
  }
  // ... then its right neighbour only when strictly nearer: a tie keeps the lower index.
  if (lo + 1 < static_cast<int64_t>(code.size())) {
    const float left = std::fabs(normalized - code[static_cast<size_t>(lo)]);
    const float right = std::fabs(normalized - code[static_cast<size_t>(lo + 1)]);
    if (right < left) ++lo;
  }
  return static_cast<uint8_t>(lo);
}

BlockwiseQuantized quantize_blockwise(std::span<const float> x, int64_t block_size,
                                      const CodeMap& code) {
  require_block_size(block_size);
  const auto n = static_cast<int64_t>(x.size());
  const uint8_t zero = nearest_code(code, 0.0f);
  BlockwiseQuantized out;
  out.codes.resize(x.size());
  for (int64_t start = 0; start < n; start += block_size) {
    const int64_t end = std::min(start + block_size, n);  // the last block may be shorter
    float absmax = 0.0f;
    bool finite = true;
    for (int64_t i = start; i < end; ++i) {
      const float value = x[static_cast<size_t>(i)];
      finite = finite && std::isfinite(value);
      absmax = std::max(absmax, std::fabs(value));
    }
    if (!finite) absmax = std::nanf("");
    out.absmax.push_back(absmax);
    for (int64_t i = start; i < end; ++i)
      out.codes[static_cast<size_t>(i)] =
          absmax > 0.0f ? nearest_code(code, x[static_cast<size_t>(i)] / absmax) : zero;
  }
  return out;
}

std::vector<float> dequantize_blockwise(const BlockwiseQuantized& quantized, int64_t block_size,
                                        const CodeMap& code) {
  require_block_size(block_size);
  const auto n = static_cast<int64_t>(quantized.codes.size());
  const int64_t blocks = n / block_size + (n % block_size != 0 ? 1 : 0);
  if (static_cast<int64_t>(quantized.absmax.size()) != blocks)
    throw UsageError("expected " + std::to_string(blocks) + " absmax values for " +
                     std::to_string(n) + " elements in blocks of " + std::to_string(block_size) +
                     ", got " + std::to_string(quantized.absmax.size()));
  std::vector<float> x(quantized.codes.size());
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] = code[quantized.codes[static_cast<size_t>(i)]] *
                                quantized.absmax[static_cast<size_t>(i / block_size)];
  return x;
}

}  // namespace vramlab::lesson09
