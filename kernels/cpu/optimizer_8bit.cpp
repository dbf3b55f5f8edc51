// 8-bit AdamW: the dynamic map, block-wise quantization and the update (see optimizer_8bit.h).
//
// Note [Nearest code by bucket]. A binary search over 256 codes is 8 dependent loads per value,
// and the update quantises two values per parameter. For the two dynamic maps a small table
// does most of the search: |x| in [2^-23, 2) is cut into buckets by its exponent and its top 7
// mantissa bits (everything below 2^-23 is one bucket, which holds only the code 0.0), and for
// each bucket and sign the table holds the largest code index at or below every value of the
// bucket. The map's codes are at least 2^-7 apart relative to their size, so at most two codes
// lie inside one bucket; two compare-and-step moves reach the largest code at or below x, and
// one comparison with the next code picks the nearest. The result is the binary search's, bit
// for bit (the same two neighbours, the same f32 distances, the same tie rule); the table is
// checked when it is built. Other maps use the binary search.
#include "kernels/cpu/optimizer_8bit.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/optimizer_detail.h"
#include "kernels/cpu/storage.h"

namespace vramlab::kernels::cpu {
namespace {

using Code = std::array<float, kQuantizationCodes>;

// bitsandbytes' create_dynamic_map(signed, max_exponent_bits = 7, total_bits = 8), with its
// arithmetic: torch.linspace(0.1, 1, k) in f32 (PyTorch's CPU kernel computes start + step·i
// below the halfway point and end - step·(k-1-i) above it, each contracted to one FMA by its
// build), the midpoints (b[j] + b[j+1]) / 2 in f32, then 10^(e-6) · midpoint with the Python
// float scalar rounded to f32 first (a tensor times a Python scalar computes in the tensor's
// dtype), the negative half as (-10^(e-6)) · midpoint, i.e. the exact negation.
Code build_dynamic_map(bool is_signed) {
  constexpr int kMaxExponentBits = 7;
  std::vector<float> data;  // (256) the codes, unsorted
  for (int e = 0; e < kMaxExponentBits; e++) {
    const int64_t items = is_signed ? (int64_t{1} << e) + 1 : (int64_t{1} << (e + 1)) + 1;
    const float start = 0.1f, end = 1.0f;
    const float step = (end - start) / static_cast<float>(items - 1);
    const int64_t halfway = items / 2;
    std::vector<float> boundaries(static_cast<size_t>(items));  // (items) the linspace
    for (int64_t i = 0; i < items; i++) {
      boundaries[static_cast<size_t>(i)] =
          i < halfway ? std::fma(step, static_cast<float>(i), start)
                      : std::fma(-step, static_cast<float>(items - i - 1), end);
    }
    const float scale = static_cast<float>(std::pow(10.0, static_cast<double>(e - 6)));
    for (int64_t j = 0; j + 1 < items; j++) {
      const float mean =
          (boundaries[static_cast<size_t>(j)] + boundaries[static_cast<size_t>(j + 1)]) / 2.0f;
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  if (data.size() != static_cast<size_t>(kQuantizationCodes))
    throw InternalError("dynamic map: " + std::to_string(data.size()) + " codes, not 256");
  std::sort(data.begin(), data.end());
  Code code;
  std::copy(data.begin(), data.end(), code.begin());
  return code;
}

// The bucket table of Note [Nearest code by bucket].
constexpr int kBucketExponents = 24;  // |x| in [2^-23, 2): 24 binades
constexpr int kBucketMantissaBits = 7;
constexpr int kBuckets = 1 + kBucketExponents * (1 << kBucketMantissaBits);
constexpr uint32_t kFirstBucketExponent = 127 - kBucketExponents + 1;  // biased, 2^-23

// The bucket of |x| (x finite, |x| < 2).
inline int bucket_of(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  const int binade = static_cast<int>(bits >> 23) - static_cast<int>(kFirstBucketExponent);
  const int mantissa =
      static_cast<int>((bits >> (23 - kBucketMantissaBits)) & ((1u << kBucketMantissaBits) - 1));
  return binade < 0 ? 0 : (binade << kBucketMantissaBits) + mantissa + 1;
}

// The smallest |x| of bucket b, and the smallest |x| beyond it.
float bucket_low(int b) {
  if (b == 0) return 0.0f;
  const uint32_t binade = static_cast<uint32_t>(b - 1) >> kBucketMantissaBits;
  const uint32_t mantissa = static_cast<uint32_t>(b - 1) & ((1u << kBucketMantissaBits) - 1);
  return std::bit_cast<float>(((kFirstBucketExponent + binade) << 23) |
                              (mantissa << (23 - kBucketMantissaBits)));
}
float bucket_high(int b) {
  if (b == 0) return std::bit_cast<float>(kFirstBucketExponent << 23);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(bucket_low(b)) +
                              (1u << (23 - kBucketMantissaBits)));
}

struct NearestCodeTable {
  std::array<float, kQuantizationCodes + 1> code;  // (257) the codes, then +inf
  std::array<uint8_t, kBuckets> positive;          // (kBuckets) start index for x >= +0
  std::array<uint8_t, kBuckets> negative;          // (kBuckets) start index for x <= -0
  uint8_t zero;                                    // the index of the code nearest to 0

  // The largest index whose code is <= bound, 0 when there is none.
  static int last_at_or_below(const Code& code, float bound) {
    int k = 0;
    for (int i = 0; i < kQuantizationCodes; i++)
      if (code[static_cast<size_t>(i)] <= bound) k = i;
    return k;
  }

  explicit NearestCodeTable(const Code& map) {
    std::copy(map.begin(), map.end(), code.begin());
    code[kQuantizationCodes] = std::numeric_limits<float>::infinity();
    for (int b = 0; b < kBuckets; b++) {
      const float low = bucket_low(b), high = bucket_high(b);
      const int positive_start = last_at_or_below(map, low);
      const int negative_start = last_at_or_below(map, -high);
      // The farthest the walk must go: the last code below the bucket's largest value.
      const int positive_last = last_at_or_below(map, std::nextafter(high, 0.0f));
      const int negative_last = last_at_or_below(map, -low);
      if (positive_last - positive_start > 2 || negative_last - negative_start > 2)
        throw InternalError("nearest-code table: more than two codes in bucket " +
                            std::to_string(b));
      positive[static_cast<size_t>(b)] = static_cast<uint8_t>(positive_start);
      negative[static_cast<size_t>(b)] = static_cast<uint8_t>(negative_start);
    }
    zero = nearest(0.0f);
  }

  // Note [Nearest code by bucket]; x finite.
  uint8_t nearest(float x) const {
    x = std::min(std::max(x, -1.0f), 1.0f);
    const int b = bucket_of(x);
    int k = std::signbit(x) ? negative[static_cast<size_t>(b)] : positive[static_cast<size_t>(b)];
    k += code[static_cast<size_t>(k + 1)] <= x ? 1 : 0;
    k += code[static_cast<size_t>(k + 1)] <= x ? 1 : 0;
    const float left = std::fabs(x - code[static_cast<size_t>(k)]);
    const float right = std::fabs(code[static_cast<size_t>(k + 1)] - x);
    return static_cast<uint8_t>(right < left ? k + 1 : k);
  }
};

const NearestCodeTable& nearest_code_table(bool is_signed) {
  static const NearestCodeTable signed_table(dynamic_quantization_map(true));
  static const NearestCodeTable unsigned_table(dynamic_quantization_map(false));
  return is_signed ? signed_table : unsigned_table;
}

// The bucket table when `code` is one of the dynamic maps (by address), else nullptr.
const NearestCodeTable* table_for(const Code& code) {
  if (&code == &dynamic_quantization_map(true)) return &nearest_code_table(true);
  if (&code == &dynamic_quantization_map(false)) return &nearest_code_table(false);
  return nullptr;
}

void check_quantization(const char* op, int64_t n, int64_t block) {
  require_non_negative(op, "n", n);
  require(block >= 1, op, "block = " + std::to_string(block) + " must be >= 1");
}

// max |x| over values, NaN when any value is NaN or infinite.
struct AbsMax {
  float max = 0.0f;
  bool finite = true;
  void add(float x) {
    const float a = std::fabs(x);
    max = a > max ? a : max;
    finite = finite && a <= std::numeric_limits<float>::max();
  }
  float value() const { return finite ? max : std::numeric_limits<float>::quiet_NaN(); }
};

// Quantises x (count) with the block's absmax into q: nearest(x / absmax), or the code of 0
// for an all-zero or non-finite block. `nearest` is the table's or the binary search.
template <typename Nearest>
void quantize_values(uint8_t* q, const float* x, int64_t count, float absmax, uint8_t zero,
                     const Nearest& nearest) {
  if (absmax == 0.0f || !std::isfinite(absmax)) {
    std::fill(q, q + count, zero);
    return;
  }
  for (int64_t j = 0; j < count; j++) q[j] = nearest(x[j] / absmax);
}

}  // namespace

const std::array<float, kQuantizationCodes>& dynamic_quantization_map(bool is_signed) {
  static const Code signed_map = build_dynamic_map(true);
  static const Code unsigned_map = build_dynamic_map(false);
  return is_signed ? signed_map : unsigned_map;
}

uint8_t nearest_code(const std::array<float, kQuantizationCodes>& code, float x) {
  // k: the largest index whose code is <= x (0 when none), in 8 halving steps.
  int k = 0;
  for (int step = kQuantizationCodes / 2; step > 0; step /= 2)
    k += code[static_cast<size_t>(k + step)] <= x ? step : 0;
  if (k == kQuantizationCodes - 1) return static_cast<uint8_t>(k);
  const float left = std::fabs(x - code[static_cast<size_t>(k)]);
  const float right = std::fabs(code[static_cast<size_t>(k + 1)] - x);
  return static_cast<uint8_t>(right < left ? k + 1 : k);
}

void quantize_blockwise(uint8_t* q, float* absmax, const float* x, int64_t n, int64_t block,
                        const std::array<float, kQuantizationCodes>& code) {
  check_quantization("quantize_blockwise", n, block);
  const int64_t blocks = quantization_block_count(n, block);
  const NearestCodeTable* table = table_for(code);
  const uint8_t zero = table != nullptr ? table->zero : nearest_code(code, 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t begin = b * block;
    const int64_t count = std::min(block, n - begin);
    AbsMax block_max;
    for (int64_t j = 0; j < count; j++) block_max.add(x[begin + j]);
    absmax[b] = block_max.value();
    if (table != nullptr) {
      quantize_values(q + begin, x + begin, count, absmax[b], zero,
                      [table](float value) { return table->nearest(value); });
    } else {
      quantize_values(q + begin, x + begin, count, absmax[b], zero,
                      [&code](float value) { return nearest_code(code, value); });
    }
  }
}

void dequantize_blockwise(float* x, const uint8_t* q, const float* absmax, int64_t n, int64_t block,
                          const std::array<float, kQuantizationCodes>& code) {
  check_quantization("dequantize_blockwise", n, block);
  const int64_t blocks = quantization_block_count(n, block);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t begin = b * block;
    const int64_t count = std::min(block, n - begin);
    const float scale = absmax[b];
    for (int64_t j = 0; j < count; j++) x[begin + j] = code[q[begin + j]] * scale;
  }
}

void quantize_blockwise_reference(uint8_t* q, float* absmax, const float* x, int64_t n,
                                  int64_t block,
                                  const std::array<float, kQuantizationCodes>& code) {
  check_quantization("quantize_blockwise_reference", n, block);
  // The nearest code by a linear scan: the first index of the smallest f32 distance.
  const auto nearest = [&code](float value) {
    int best = 0;
    for (int k = 1; k < kQuantizationCodes; k++) {
      if (std::fabs(value - code[static_cast<size_t>(k)]) <
          std::fabs(value - code[static_cast<size_t>(best)]))
        best = k;
    }
    return static_cast<uint8_t>(best);
  };
  for (int64_t b = 0; b < quantization_block_count(n, block); b++) {
    const int64_t begin = b * block;
    const int64_t count = std::min(block, n - begin);
    AbsMax block_max;
    for (int64_t j = 0; j < count; j++) block_max.add(x[begin + j]);
    absmax[b] = block_max.value();
    quantize_values(q + begin, x + begin, count, absmax[b], nearest(0.0f), nearest);
  }
}

namespace {

// One block of the 8-bit update (see the file comment of optimizer_8bit.h). The new m and v of
// an element are computed twice, once for the parameter and the new absmax and once to
// requantise them, rather than kept in a (block) buffer: the same f32 operations on the same
// inputs give the same bits.
template <bool kWorking, typename P, typename Gr, typename W>
void adamw_8bit_block(P* param, const Gr* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                      float* absmax_v, W* working, int64_t begin, int64_t count,
                      const detail::AdamWArithmetic& adamw, float grad_multiplier,
                      const ParameterRounding& rounding, const NearestCodeTable& code_m,
                      const NearestCodeTable& code_v) {
  const float old_absmax_m = *absmax_m, old_absmax_v = *absmax_v;
  float scaled[detail::kScaledBlock];  // (kScaledBlock) multiplier · grad of one chunk
  AbsMax max_m, max_v;
  for (int64_t chunk_begin = 0; chunk_begin < count; chunk_begin += detail::kScaledBlock) {
    const int64_t chunk = std::min(detail::kScaledBlock, count - chunk_begin);
    detail::scale_gradient(scaled, grad + begin + chunk_begin, chunk, grad_multiplier);
    for (int64_t j = 0; j < chunk; j++) {
      const int64_t i = begin + chunk_begin + j;
      const float m_new = adamw.first_moment(code_m.code[qm[i]] * old_absmax_m, scaled[j]);
      const float v_new = adamw.second_moment(code_v.code[qv[i]] * old_absmax_v, scaled[j]);
      max_m.add(m_new);
      max_v.add(v_new);
      const float updated = adamw.parameter(widen(param[i]), m_new, v_new);
      param[i] = detail::round_parameter<P>(updated, rounding, i);
      if constexpr (kWorking) working[i] = narrow<W>(updated);
    }
  }
  const float new_absmax_m = max_m.value(), new_absmax_v = max_v.value();
  const bool zero_m = new_absmax_m == 0.0f || !std::isfinite(new_absmax_m);
  const bool zero_v = new_absmax_v == 0.0f || !std::isfinite(new_absmax_v);
  for (int64_t chunk_begin = 0; chunk_begin < count; chunk_begin += detail::kScaledBlock) {
    const int64_t chunk = std::min(detail::kScaledBlock, count - chunk_begin);
    detail::scale_gradient(scaled, grad + begin + chunk_begin, chunk, grad_multiplier);
    for (int64_t j = 0; j < chunk; j++) {
      const int64_t i = begin + chunk_begin + j;
      const float m_new = adamw.first_moment(code_m.code[qm[i]] * old_absmax_m, scaled[j]);
      const float v_new = adamw.second_moment(code_v.code[qv[i]] * old_absmax_v, scaled[j]);
      qm[i] = zero_m ? code_m.zero : code_m.nearest(m_new / new_absmax_m);
      qv[i] = zero_v ? code_v.zero : code_v.nearest(v_new / new_absmax_v);
    }
  }
  *absmax_m = new_absmax_m;
  *absmax_v = new_absmax_v;
}

void check_8bit(const char* op, int64_t n, int64_t block, int64_t step) {
  check_quantization(op, n, block);
  require(step >= 1, op, "step = " + std::to_string(step) + " must be >= 1");
}

}  // namespace

template <typename P, typename Gr, typename W>
void adamw_8bit_update(P* param, const Gr* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                       float* absmax_v, W* working, int64_t n, int64_t block,
                       const AdamWHyperparameters& hp, int64_t step, float grad_multiplier,
                       const ParameterRounding& rounding) {
  check_8bit("adamw_8bit_update", n, block, step);
  const detail::AdamWArithmetic adamw(hp, step);
  const NearestCodeTable& code_m = nearest_code_table(true);
  const NearestCodeTable& code_v = nearest_code_table(false);
  const int64_t blocks = quantization_block_count(n, block);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t begin = b * block;
    const int64_t count = std::min(block, n - begin);
    if (working != nullptr) {
      adamw_8bit_block<true>(param, grad, qm, qv, absmax_m + b, absmax_v + b, working, begin, count,
                             adamw, grad_multiplier, rounding, code_m, code_v);
    } else {
      adamw_8bit_block<false>(param, grad, qm, qv, absmax_m + b, absmax_v + b, working, begin,
                              count, adamw, grad_multiplier, rounding, code_m, code_v);
    }
  }
}

