// Checks shared by the communicator tests that run as real ranks (MPI, NCCL): every rank fills
// its buffers from a hash of (test seed, rank, element), so any rank can regenerate every other
// rank's data and compute the expected result locally: sums in double against a bound from the
// summation order (one rounding per pairwise addition), copies bit for bit, and byte counters
// against ring_bytes_sent / ring_bytes_received.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "common/dist/communicator.h"
#include "common/dtype/convert.h"
#include "common/platform/errors.h"

namespace vramlab::dist::checks {

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Rank `rank`'s element i in test `seed`: for float dtypes, uniform in (−1, 1) times 2^k with k in
// [−6, 6], rounded to the dtype (f16 reaches its subnormals), one in 64 a signed zero; for the
// others, random bits. Returned as the element's bits.
inline uint64_t element_bits(DType dtype, uint64_t seed, int64_t rank, int64_t i) {
  const uint64_t h = mix(mix(mix(seed) + static_cast<uint64_t>(rank)) + static_cast<uint64_t>(i));
  float value = static_cast<float>(static_cast<double>(h >> 40) / 8388608.0 - 1.0);  // 2^23
  value = std::ldexp(value, static_cast<int>((h & 0xF) % 13) - 6);
  if (((h >> 8) & 63) == 0) value = ((h >> 14) & 1) ? -0.0f : 0.0f;
  switch (dtype) {
    case DType::f32:
      return f32_to_bits(value);
    case DType::bf16:
      return f32_to_bf16_bits(value);
    case DType::f16:
      return f32_to_f16_bits(value);
    default:
      return h;
  }
}

inline double value_of(DType dtype, uint64_t bits) {
  switch (dtype) {
    case DType::f32:
      return bits_to_f32(static_cast<uint32_t>(bits));
    case DType::bf16:
      return bf16_bits_to_f32(static_cast<uint16_t>(bits));
    case DType::f16:
      return f16_bits_to_f32(static_cast<uint16_t>(bits));
    default:
      throw InternalError("value_of: not a float dtype");
  }
}

// A host buffer of any dtype, read and written as element bits (x86 is little-endian: an
// element's bits are the low bytes of the uint64_t).
class HostBuffer {
 public:
  HostBuffer(DType dtype, int64_t numel)
      : dtype_(dtype), numel_(numel), bytes_(static_cast<size_t>(numel) * element_size(), 0xAB) {}
  [[nodiscard]] TensorView view() { return TensorView(bytes_.data(), dtype_, {numel_}); }
  [[nodiscard]] TensorView slice(int64_t first, int64_t count) {
    return view().slice(first, {count});
  }
  [[nodiscard]] void* data() { return bytes_.data(); }
  [[nodiscard]] size_t size_bytes() const { return bytes_.size(); }
  [[nodiscard]] uint64_t get(int64_t i) const {
    uint64_t bits = 0;
    std::memcpy(&bits, bytes_.data() + i * element_size(), element_size());
    return bits;
  }
  void set(int64_t i, uint64_t bits) {
    std::memcpy(bytes_.data() + i * element_size(), &bits, element_size());
  }
  // Elements [first, first + count) get rank `rank`'s data of test `seed` at indices
  // [data_first, data_first + count).
  void fill(uint64_t seed, int64_t rank, int64_t first, int64_t count, int64_t data_first) {
    for (int64_t j = 0; j < count; ++j)
      set(first + j, element_bits(dtype_, seed, rank, data_first + j));
  }
  void fill(uint64_t seed, int64_t rank) { fill(seed, rank, 0, numel_, 0); }
  [[nodiscard]] uint64_t checksum() const {
    uint64_t h = 0;
    for (int64_t i = 0; i < numel_; ++i) h = mix(h ^ get(i));
    return h;
  }

