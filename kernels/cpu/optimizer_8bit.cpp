// 8-bit AdamW: the dynamic map, block-wise quantization and the update (see optimizer_8bit.h).
//
// Note [Nearest code by bucket]. A binary search over 256 codes is 8 dependent loads and
// unpredictable branches per value, and the update quantises two values per parameter. For the
// two dynamic maps a table replaces it: |x| in [2^-23, 2) is cut into buckets by its exponent
// and its top 7 mantissa bits (everything below 2^-23 is one bucket, nearest to the code 0.0),
// per sign. Between two codes a and b the rule "b when |b - x| < |x - a| in f32" flips once as x
// grows (both rounded distances are monotone in x), so the nearest code changes only at one f32
// value per pair of neighbours, the threshold. The map's codes are at least 2^-7 apart relative
// to their size, so at most one threshold falls in a bucket; the table holds the bucket's first
// nearest code and its threshold, found by bisection with the binary search itself, and the
// lookup is two independent loads and one comparison, with no branch. The result is the binary
// search's, bit for bit; the build checks the one-threshold assumption. Other maps use the
// binary search.
//
// Note [AVX-512 passes]. Per block the update dequantises, runs AdamW's arithmetic, then
// requantises; the first and last passes are table lookups, which GCC vectorises only as
// gathers (one per table, eight lanes). With AVX-512 they are written by hand and stay exact
// because they only move bits, never round differently: dequantising looks up each byte of the
// f32 code in four 256-byte tables (vpermi2b, with VBMI) and multiplies by the same absmax;
// quantising divides by the same absmax (vdivps, correctly rounded like the scalar `/`), then
// finds the bucket from x's bits with integer operations on u = bits flipped below the sign
// when x < 0 (u grows with x, so positive and negative buckets are one contiguous index range),
// and replaces the threshold's f32 comparison by an integer one on the low 16 bits of u (inside
// a bucket the higher bits are fixed, so the two agree), with the code and the threshold in one
// 32-bit entry: one gather per 16 values. It matched nearest() on all 2^31 f32 in [-1, 1] for
// both maps. AdamW's arithmetic stays in the C++ loop so that it contracts to the same FMAs as
// adamw_update and the reference. Without AVX-512 the same tables run in plain loops.
#include "kernels/cpu/optimizer_8bit.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (_mm512_undefined_ps), which
// -Wmaybe-uninitialized reports wherever they inline (GCC bug 105593, fixed in GCC 13). Clang
// has no such warning, and -Werror turns its unknown-warning notice into an error.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#elif defined(__AVX512F__)
#include <immintrin.h>
#endif

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

// f32 values in increasing order as integers (for bisection over the values of an interval).
inline int64_t ordered_key(float x) {
  const auto bits = static_cast<int64_t>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  return std::signbit(x) ? -bits - 1 : bits;
}
inline float from_ordered_key(int64_t key) {
  return key < 0 ? -std::bit_cast<float>(static_cast<uint32_t>(-(key + 1)))
                 : std::bit_cast<float>(static_cast<uint32_t>(key));
}

struct NearestCodeTable {
  std::array<float, kQuantizationCodes> code;  // (256) the codes
  // (2 · kBuckets) per bucket, positive x first then negative x: the nearest code of the
  // bucket's smallest value, and the smallest value from which it is the next code (+inf when
  // the whole bucket has one nearest code).
  std::array<int32_t, 2 * kBuckets> first;
  std::array<float, 2 * kBuckets> threshold;
  // The table of nearest16, (kPackedZero + 1) entries key << 8 | first, indexed by u >> 16 -
  // kPackedBase where u = x's bits with the 31 lower ones flipped when x < 0 (a number that
  // grows with x): u >> 16 is |x|'s biased exponent · 128 + top 7 mantissa bits, or 32767 minus
  // it for x < 0, so index b is the bucket b of x > 0 and 2 · kBuckets - 1 - b that of x < 0;
  // every index outside [1, 2 · kBuckets - 2] (|x| below 2^-23, clamped as unsigned) is the
  // code of 0. Within a bucket b >= 1, |x| = bucket_low(b) + its low 16 bits, and
  // nearest(x) = first + (key(x) >= key) with key(x) = u's low 16 bits (complemented for x < 0,
  // as x >= threshold < 0 when |x| <= |threshold|); key = 2^16 when the bucket has no threshold.
  [[maybe_unused]] static constexpr int kPackedBase =  // only the AVX-512 path reads it
      static_cast<int>(kFirstBucketExponent << kBucketMantissaBits) - 1;
  static constexpr int kPackedZero = 2 * kBuckets;
  std::array<uint32_t, kPackedZero + 1> packed;
  alignas(64) std::array<uint8_t, 4 * kQuantizationCodes> planes;  // (4, 256) byte k of code
  uint8_t zero;  // the index of the code nearest to 0

