// The op harness: every op of op_table.cpp on every backend, against the double CPU reference.
// One gtest per op × backend × schedule, each running all of the op's shapes:
//   cpu_fast                    the OpenMP/OpenBLAS CPU kernels of kernels/cpu, called directly
//   emulated_v1/v2_<schedule>   the CUDA kernels under the SIMT emulator, with its in-order,
//                               reverse and random thread schedules (a race shows up as a mismatch
//                               or a report under at least one of them)
//   cuda_v1/v2                  the nvcc-built kernels on a real GPU; skipped with the reason when
//                               the build has no nvcc or the machine has no GPU
// and, for the ops a nn::KernelBackend has (the calls training makes), through the backend on
// typed views, at the op's backend shapes:
//   cpu_backend                 CpuKernelBackend on host memory (its GEMMs are parallel_linear.h)
//   emulated_backend_<schedule> the emulated CUDA backend (v2 kernels), in-order and random
//   gpu_backend                 the GPU CUDA backend on GPU memory; skipped like cuda_v1/v2
//   meta_backend                the meta backend on host memory: it must run nothing and throw
//                               nothing, so every buffer keeps its initial bytes (sum's returned
//                               double, which the harness stores, must be meta's 0)
// Run: build/tests/bin/test_ops [--gtest_filter='*layernorm*']
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/nn/meta_kernel_backend.h"
#include "common/platform/gpu_probe.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/launch_options.h"
#include "tests/ops/op_harness.h"
#include "tests/ops/planted_race.h"

#if VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vramlab::ops_test {
namespace {

using kernels::cuda::KernelVersion;

enum class Backend {
  cpu_fast,
  emulated,
  gpu,
  cpu_backend,
  emulated_backend,
  gpu_backend,
  meta_backend,
};

bool through_kernel_backend(Backend backend) {
  return backend == Backend::cpu_backend || backend == Backend::emulated_backend ||
         backend == Backend::gpu_backend || backend == Backend::meta_backend;
}

struct Case {
  std::size_t op_index;
  Backend backend;
  KernelVersion version;
  simt::Schedule schedule;
};

constexpr double kF64Tolerance = 1e-9;
constexpr std::uint64_t kRandomScheduleSeed = 20261122;

std::string case_name(const Case& c) {
  const OpSpec& op = emulated_op_table()[c.op_index];
  switch (c.backend) {
    case Backend::cpu_fast:
      return op.name + "_cpu_fast";
    case Backend::emulated:
      return op.name + "_emulated_" + kernels::cuda::kernel_version_name(c.version) + "_" +
             simt::schedule_name(c.schedule);
    case Backend::gpu:
      return op.name + "_cuda_" + kernels::cuda::kernel_version_name(c.version);
    case Backend::cpu_backend:
      return op.name + "_cpu_backend";
    case Backend::emulated_backend:
      return op.name + "_emulated_backend_" + simt::schedule_name(c.schedule);
    case Backend::gpu_backend:
      return op.name + "_gpu_backend";
    case Backend::meta_backend:
      return op.name + "_meta_backend";
  }
  return op.name;
}

// gtest prints a parameter with this (instead of its bytes) in failure lists.
void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(c);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const auto& table = emulated_op_table();
  for (std::size_t i = 0; i < table.size(); i++) {
    std::vector<KernelVersion> versions{KernelVersion::v1};
    if (table[i].has_v2) versions.push_back(KernelVersion::v2);
    cases.push_back({i, Backend::cpu_fast, KernelVersion::v1, simt::Schedule::kInOrder});
    for (KernelVersion v : versions) {
      for (simt::Schedule s :
           {simt::Schedule::kInOrder, simt::Schedule::kReverse, simt::Schedule::kRandom}) {
        cases.push_back({i, Backend::emulated, v, s});
      }
    }
    for (KernelVersion v : versions)
      cases.push_back({i, Backend::gpu, v, simt::Schedule::kInOrder});
    if (!table[i].backend) continue;
    // The backend's kernels are the same v2 kernels the emulated_v2 columns already run under
    // all three schedules; two schedules here test the glue around them.
    cases.push_back({i, Backend::cpu_backend, KernelVersion::v2, simt::Schedule::kInOrder});
    for (simt::Schedule s : {simt::Schedule::kInOrder, simt::Schedule::kRandom}) {
      cases.push_back({i, Backend::emulated_backend, KernelVersion::v2, s});
    }
    cases.push_back({i, Backend::gpu_backend, KernelVersion::v2, simt::Schedule::kInOrder});
    cases.push_back({i, Backend::meta_backend, KernelVersion::v2, simt::Schedule::kInOrder});
  }
  return cases;
}

