// Int8 block quantisation: the CUDA kernels under the SIMT emulator (the raw launchers under all
// three thread schedules, and the emulated backend on typed views) against the CPU kernels, bit
// for bit. The op harness compares against a double reference, which int8 outputs do not have;
// here the CPU kernels (tested against their own reference and properties in
// tests/kernels_cpu/test_quantize.cpp) are the reference, and both sides compute the same float
// formula (common/dtype/int8_block.h), so any difference is a bug, hence tolerance 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/memory/tensor_view.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cuda/ops.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/launch_options.h"

namespace vramlab::ops_test {
namespace {

namespace cpu = kernels::cpu;
namespace cuda = kernels::cuda;

// Values of very different magnitudes per block (scales from 1e-3 to 1e3), with a zero block, a
// NaN block, an inf block and a −inf block when there are enough blocks to spare them.
std::vector<float> test_input(int64_t n, int64_t block, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> exponent(-3.0, 3.0);
  std::vector<float> x(static_cast<size_t>(n));
  const int64_t blocks = cpu::int8_block_count(n, block);
  for (int64_t j = 0; j < blocks; j++) {
    const double magnitude = std::pow(10.0, exponent(generator));
    for (int64_t i = j * block; i < std::min(n, (j + 1) * block); i++) {
      x[static_cast<size_t>(i)] = static_cast<float>(magnitude * normal(generator));
    }
  }
  if (blocks >= 6) {
    for (int64_t i = block; i < std::min(n, 2 * block); i++) x[static_cast<size_t>(i)] = 0.0f;
    x[static_cast<size_t>(2 * block)] = std::numeric_limits<float>::quiet_NaN();
    x[static_cast<size_t>(3 * block)] = std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(4 * block)] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

// Bitwise equality of two buffers of T; the message names the first mismatch, the number of
// mismatches and the max |diff| among the finite ones (tolerance 0: any difference is 100%+).
template <class T>
::testing::AssertionResult same_bits(const std::string& what, const std::vector<T>& actual,
                                     const std::vector<T>& expected) {
  int64_t mismatches = 0, first = -1, worst = -1;
  double max_diff = 0.0;
  for (size_t i = 0; i < actual.size(); i++) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(T)) == 0) continue;
    mismatches++;
    if (first < 0) first = static_cast<int64_t>(i);
    const double diff =
        std::fabs(static_cast<double>(actual[i]) - static_cast<double>(expected[i]));
    if (std::isfinite(diff) && diff > max_diff) {
      max_diff = diff;
      worst = static_cast<int64_t>(i);
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  std::ostringstream message;
  message.precision(9);
  message << what << ": " << mismatches << " of " << actual.size()
          << " elements differ (tolerance: bitwise); first at index " << first << " (got "
          << static_cast<double>(actual[static_cast<size_t>(first)]) << ", CPU "
          << static_cast<double>(expected[static_cast<size_t>(first)]) << "); max |diff| "
          << max_diff << " at index " << worst;
  return ::testing::AssertionFailure() << message.str();
}

struct Quantized {
  std::vector<int8_t> q;      // (n)
  std::vector<float> scales;  // (blocks)
  std::vector<float> x_back;  // (n) dequantised
};

Quantized on_cpu(const std::vector<float>& x, int64_t block) {
  const auto n = static_cast<int64_t>(x.size());
  Quantized r{std::vector<int8_t>(x.size()),
              std::vector<float>(static_cast<size_t>(cpu::int8_block_count(n, block))),
              std::vector<float>(x.size())};
  cpu::quantize_int8(r.q.data(), r.scales.data(), x.data(), n, block);
  cpu::dequantize_int8(r.x_back.data(), r.q.data(), r.scales.data(), n, block);
  return r;
}

// Emulated device buffers (host memory from the emulator's allocator), freed on scope exit.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count, T fill)
      : count_(count),
        data_(static_cast<T*>(simt::device_malloc(std::max<size_t>(count, 1) * sizeof(T)))) {
    for (size_t i = 0; i < count; i++) data_[i] = fill;
  }
  ~DeviceBuffer() { simt::device_free(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return data_; }
  std::vector<T> to_host() const { return std::vector<T>(data_, data_ + count_); }

 private:
  size_t count_;
  T* data_;
};

// Garbage in every output first (q = 0x55, scales and x = 12345): a kernel must write all of it.
constexpr int8_t kGarbageQ = 0x55;
constexpr float kGarbage = 12345.0f;

enum class Path { launchers, backend };

Quantized emulated(const std::vector<float>& x, int64_t block, Path path) {
  const auto n = static_cast<int64_t>(x.size());
  const auto blocks = static_cast<size_t>(cpu::int8_block_count(n, block));
  DeviceBuffer<float> x_device(x.size(), 0.0f), scales(blocks, kGarbage), back(x.size(), kGarbage);
  DeviceBuffer<int8_t> q(x.size(), kGarbageQ);
  std::copy(x.begin(), x.end(), x_device.get());
  if (path == Path::launchers) {
    cuda::quantize_int8(q.get(), scales.get(), x_device.get(), n, block);
    cuda::dequantize_int8(back.get(), q.get(), scales.get(), n, block);
  } else {
    const auto kernels = nn::make_emulated_cuda_kernel_backend();
    const memory::TensorView xv(x_device.get(), DType::f32, {n}), qv(q.get(), DType::i8, {n}),
        sv(scales.get(), DType::f32, {static_cast<int64_t>(blocks)}),
        bv(back.get(), DType::f32, {n});
    kernels->quantize_int8(qv, sv, xv, block);
    kernels->dequantize_int8(bv, qv, sv, block);
  }
  return {q.to_host(), scales.to_host(), back.to_host()};
}

TEST(Int8QuantizeEmulated, LaunchersMatchTheCpuKernelsBitwiseUnderEverySchedule) {
  for (const simt::Schedule schedule :
       {simt::Schedule::kInOrder, simt::Schedule::kReverse, simt::Schedule::kRandom}) {
    simt::LaunchOptions options = simt::launch_options();
    options.schedule = schedule;
    options.seed = 20261123;
    const simt::ScopedLaunchOptions scoped(options);
    for (const int64_t n : {1, 7, 31, 33, 257, 1001}) {
      for (const int64_t block : {int64_t{1}, int64_t{7}, int64_t{32}, int64_t{33}, n}) {
        const auto x = test_input(n, block, static_cast<uint64_t>(n * 131 + block));
        const Quantized expected = on_cpu(x, block), actual = emulated(x, block, Path::launchers);
        std::ostringstream where;
        where << simt::schedule_name(schedule) << " n=" << n << " block=" << block;
        EXPECT_TRUE(same_bits("q " + where.str(), actual.q, expected.q));
        EXPECT_TRUE(same_bits("scales " + where.str(), actual.scales, expected.scales));
        EXPECT_TRUE(same_bits("dequantised " + where.str(), actual.x_back, expected.x_back));
      }
    }
  }
}

TEST(Int8QuantizeEmulated, EmulatedBackendMatchesTheCpuBackendBitwise) {
  const nn::CpuKernelBackend cpu_backend;
  for (const int64_t n : {5, 1000, 4099}) {
    for (const int64_t block : {int64_t{1}, int64_t{64}, n}) {
      const auto x = test_input(n, block, static_cast<uint64_t>(n + block));
      const auto blocks = cpu::int8_block_count(n, block);
      std::vector<int8_t> q(static_cast<size_t>(n), kGarbageQ);
      std::vector<float> scales(static_cast<size_t>(blocks), kGarbage),
          back(static_cast<size_t>(n), kGarbage);
      auto x_copy = x;
      const memory::TensorView xv(x_copy.data(), DType::f32, {n}), qv(q.data(), DType::i8, {n}),
          sv(scales.data(), DType::f32, {blocks}), bv(back.data(), DType::f32, {n});
      cpu_backend.quantize_int8(qv, sv, xv, block);
      cpu_backend.dequantize_int8(bv, qv, sv, block);
      const Quantized actual = emulated(x, block, Path::backend);
      const std::string where = " n=" + std::to_string(n) + " block=" + std::to_string(block);
      EXPECT_TRUE(same_bits("q" + where, actual.q, q));
      EXPECT_TRUE(same_bits("scales" + where, actual.scales, scales));
      EXPECT_TRUE(same_bits("dequantised" + where, actual.x_back, back));
    }
  }
}

}  // namespace
}  // namespace vramlab::ops_test