  explicit NearestCodeTable(const Code& map) : code(map) {
    for (int side = 0; side < 2; side++) {
      for (int b = 0; b < kBuckets; b++) {
        const float low = bucket_low(b), last = std::nextafter(bucket_high(b), 0.0f);
        // The bucket's values, smallest first: [low, last] or [-last, -low].
        const float smallest = side == 0 ? low : -last, largest = side == 0 ? last : -low;
        const int lo = nearest_code(map, smallest), hi = nearest_code(map, largest);
        const auto at = static_cast<size_t>(side * kBuckets + b);
        first[at] = lo;
        threshold[at] = std::numeric_limits<float>::infinity();
        if (hi == lo) continue;
        if (hi != lo + 1)
          throw InternalError("nearest-code table: codes " + std::to_string(lo) + " to " +
                              std::to_string(hi) + " share bucket " + std::to_string(b));
        // Bisection: the nearest code is monotone in x (both f32 distances are monotone).
        int64_t below = ordered_key(smallest), above = ordered_key(largest);
        while (above - below > 1) {
          const int64_t middle = below + (above - below) / 2;
          (nearest_code(map, from_ordered_key(middle)) == lo ? below : above) = middle;
        }
        threshold[at] = from_ordered_key(above);
      }
    }
    for (int side = 0; side < 2; side++) {
      for (int b = 0; b < kBuckets; b++) {
        const auto at = static_cast<size_t>(side * kBuckets + b);
        uint32_t key = 1u << 16;
        if (std::isfinite(threshold[at])) {
          if (b == 0) throw InternalError("nearest-code table: a threshold in bucket 0");
          const uint32_t offset = (std::bit_cast<uint32_t>(threshold[at]) & 0x7FFFFFFFu) -
                                  std::bit_cast<uint32_t>(bucket_low(b));
          if (offset > 0xFFFFu) throw InternalError("nearest-code table: threshold off bucket");
          key = side == 0 ? offset : 0xFFFFu - offset;
        }
        packed[static_cast<size_t>(side == 0 ? b : 2 * kBuckets - 1 - b)] =
            static_cast<uint32_t>(first[at]) | key << 8;
      }
    }
    // Bucket 0 of either sign: the code of 0, no threshold (checked above).
    if (first[0] != first[kBuckets])
      throw InternalError("nearest-code table: +0 and -0 have different codes");
    packed[kPackedZero] = packed[0];
    for (int q = 0; q < kQuantizationCodes; q++)
      for (int k = 0; k < 4; k++)
        planes[static_cast<size_t>(kQuantizationCodes * k + q)] =
            static_cast<uint8_t>(std::bit_cast<uint32_t>(code[static_cast<size_t>(q)]) >> (8 * k));
    zero = nearest(0.0f);
  }