std::size_t element_bytes(Dtype dtype) {
  return dtype == Dtype::f64   ? sizeof(double)
         : dtype == Dtype::i32 ? sizeof(int32_t)
                               : sizeof(float);
}

// Where a backend's buffers live; misaligned buffers are shifted by 4 bytes.
class Memory {
 public:
  virtual ~Memory() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual void to_device(void* device, const void* host, std::size_t bytes) = 0;
  virtual void to_host(void* host, const void* device, std::size_t bytes) = 0;
  virtual void synchronize() {}
};

class HostMemory final : public Memory {
 public:
  void* allocate(std::size_t bytes) override { return simt::device_malloc(bytes); }
  void release(void* pointer) override { simt::device_free(pointer); }
  void to_device(void* device, const void* host, std::size_t bytes) override {
    if (bytes != 0) std::memcpy(device, host, bytes);
  }
  void to_host(void* host, const void* device, std::size_t bytes) override {
    if (bytes != 0) std::memcpy(host, device, bytes);
  }
};

#if VRAMLAB_HAVE_CUDA
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
class GpuMemory final : public Memory {
 public:
  void* allocate(std::size_t bytes) override {
    void* pointer = nullptr;
    check(cudaMalloc(&pointer, bytes), "cudaMalloc");
    return pointer;
  }
  void release(void* pointer) override { cudaFree(pointer); }
  void to_device(void* device, const void* host, std::size_t bytes) override {
    check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void to_host(void* host, const void* device, std::size_t bytes) override {
    check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  void synchronize() override { check(cudaDeviceSynchronize(), "kernel"); }
};
#endif

// The seeded initial contents of one buffer, as bytes of its dtype.
std::vector<unsigned char> initial_bytes(const BufferSpec& spec, const Shape& shape,
                                         std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(spec.count) *
                                   element_bytes(spec.dtype));
  for (int64_t i = 0; i < spec.count; i++) {
    if (spec.dtype == Dtype::i32) {
      std::uniform_int_distribution<int64_t> token(0, std::max<int64_t>(shape.V, 1) - 1);
      const auto value = static_cast<int32_t>(token(generator));
      std::memcpy(bytes.data() + i * 4, &value, 4);
      continue;
    }
    double value;
    if (spec.init == Init::positive) {
      value = std::uniform_real_distribution<double>(0.5, 1.5)(generator);
    } else {
      value = std::normal_distribution<double>(0.0, spec.scale)(generator);
    }
    if (spec.dtype == Dtype::f64) {
      std::memcpy(bytes.data() + i * 8, &value, 8);
    } else {
      const auto f = static_cast<float>(value);
      std::memcpy(bytes.data() + i * 4, &f, 4);
    }
  }
  return bytes;
}

// The value of element i of a buffer as double (f32 and f64 buffers only).
double element(const std::vector<unsigned char>& bytes, Dtype dtype, int64_t i) {
  if (dtype == Dtype::f64) {
    double value;
    std::memcpy(&value, bytes.data() + i * 8, 8);
    return value;
  }
  float value;
  std::memcpy(&value, bytes.data() + i * 4, 4);
  return value;
}

// Normalized max error of one compared buffer; a failure message names the worst element.
::testing::AssertionResult compare(const std::string& what, const BufferSpec& spec,
                                   const std::vector<unsigned char>& actual,
                                   const std::vector<double>& reference, double tolerance) {
  double max_reference = 0.0, max_diff = 0.0;
  int64_t worst = -1;
  for (int64_t i = 0; i < spec.count; i++) {
    const double a = element(actual, spec.dtype, i), r = reference[static_cast<std::size_t>(i)];
    if (!std::isfinite(r) || !std::isfinite(a)) {
      if (a == r || (std::isnan(a) && std::isnan(r))) continue;
      return ::testing::AssertionFailure()
             << what << ", buffer " << spec.name << ": element " << i << " is " << a
             << " where the reference has " << r << " (non-finite values must match exactly)";
    }
    max_reference = std::max(max_reference, std::fabs(r));
    if (std::fabs(a - r) > max_diff) {
      max_diff = std::fabs(a - r);
      worst = i;
    }
  }
  const double error = max_diff / std::max(max_reference, 1e-30);
  if (error <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ", buffer " << spec.name << ": normalized max error " << error << " = "
         << 100.0 * error / tolerance << "% of the tolerance " << tolerance << "; max |diff| "
         << max_diff << " at index " << worst << " (got " << element(actual, spec.dtype, worst)
         << ", reference " << reference[static_cast<std::size_t>(worst)] << ", max |reference| "
         << max_reference << ")";
}

// How one column runs an op: which call, on which memory.
struct Column {
  Backend backend = Backend::cpu_fast;
  KernelVersion version = KernelVersion::v1;
  Memory* memory = nullptr;                    // device memory; nullptr for cpu_fast
  const nn::KernelBackend* kernels = nullptr;  // the backend columns
};

DType view_dtype(Dtype dtype) {
  return dtype == Dtype::i32 ? DType::i32 : DType::f32;
}

// The meta backend must leave every buffer as it found it (nothing runs on meta); an f64 buffer
// holds what its sum() returned, which is 0.
void expect_untouched(const std::string& what, const std::vector<BufferSpec>& specs,
                      const std::vector<std::vector<unsigned char>>& initial,
                      const std::vector<std::vector<unsigned char>>& results) {
  for (std::size_t k = 0; k < specs.size(); k++) {
    if (specs[k].dtype == Dtype::f64) {
      EXPECT_EQ(element(results[k], Dtype::f64, 0), 0.0)
          << what << ", buffer " << specs[k].name << ": the meta backend returned a nonzero sum";
      continue;
    }
    const auto mismatch = std::mismatch(initial[k].begin(), initial[k].end(), results[k].begin());
    EXPECT_TRUE(mismatch.first == initial[k].end())
        << what << ", buffer " << specs[k].name << ": byte "
        << (mismatch.first - initial[k].begin()) << " of " << initial[k].size()
        << " changed, but nothing may run on meta";
  }
}

// Every buffer gets kSlackBytes after its end (and, misaligned, the shift bytes before its
// start) filled with a canary: a quiet-NaN f32 bit pattern, so a kernel that reads past the end
// poisons its result and one that writes past the end changes the canary, which check_canary
// reports after every kernel. Each buffer's NaN has its own payload: a NaN read past one buffer's
// end and stored past another's keeps its payload on x86, and must not look like the canary.
constexpr std::size_t kSlackBytes = 16;

std::uint32_t canary_word(std::size_t buffer_index) {
  return 0x7fc5a5a5u + static_cast<std::uint32_t>(buffer_index % 256);
}

void fill_canary(unsigned char* bytes, std::size_t count, std::size_t buffer_index) {
  const std::uint32_t word = canary_word(buffer_index);
  for (std::size_t i = 0; i < count; i++) {
    bytes[i] = static_cast<unsigned char>(word >> (8 * (i % 4)));
  }
}

// bytes: buffer buffer_index's whole allocation, `before` canary bytes, `size` bytes of the
// buffer, then the slack. Fails naming the first overwritten byte.
::testing::AssertionResult check_canary(const std::string& what, const BufferSpec& spec,
                                        std::size_t buffer_index,
                                        const std::vector<unsigned char>& bytes, std::size_t before,
                                        std::size_t size) {
  std::vector<unsigned char> canary(bytes.size());
  fill_canary(canary.data(), canary.size(), buffer_index);
  for (std::size_t i = 0; i < bytes.size(); i++) {
    if (i >= before && i < before + size) continue;
    if (bytes[i] == canary[i]) continue;
    const bool after = i >= before + size;
    return ::testing::AssertionFailure()
           << what << ", buffer " << spec.name << " (" << spec.count << " elements): the kernel "
           << "wrote " << (after ? "past its end" : "before its start") << ", byte "
           << (after ? i - before - size : before - i - 1) << (after ? " after" : " before")
           << " it changed from " << int{canary[i]} << " to " << int{bytes[i]};
  }
  return ::testing::AssertionSuccess();
}

// Runs one op at one shape on one column and compares every output with the double reference
// (on meta: checks that nothing changed). name: the case, for messages. shape_index seeds the
// initial values.
void run_shape(const OpSpec& op, const OpSpec& backend_op, const Shape& shape,
               std::size_t shape_index, const std::string& name, const Column& column) {
  const std::vector<BufferSpec> specs = op.buffers(shape);
  const std::string what = name + " at " + shape.label;
  const bool meta = column.backend == Backend::meta_backend;

  std::vector<std::vector<unsigned char>> initial;
  for (std::size_t k = 0; k < specs.size(); k++) {
    initial.push_back(initial_bytes(specs[k], shape, 1000003 * (shape_index + 1) + k));
  }

  // Reference: f32 buffers widened to double.
  std::vector<std::vector<double>> reference_f(specs.size());
  std::vector<std::vector<int32_t>> reference_i(specs.size());
  Args<double> reference_args;
  for (std::size_t k = 0; k < specs.size(); k++) {
    const auto count = static_cast<std::size_t>(specs[k].count);
    if (specs[k].dtype == Dtype::i32) {
      reference_i[k].resize(count);
      if (count != 0) std::memcpy(reference_i[k].data(), initial[k].data(), count * 4);
      reference_args.pointers.push_back(reference_i[k].data());
    } else {
      reference_f[k].resize(count);
      for (std::size_t i = 0; i < count; i++) {
        reference_f[k][i] = element(initial[k], specs[k].dtype, static_cast<int64_t>(i));
      }
      reference_args.pointers.push_back(reference_f[k].data());
    }
  }
  if (!meta) op.reference(shape, reference_args);

  // Backend: the same initial bytes, on host memory (cpu_fast) or the column's memory.
  std::vector<std::vector<unsigned char>> results = initial;
  if (column.backend == Backend::cpu_fast) {
    // Host buffers with the canary slack after each one.
    std::vector<std::vector<unsigned char>> padded(specs.size());
    Args<float> args;
    for (std::size_t k = 0; k < specs.size(); k++) {
      padded[k].resize(initial[k].size() + kSlackBytes);
      fill_canary(padded[k].data(), padded[k].size(), k);
      if (!initial[k].empty()) std::memcpy(padded[k].data(), initial[k].data(), initial[k].size());
      args.pointers.push_back(padded[k].data());
    }
    backend_op.cpu_fast(shape, args);
    for (std::size_t k = 0; k < specs.size(); k++) {
      EXPECT_TRUE(check_canary(what, specs[k], k, padded[k], 0, initial[k].size()));
      std::copy_n(padded[k].begin(), initial[k].size(), results[k].begin());
    }
  } else {
    const bool views = through_kernel_backend(column.backend);
    Memory* memory = column.memory;
    std::vector<void*> allocations;
    // A KernelBackend returns an f64 result to the host: those buffers are host doubles.
    const auto on_host = [&](std::size_t k) { return views && specs[k].dtype == Dtype::f64; };
    std::vector<double> host_f64(specs.size());
    struct Padded {
      std::size_t k;
      void* base;
      std::size_t shift, bytes;
    };
    std::vector<Padded> padded;  // every device buffer's whole allocation, canaries included
    const auto release_all = [&] {
      for (void* base : allocations) memory->release(base);
    };
    Args<float> args;
    Views backend_views;
    try {
      for (std::size_t k = 0; k < specs.size(); k++) {
        if (on_host(k)) {
          host_f64[k] = element(initial[k], Dtype::f64, 0);
          args.pointers.push_back(&host_f64[k]);
          backend_views.tensors.emplace_back();
          backend_views.host_f64.push_back(&host_f64[k]);
          continue;
        }
        // Misaligned: 4 bytes off a 16-byte boundary (f32/i32 only; a double must stay aligned).
        const std::size_t shift = shape.misaligned && specs[k].dtype != Dtype::f64 ? 4 : 0;
        std::vector<unsigned char> whole(shift + initial[k].size() + kSlackBytes);
        fill_canary(whole.data(), whole.size(), k);
        if (!initial[k].empty())
          std::memcpy(whole.data() + shift, initial[k].data(), initial[k].size());
        void* base = memory->allocate(whole.size());
        allocations.push_back(base);
        padded.push_back({k, base, shift, whole.size()});
        void* pointer = static_cast<unsigned char*>(base) + shift;
        memory->to_device(base, whole.data(), whole.size());
        args.pointers.push_back(pointer);
        if (specs[k].dtype == Dtype::f64) {
          backend_views.tensors.emplace_back();
        } else {
          backend_views.tensors.emplace_back(pointer, view_dtype(specs[k].dtype),
                                             std::vector<int64_t>{specs[k].count});
        }
        backend_views.host_f64.push_back(nullptr);
      }
      if (views) {
        backend_op.backend(shape, backend_views, *column.kernels);
      } else {
        backend_op.cuda(shape, args, column.version);
      }
      memory->synchronize();
      for (std::size_t k = 0; k < specs.size(); k++) {
        if (on_host(k)) {
          std::memcpy(results[k].data(), &host_f64[k], sizeof(double));
        } else {
          memory->to_host(results[k].data(), args.pointers[k], results[k].size());
        }
      }
      for (const Padded& p : padded) {
        std::vector<unsigned char> whole(p.bytes);
        memory->to_host(whole.data(), p.base, p.bytes);
        EXPECT_TRUE(check_canary(what, specs[p.k], p.k, whole, p.shift, initial[p.k].size()));
      }
    } catch (...) {
      release_all();
      throw;
    }
    release_all();
  }

  if (meta) {
    expect_untouched(what, specs, initial, results);
    return;
  }
  for (std::size_t k = 0; k < specs.size(); k++) {
    if (!specs[k].compare) continue;
    const double tolerance = specs[k].dtype == Dtype::f64 ? kF64Tolerance : op.tolerance;
    EXPECT_TRUE(compare(what, specs[k], results[k], reference_f[k], tolerance));
  }
}

class OpsTest : public ::testing::TestWithParam<Case> {};

TEST_P(OpsTest, MatchesCpuReferenceAtEveryShape) {
  const Case& c = GetParam();
  const OpSpec& op = emulated_op_table()[c.op_index];
  const OpSpec* backend_op = &op;
  std::unique_ptr<Memory> memory;
  std::unique_ptr<simt::ScopedLaunchOptions> options;
  std::unique_ptr<nn::KernelBackend> kernels;
  if (c.backend == Backend::gpu || c.backend == Backend::gpu_backend) {
#if VRAMLAB_HAVE_CUDA
    const platform::GpuProbe probe = platform::probe_gpus();
    if (probe.status != platform::GpuStatus::available) {
      GTEST_SKIP() << "SKIPPED: " << probe.detail;  // e.g. "no GPU: the NVIDIA driver ..."
    }
    backend_op = &gpu_op_table()[c.op_index];
    memory = std::make_unique<GpuMemory>();
    if (c.backend == Backend::gpu_backend) kernels = nn::make_gpu_cuda_kernel_backend();
#else
    GTEST_SKIP() << "SKIPPED: this build has no nvcc-compiled kernels (VRAMLAB_HAVE_CUDA is OFF); "
                    "configure with -DVRAMLAB_CUDA=ON on a machine with an NVIDIA GPU";
#endif
  } else if (c.backend == Backend::emulated || c.backend == Backend::emulated_backend) {
    simt::LaunchOptions launch = simt::launch_options();
    launch.schedule = c.schedule;
    launch.seed = kRandomScheduleSeed;
    options = std::make_unique<simt::ScopedLaunchOptions>(launch);
    memory = std::make_unique<HostMemory>();
    if (c.backend == Backend::emulated_backend) kernels = nn::make_emulated_cuda_kernel_backend();
  } else if (c.backend == Backend::cpu_backend) {
    memory = std::make_unique<HostMemory>();
    kernels = std::make_unique<nn::CpuKernelBackend>();
  } else if (c.backend == Backend::meta_backend) {
    memory = std::make_unique<HostMemory>();
    kernels = nn::make_meta_kernel_backend();
  }
  const Column column{c.backend, c.version, memory.get(), kernels.get()};
  const std::vector<Shape>& shapes = through_kernel_backend(c.backend) && !op.backend_shapes.empty()
                                         ? op.backend_shapes
                                         : op.shapes;
  for (std::size_t s = 0; s < shapes.size(); s++) {
    run_shape(op, *backend_op, shapes[s], s, case_name(c), column);
  }
}

// The harness itself must catch a race: a column sum whose block adds its 8 row partials without
// the __syncthreads between writing and reading them (tests/ops/planted_race.cpp). Threads
// reading first see stale partials under the in-order and random schedules (under reverse the
// writers happen to run first and the race hides: one reason the harness runs all three).
TEST(OpsHarness, CatchesAMissingBarrierUnderTheInOrderAndRandomSchedules) {
  OpSpec op;
  op.name = "column_sums_missing_barrier";
  op.tolerance = 1e-5;
  op.shapes = {Shape{}};
  op.shapes[0].label = "N33_C40";
  op.shapes[0].N = 33;
  op.shapes[0].C = 40;
  op.buffers = [](const Shape& s) {
    return std::vector<BufferSpec>{{"dbias", s.C, Dtype::f32, Init::normal, 1.0, true},
                                   {"dout", s.N * s.C, Dtype::f32, Init::normal, 1.0, false}};
  };
  op.reference = [](const Shape& s, const Args<double>& a) {
    kernels::cpu::bias_add_backward_reference<double>(a.f(0), a.f(1), s.N, s.C);
  };
  op.cuda = [](const Shape& s, const Args<float>& a, KernelVersion) {
    column_sums_missing_barrier(a.f(0), a.f(1), s.N, s.C);
  };
  HostMemory memory;
  for (simt::Schedule schedule : {simt::Schedule::kInOrder, simt::Schedule::kRandom}) {
    simt::LaunchOptions launch = simt::launch_options();
    launch.schedule = schedule;
    launch.seed = kRandomScheduleSeed;
    launch.poison_shared = false;  // stale values, not NaN poison, must be what gives it away
    simt::ScopedLaunchOptions scoped(launch);
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter capture(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      run_shape(op, op, op.shapes[0], 0, op.name,
                Column{Backend::emulated, KernelVersion::v1, &memory, nullptr});
    }
    ASSERT_GT(failures.size(), 0) << "the harness missed the race under the "
                                  << simt::schedule_name(schedule) << " schedule";
    EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("% of the tolerance"),
              std::string::npos)
        << failures.GetTestPartResult(0).message();
  }
}

// Runs every shape of `op` on one backend column and returns the failure messages it reported.
std::vector<std::string> failures_of(const OpSpec& op, Backend backend,
                                     const nn::KernelBackend& kernels) {
  HostMemory memory;
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter capture(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    for (std::size_t s = 0; s < op.shapes.size(); s++) {
      run_shape(op, op, op.shapes[s], s, op.name,
                Column{backend, KernelVersion::v2, &memory, &kernels});
    }
  }
  std::vector<std::string> messages;
  for (int i = 0; i < failures.size(); i++) {
    messages.emplace_back(failures.GetTestPartResult(i).message());
  }
  return messages;
}

const OpSpec& table_op(const std::string& name) {
  for (const OpSpec& op : emulated_op_table())
    if (op.name == name) return op;
  throw std::logic_error("no op " + name + " in the table");
}

// The backend columns must catch glue that hands a kernel the right buffers in the wrong order
// (mean and rstd have the same dtype and size, so the typed checks cannot), while the same call
// in the right order passes.
TEST(OpsHarness, BackendColumnCatchesSwappedArguments) {
  OpSpec swapped = table_op("layernorm_backward");
  swapped.backend = [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
    k.layernorm_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[7], v[6], s.N, s.C);
  };
  const nn::CpuKernelBackend cpu;
  const std::vector<std::string> failures = failures_of(swapped, Backend::cpu_backend, cpu);
  ASSERT_FALSE(failures.empty()) << "the cpu_backend column missed mean and rstd swapped";
  EXPECT_NE(failures[0].find("% of the tolerance"), std::string::npos) << failures[0];
  EXPECT_TRUE(failures_of(table_op("layernorm_backward"), Backend::cpu_backend, cpu).empty());
}