void adamw_8bit_update_reference(float* param, const float* grad, uint8_t* qm, uint8_t* qv,
                                 float* absmax_m, float* absmax_v, int64_t n, int64_t block,
                                 const AdamWHyperparameters& hp, int64_t step) {
  check_8bit("adamw_8bit_update_reference", n, block, step);
  const Code& code_m = dynamic_quantization_map(true);
  const Code& code_v = dynamic_quantization_map(false);
  const detail::AdamWArithmetic adamw(hp, step);
  std::vector<float> m(static_cast<size_t>(n)), v(static_cast<size_t>(n));  // (n) f32 moments
  for (int64_t i = 0; i < n; i++) {
    const auto k = static_cast<size_t>(i);
    m[k] = adamw.first_moment(code_m[qm[i]] * absmax_m[i / block], grad[i]);
    v[k] = adamw.second_moment(code_v[qv[i]] * absmax_v[i / block], grad[i]);
    param[i] = adamw.parameter(param[i], m[k], v[k]);
  }
  quantize_blockwise_reference(qm, absmax_m, m.data(), n, block, code_m);
  quantize_blockwise_reference(qv, absmax_v, v.data(), n, block, code_v);
}

#define VRAMLAB_INSTANTIATE_8BIT(P, Gr, W)                                                         \
  template void adamw_8bit_update<P, Gr, W>(P*, const Gr*, uint8_t*, uint8_t*, float*, float*, W*, \
                                            int64_t, int64_t, const AdamWHyperparameters&,         \
                                            int64_t, float, const ParameterRounding&);
#define VRAMLAB_INSTANTIATE_8BIT_WORKING(P, Gr) \
  VRAMLAB_INSTANTIATE_8BIT(P, Gr, bf16_t)       \
  VRAMLAB_INSTANTIATE_8BIT(P, Gr, f16_t)
#define VRAMLAB_INSTANTIATE_8BIT_GRAD(P)      \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, float)  \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, bf16_t) \
  VRAMLAB_INSTANTIATE_8BIT_WORKING(P, f16_t)
VRAMLAB_INSTANTIATE_8BIT_GRAD(float)
VRAMLAB_INSTANTIATE_8BIT_GRAD(bf16_t)
#undef VRAMLAB_INSTANTIATE_8BIT_GRAD
#undef VRAMLAB_INSTANTIATE_8BIT_WORKING
#undef VRAMLAB_INSTANTIATE_8BIT

}  // namespace vramlab::kernels::cpu