  // Note [Nearest code by bucket]. Branch-free, so that loops over it vectorize; x is clamped to
  // [-1, 1] (the codes' range), a NaN to -1 (callers give a finite x; this only keeps the table
  // index in range).
  uint8_t nearest(float x) const {
    x = std::min(1.0f, std::max(-1.0f, x));
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const size_t at = static_cast<size_t>(bucket_of(x)) + (bits >> 31) * kBuckets;
    return static_cast<uint8_t>(first[at] + (x >= threshold[at] ? 1 : 0));
  }

#if defined(__AVX512F__)
  // nearest() on 16 lanes, x in [-1, 1] (see `packed`).
  __m512i nearest16(__m512 x) const {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i u = _mm512_xor_si512(bits, _mm512_srai_epi32(bits, 31));
    __m512i at = _mm512_sub_epi32(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(kPackedBase));
    at = _mm512_min_epu32(at, _mm512_set1_epi32(kPackedZero));
    const __m512i entry = _mm512_i32gather_epi32(at, packed.data(), 4);
    // (key(x) << 8) | 0xFF >= entry exactly when key(x) >= the entry's key.
    const __m512i key =
        _mm512_ternarylogic_epi32(_mm512_slli_epi32(u, 8), _mm512_set1_epi32(0xFFFF00),
                                  _mm512_set1_epi32(0xFF), 0xEA);  // a & b | c
    return _mm512_mask_add_epi32(entry, _mm512_cmpge_epi32_mask(key, entry), entry,
                                 _mm512_set1_epi32(1));
  }
#endif

  // x[j] = code[q[j]] · scale, j < count.
  void dequantize(float* x, const uint8_t* q, int64_t count, float scale) const {
    int64_t j = 0;
#if defined(__AVX512VBMI__)
    const __m512 s = _mm512_set1_ps(scale);
    // Byte k of lane i of the result's register r must come from q[16 r + i]; the two unpack
    // steps below take their lane i of register r from q's position 16 (i / 4) + 4 r + i % 4,
    // so q is first permuted by that transposition of 4-byte groups.
    alignas(64) static constexpr std::array<uint8_t, 64> kOrder = [] {
      std::array<uint8_t, 64> order{};
      for (int lane = 0; lane < 4; lane++)
        for (int r = 0; r < 4; r++)
          for (int i = 0; i < 4; i++)
            order[16 * lane + 4 * r + i] = static_cast<uint8_t>(16 * r + 4 * lane + i);
      return order;
    }();
    const __m512i order = _mm512_load_si512(kOrder.data());
    __m512i plane[4][4];
    for (int k = 0; k < 4; k++)
      for (int r = 0; r < 4; r++) plane[k][r] = _mm512_load_si512(planes.data() + 256 * k + 64 * r);
    for (; j + 64 <= count; j += 64) {
      const __m512i index = _mm512_permutexvar_epi8(order, _mm512_loadu_si512(q + j));
      const __mmask64 upper = _mm512_movepi8_mask(index);
      __m512i byte[4];
      for (int k = 0; k < 4; k++)
        byte[k] =
            _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(plane[k][0], index, plane[k][1]),
                                   _mm512_permutex2var_epi8(plane[k][2], index, plane[k][3]));
      const __m512i low_lo = _mm512_unpacklo_epi8(byte[0], byte[1]);
      const __m512i low_hi = _mm512_unpackhi_epi8(byte[0], byte[1]);
      const __m512i high_lo = _mm512_unpacklo_epi8(byte[2], byte[3]);
      const __m512i high_hi = _mm512_unpackhi_epi8(byte[2], byte[3]);
      _mm512_storeu_ps(
          x + j, _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(low_lo, high_lo)), s));
      _mm512_storeu_ps(
          x + j + 16,
          _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(low_lo, high_lo)), s));
      _mm512_storeu_ps(
          x + j + 32,
          _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(low_hi, high_hi)), s));
      _mm512_storeu_ps(
          x + j + 48,
          _mm512_mul_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(low_hi, high_hi)), s));
    }