 private:
  [[nodiscard]] size_t element_size() const { return dtype_size_bytes(dtype_); }
  DType dtype_;
  int64_t numel_;
  std::vector<unsigned char> bytes_;  // (numel) dtype
};

// The rounding error of one pairwise addition as our MPI sums it: the f32 sum of the two inputs
// rounded to the dtype (two roundings for 16-bit dtypes), relative and, for f16's subnormals,
// absolute.
struct AdditionError {
  double relative;
  double absolute;
};
inline AdditionError addition_error(DType dtype) {
  const double u32 = std::ldexp(1.0, -24);
  switch (dtype) {
    case DType::bf16: {
      const double u = std::ldexp(1.0, -8);
      return {u + u32 + u * u32, 0.0};
    }
    case DType::f16: {
      const double u = std::ldexp(1.0, -11);
      return {u + u32 + u * u32, std::ldexp(1.0, -25)};
    }
    default:
      return {u32, 0.0};
  }
}

// Checks got's elements [first, first + count) against Σ over `members` of their data at indices
// [data_first, data_first + count): whatever order and tree MPI sums N terms in, each passes
// through at most N − 1 additions, so |error| ≤ γ(N−1)·Σ|x| (Higham, Accuracy and Stability of
// Numerical Algorithms, §4.2) plus f16's absolute subnormal error per addition.
inline ::testing::AssertionResult sums_match(const HostBuffer& got, DType dtype, int64_t first,
                                             int64_t count, int64_t data_first, uint64_t seed,
                                             const std::vector<int64_t>& members) {
  const auto additions = static_cast<double>(members.size() - 1);
  const AdditionError e = addition_error(dtype);
  const double gamma = additions * e.relative / (1.0 - additions * e.relative);
  const double absolute = additions * e.absolute * (1.0 + gamma);
  double worst_ratio = 0.0, worst_diff = 0.0, worst_tolerance = 0.0;
  int64_t worst = -1, violations = 0;
  for (int64_t j = 0; j < count; ++j) {
    double sum = 0.0, magnitude = 0.0;
    for (int64_t member : members) {
      const double x = value_of(dtype, element_bits(dtype, seed, member, data_first + j));
      sum += x;
      magnitude += std::fabs(x);
    }
    const double diff = std::fabs(value_of(dtype, got.get(first + j)) - sum);
    const double tolerance = gamma * magnitude + absolute;
    const double ratio = diff == 0.0 ? 0.0 : (tolerance == 0.0 ? INFINITY : diff / tolerance);
    if (ratio > 1.0 || std::isnan(diff)) ++violations;
    if (worst < 0 || ratio > worst_ratio || std::isnan(diff)) {
      worst_ratio = ratio;
      worst_diff = diff;
      worst_tolerance = tolerance;
      worst = j;
    }
  }
  std::ostringstream what;
  what << dtype_name(dtype) << " sum of " << members.size() << " ranks over " << count
       << " elements: " << violations << " beyond tolerance; max |diff| " << worst_diff
       << " at element " << worst << " (tolerance " << worst_tolerance << ", "
       << 100.0 * worst_ratio << "% of it)";
  if (violations == 0) return ::testing::AssertionSuccess() << what.str();
  return ::testing::AssertionFailure() << what.str();
}

// Checks got's elements [first, first + count) bit for bit against rank `rank`'s data at
// [data_first, data_first + count).
inline ::testing::AssertionResult copies_match(const HostBuffer& got, DType dtype, int64_t first,
                                               int64_t count, int64_t data_first, uint64_t seed,
                                               int64_t rank) {
  const uint64_t mask = dtype_size_bytes(dtype) == 8
                            ? ~uint64_t{0}
                            : (uint64_t{1} << (8 * dtype_size_bytes(dtype))) - 1;
  int64_t mismatches = 0, first_mismatch = -1;
  for (int64_t j = 0; j < count; ++j) {
    if (got.get(first + j) != (element_bits(dtype, seed, rank, data_first + j) & mask)) {
      if (first_mismatch < 0) first_mismatch = j;
      ++mismatches;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  // Formatted apart: AssertionResult's << does not keep std::hex from one value to the next.
  std::ostringstream what;
  what << dtype_name(dtype) << " copy of rank " << rank << "'s " << count
       << " elements: " << mismatches << " differ, the first at element " << first_mismatch
       << " (got bits 0x" << std::hex << got.get(first + first_mismatch) << ", expected 0x"
       << (element_bits(dtype, seed, rank, data_first + first_mismatch) & mask) << ")";
  return ::testing::AssertionFailure() << what.str();
}

// Checks that one call of `collective` was counted in `traffic` with the ring algorithm's bytes.
inline ::testing::AssertionResult counted(const Communicator& comm,
                                          const CommunicationStats& before, Collective collective,
                                          Traffic traffic, int64_t elements, int64_t element_bytes,
                                          int64_t root = 0) {
  const auto c = static_cast<size_t>(collective), t = static_cast<size_t>(traffic);
  const CallCounts& was = before.calls[c][t];
  const CallCounts& is = comm.stats().calls[c][t];
  const int64_t sent =
      ring_bytes_sent(collective, elements, element_bytes, comm.rank(), comm.world_size(), root);
  const int64_t received = ring_bytes_received(collective, elements, element_bytes, comm.rank(),
                                               comm.world_size(), root);
  if (is.calls - was.calls == 1 && is.bytes_sent - was.bytes_sent == sent &&
      is.bytes_received - was.bytes_received == received && is.seconds >= was.seconds)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << collective_name(collective) << "/" << traffic_name(traffic) << " of " << elements
         << " elements: counted " << is.calls - was.calls << " calls, "
         << is.bytes_sent - was.bytes_sent << " bytes sent, "
         << is.bytes_received - was.bytes_received << " received; expected 1 call, " << sent
         << " sent, " << received << " received";
}

inline std::vector<int64_t> all_ranks(int64_t world_size) {
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < world_size; ++r) ranks.push_back(r);
  return ranks;
}

}  // namespace vramlab::dist::checks