// The meta column must catch a kernel that runs anyway (here: the CPU kernels behind meta's back),
// while the meta backend itself passes.
TEST(OpsHarness, MetaColumnCatchesAKernelThatRuns) {
  OpSpec runs_anyway = table_op("gelu_forward");
  runs_anyway.backend = [](const Shape&, const Views& v, const nn::KernelBackend&) {
    nn::CpuKernelBackend().gelu_forward(v[0], v[1]);
  };
  const std::unique_ptr<nn::KernelBackend> meta = nn::make_meta_kernel_backend();
  const std::vector<std::string> failures = failures_of(runs_anyway, Backend::meta_backend, *meta);
  ASSERT_FALSE(failures.empty()) << "the meta_backend column missed a kernel that ran";
  EXPECT_NE(failures[0].find("nothing may run on meta"), std::string::npos) << failures[0];
  EXPECT_TRUE(failures_of(table_op("gelu_forward"), Backend::meta_backend, *meta).empty());
}

// The harness must catch a kernel that writes one element past its output on every column
// kind: the raw CPU call, an emulated CUDA launch (on a misaligned shape too, where the canary
// also sits before the buffer) and the backend glue, while the same op with the right count
// passes.
TEST(OpsHarness, CatchesAWriteOnePastTheEndOnEveryColumnKind) {
  OpSpec overrun = table_op("gelu_forward");
  overrun.shapes = {overrun.shapes.at(2)};  // n = 7
  Shape misaligned = overrun.shapes[0];
  misaligned.misaligned = true;
  misaligned.label += "_misaligned";
  overrun.shapes.push_back(misaligned);
  // Both buffers are f32 of n elements: writing n + 1 of the output reads one past the input,
  // which the canary's NaN poisons, and writes one past the output.
  overrun.cpu_fast = [](const Shape& s, const Args<float>& a) {
    kernels::cpu::gelu_forward(a.f(0), a.f(1), s.n + 1);
  };
  overrun.cuda = [](const Shape& s, const Args<float>& a, KernelVersion) {
    kernels::cuda::gelu_forward(a.f(0), a.f(1), s.n + 1);
  };
  overrun.backend = [](const Shape& s, const Views& v, const nn::KernelBackend&) {
    kernels::cpu::gelu_forward(static_cast<float*>(v[0].data()),
                               static_cast<const float*>(v[1].data()), s.n + 1);
  };
  const nn::CpuKernelBackend cpu;
  HostMemory memory;
  for (const Backend backend : {Backend::cpu_fast, Backend::emulated, Backend::cpu_backend}) {
    SCOPED_TRACE(static_cast<int>(backend));
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter capture(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      for (std::size_t s = 0; s < overrun.shapes.size(); s++) {
        run_shape(overrun, overrun, overrun.shapes[s], s, overrun.name,
                  Column{backend, KernelVersion::v1, &memory, &cpu});
      }
    }
    std::size_t past_the_end = 0;
    for (int i = 0; i < failures.size(); i++) {
      const std::string message = failures.GetTestPartResult(i).message();
      if (message.find("wrote past its end, byte 0 after it") != std::string::npos) past_the_end++;
    }
    EXPECT_EQ(past_the_end, overrun.shapes.size()) << "one report per shape, of the output";
  }
  EXPECT_TRUE(failures_of(table_op("gelu_forward"), Backend::cpu_backend, cpu).empty());
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpsTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return case_name(param_info.param);
                         });

}  // namespace
}  // namespace vramlab::ops_test