#endif
#pragma omp simd
    for (int64_t k = j; k < count; k++) x[k] = code[q[k]] * scale;
  }

  // q[j] = nearest(x[j] / divisor), j < count.
  void quantize(uint8_t* q, const float* x, int64_t count, float divisor) const {
    int64_t j = 0;
#if defined(__AVX512F__)
    const __m512 d = _mm512_set1_ps(divisor);
    for (; j + 16 <= count; j += 16) {
      const __m512i k = nearest16(_mm512_div_ps(_mm512_loadu_ps(x + j), d));
      _mm512_mask_cvtepi32_storeu_epi8(q + j, 0xFFFF, k);  // the low bytes: nearest(x / d)
    }
#endif
#pragma omp simd
    for (int64_t k = j; k < count; k++) q[k] = nearest(x[k] / divisor);
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
    finite = finite & (a <= std::numeric_limits<float>::max());
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
      if (absmax[b] == 0.0f || !std::isfinite(absmax[b]))
        std::fill(q + begin, q + begin + count, zero);
      else
        table->quantize(q + begin, x + begin, count, absmax[b]);
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

// Blocks up to this size keep their new f32 moments on the stack between the two passes.
constexpr int64_t kBufferedBlock = 4096;

// One block of the 8-bit update (see the file comment of optimizer_8bit.h): a first pass
// computes the new moments, the parameter and the new absmax, a second requantises the moments
// with it. kBuffered: the new moments are kept in two (kBufferedBlock) stack arrays between the
// passes; otherwise (a larger block) the second pass computes them again, the same f32
// operations on the same inputs, so the same bits. kScaled false (grad_multiplier 1, buffered
// blocks only): g = widen(grad[i]) directly, as adamw_update does, the same value as 1 · g.
template <bool kWorking, bool kBuffered, bool kScaled, typename P, typename Gr, typename W>
void adamw_8bit_block(P* param, const Gr* grad, uint8_t* qm, uint8_t* qv, float* absmax_m,
                      float* absmax_v, W* working, int64_t begin, int64_t count,
                      const detail::AdamWArithmetic& adamw, float grad_multiplier,
                      const ParameterRounding& rounding, const NearestCodeTable& code_m,
                      const NearestCodeTable& code_v) {
  const float old_absmax_m = *absmax_m, old_absmax_v = *absmax_v;
  float scaled[detail::kScaledBlock];           // (kScaledBlock) multiplier · grad of one chunk
  float new_m[kBuffered ? kBufferedBlock : 1];  // (count) the new m when kBuffered
  float new_v[kBuffered ? kBufferedBlock : 1];  // (count) the new v when kBuffered
  constexpr float kLargest = std::numeric_limits<float>::max();
  float max_m = 0.0f, max_v = 0.0f;  // max |m_new|, max |v_new| (NaN ignored here)
  int finite_m = 1, finite_v = 1;    // 0 once a new moment is NaN or infinite
  if constexpr (kBuffered) {
    code_m.dequantize(new_m, qm + begin, count, old_absmax_m);
    code_v.dequantize(new_v, qv + begin, count, old_absmax_v);
  }
  for (int64_t chunk_begin = 0; chunk_begin < count; chunk_begin += detail::kScaledBlock) {
    const int64_t chunk = std::min(detail::kScaledBlock, count - chunk_begin);
    if constexpr (kScaled)
      detail::scale_gradient(scaled, grad + begin + chunk_begin, chunk, grad_multiplier);
#pragma omp simd reduction(max : max_m, max_v) reduction(& : finite_m, finite_v)
    for (int64_t j = 0; j < chunk; j++) {
      const int64_t i = begin + chunk_begin + j;
      const float g = kScaled ? scaled[j] : widen(grad[i]);
      float m_old, v_old;
      if constexpr (kBuffered) {
        m_old = new_m[chunk_begin + j];
        v_old = new_v[chunk_begin + j];
      } else {
        m_old = code_m.code[qm[i]] * old_absmax_m;
        v_old = code_v.code[qv[i]] * old_absmax_v;
      }
      const float m_new = adamw.first_moment(m_old, g);
      const float v_new = adamw.second_moment(v_old, g);
      max_m = std::max(max_m, std::fabs(m_new));
      max_v = std::max(max_v, std::fabs(v_new));
      finite_m &= std::fabs(m_new) <= kLargest ? 1 : 0;
      finite_v &= std::fabs(v_new) <= kLargest ? 1 : 0;
      if constexpr (kBuffered) {
        new_m[chunk_begin + j] = m_new;
        new_v[chunk_begin + j] = v_new;
      }
      const float updated = adamw.parameter(widen(param[i]), m_new, v_new);
      param[i] = detail::round_parameter<P>(updated, rounding, i);
      if constexpr (kWorking) working[i] = narrow<W>(updated);
    }
  }
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  const float new_absmax_m = finite_m ? max_m : kNaN, new_absmax_v = finite_v ? max_v : kNaN;
  // An all-zero or non-finite block stores the code of 0 (the file comment of the header);
  // dividing by 1 instead keeps the loop below free of branches.
  const bool zero_m = new_absmax_m == 0.0f || !std::isfinite(new_absmax_m);
  const bool zero_v = new_absmax_v == 0.0f || !std::isfinite(new_absmax_v);
  const float divisor_m = zero_m ? 1.0f : new_absmax_m, divisor_v = zero_v ? 1.0f : new_absmax_v;
  if constexpr (kBuffered) {
    if (!zero_m) code_m.quantize(qm + begin, new_m, count, divisor_m);
    if (!zero_v) code_v.quantize(qv + begin, new_v, count, divisor_v);
  } else {
    for (int64_t chunk_begin = 0; chunk_begin < count; chunk_begin += detail::kScaledBlock) {
      const int64_t chunk = std::min(detail::kScaledBlock, count - chunk_begin);
      detail::scale_gradient(scaled, grad + begin + chunk_begin, chunk, grad_multiplier);
#pragma omp simd
      for (int64_t j = 0; j < chunk; j++) {
        const int64_t i = begin + chunk_begin + j;
        const float m_new = adamw.first_moment(code_m.code[qm[i]] * old_absmax_m, scaled[j]);
        const float v_new = adamw.second_moment(code_v.code[qv[i]] * old_absmax_v, scaled[j]);
        qm[i] = code_m.nearest(m_new / divisor_m);
        qv[i] = code_v.nearest(v_new / divisor_v);
      }
    }
  }
  // count >= 1 for every block; the test tells GCC so (it warns of a negative memset size).
  if (zero_m && count > 0) std::fill(qm + begin, qm + begin + count, code_m.zero);
  if (zero_v && count > 0) std::fill(qv + begin, qv + begin + count, code_v.zero);
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
                       const AdamWHyperparameters& hp, const UpdateStep& at) {
  // Plain names, not a structured binding: the block lambda below captures them.
  const int64_t step = at.step;
  const float grad_multiplier = at.grad_multiplier;
  const ParameterRounding& rounding = at.rounding;
  check_8bit("adamw_8bit_update", n, block, step);
  const detail::AdamWArithmetic adamw(hp, step);
  const NearestCodeTable& code_m = nearest_code_table(true);
  const NearestCodeTable& code_v = nearest_code_table(false);
  const int64_t blocks = quantization_block_count(n, block);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t begin = b * block;
    const int64_t count = std::min(block, n - begin);
    const auto run = [&]<bool kWorking, bool kBuffered, bool kScaled>() {
      adamw_8bit_block<kWorking, kBuffered, kScaled>(param, grad, qm, qv, absmax_m + b,
                                                     absmax_v + b, working, begin, count, adamw,
                                                     grad_multiplier, rounding, code_m, code_v);
    };
    const bool buffered = count <= kBufferedBlock, scaled = grad_multiplier != 1.0f;
    if (working != nullptr) {
      if (!buffered)
        run.template operator()<true, false, true>();
      else if (scaled)
        run.template operator()<true, true, true>();
      else
        run.template operator()<true, true, false>();
    } else {
      if (!buffered)
        run.template operator()<false, false, true>();
      else if (scaled)
        run.template operator()<false, true, true>();
      else
        run.template operator()<false, true, false>();
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
                                            const UpdateStep&);
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
