// The op table on bf16 and f16 storage (lesson 03) through CpuKernelBackend, and the ops only
// mixed precision has (cast, check_gradients, the optimizers with a master copy, the two paths of
// the 16-bit GEMMs).
//
// The contract (common/nn/kernel_backend.h, "Storage types"): an op on storage A (and parameter
// gradients G) gives round(op_f32(widen(inputs))). So every case runs the op twice from the same
// 16-bit values: on typed views, and through the f32 backend on the widened values, whose outputs
// are then rounded into each buffer's type. Roles (op_harness.h) say which buffer is A, G or f32.
//
// Tolerances. Ops whose f32 table tolerance is the elementwise one compute each element by the
// same formula in both runs: they must agree bit for bit. Reductions (norms, softmax, attention,
// GEMMs) may sum in another order in the 16-bit instantiation (other vector widths, oneDNN instead
// of OpenBLAS), so their f32 results differ by up to the f32 accumulation error, which the op table
// bounds by delta = tolerance · max|reference|. Rounding is monotonic, so per element
//   round(reference − delta) <= actual <= round(reference + delta):
// the same bits unless the reference lies within delta of a rounding boundary, then one step of
// the type at most. An op that rounded an intermediate to 16 bits (a sum of C products, a softmax
// row, a normalised value before the weight) is off wherever that rounding moved it, and fails.
// Non-finite values must match exactly (overflow to inf, NaN propagation). Run:
// build/tests/bin/test_ops_storage [--gtest_filter='*layernorm*']
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/dtype/convert.h"
#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/nn/low_precision_linear.h"
#include "common/platform/errors.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/storage.h"
#include "tests/ops/op_harness.h"

namespace vramlab::ops_test {
namespace {

constexpr double kElementwiseTolerance = 2e-6;  // the op table's: these ops are compared bitwise
constexpr double kF64Tolerance = 1e-9;

struct Storage {
  DType a;
  DType g;
};

std::string storage_name(Storage s) {
  // ostringstream: GCC 12 warns falsely on string literal + std::string temporaries under -O2.
  std::ostringstream name;
  name << dtype_name(s.a);
  if (s.g != s.a) name << "_grads_" << dtype_name(s.g);
  return name.str();
}

float round_to(float x, DType type) {
  switch (type) {
    case DType::bf16:
      return bf16_bits_to_f32(f32_to_bf16_bits(x));
    case DType::f16:
      return f16_bits_to_f32(f32_to_f16_bits(x));
    default:
      return x;
  }
}

// The spacing of \p type's values around |x| (its subnormal spacing below the normal range).
double ulp(double x, DType type) {
  const int mantissa_bits = type == DType::bf16 ? 7 : type == DType::f16 ? 10 : 23;
  const int min_exponent = type == DType::f16 ? -14 : -126;
  int exponent = 0;
  std::frexp(std::fabs(x), &exponent);  // |x| = m · 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
}

// A host array of a storage type, read and written as float.
class Buffer {
 public:
  Buffer(DType type, int64_t count)
      : type_(type),
        count_(count),
        // 16 spare bytes: an empty buffer still has a non-null pointer (a view, not "none"), and
        // they hold a canary (a quiet-NaN f32 pattern, NaN in bf16 too) that slack_intact checks
        // after every kernel: a kernel writing past the end changes it.
        bytes_(static_cast<size_t>(count) * dtype_size_bytes(type) + kSlackBytes) {
    for (std::size_t i = element_bytes(); i < bytes_.size(); i++) bytes_[i] = canary_byte(i);
  }
  /// Passes when the slack after the elements still holds the canary; else names the first byte.
  [[nodiscard]] ::testing::AssertionResult slack_intact(const std::string& what) const {
    for (std::size_t i = element_bytes(); i < bytes_.size(); i++) {
      if (bytes_[i] == canary_byte(i)) continue;
      return ::testing::AssertionFailure()
             << what << " (" << count_ << " elements of " << dtype_name(type_)
             << "): the kernel wrote past its end, byte " << i - element_bytes() << " after it";
    }
    return ::testing::AssertionSuccess();
  }
  [[nodiscard]] float get(int64_t i) const {
    switch (type_) {
      case DType::bf16:
        return bf16_bits_to_f32(bits(i));
      case DType::f16:
        return f16_bits_to_f32(bits(i));
      default: {
        float value;
        std::memcpy(&value, bytes_.data() + i * 4, 4);
        return value;
      }
    }
  }
  void set(int64_t i, float value) {
    uint16_t narrow;
    switch (type_) {
      case DType::bf16:
        narrow = f32_to_bf16_bits(value);
        std::memcpy(bytes_.data() + i * 2, &narrow, 2);
        return;
      case DType::f16:
        narrow = f32_to_f16_bits(value);
        std::memcpy(bytes_.data() + i * 2, &narrow, 2);
        return;
      default:
        std::memcpy(bytes_.data() + i * 4, &value, 4);
    }
  }
  [[nodiscard]] memory::TensorView view() {
    return memory::TensorView(bytes_.data(), type_, std::vector<int64_t>{count_});
  }
  [[nodiscard]] DType type() const { return type_; }
  [[nodiscard]] int64_t count() const { return count_; }
  [[nodiscard]] const std::vector<unsigned char>& bytes() const { return bytes_; }
  unsigned char* data() { return bytes_.data(); }

 private:
  static constexpr std::size_t kSlackBytes = 16;
  [[nodiscard]] std::size_t element_bytes() const {
    return static_cast<size_t>(count_) * dtype_size_bytes(type_);
  }
  // 0x7fc5a5a5 little-endian from the end of the elements.
  [[nodiscard]] unsigned char canary_byte(std::size_t i) const {
    return static_cast<unsigned char>(0x7fc5a5a5u >> (8 * ((i - element_bytes()) % 4)));
  }
  [[nodiscard]] uint16_t bits(int64_t i) const {
    uint16_t value;
    std::memcpy(&value, bytes_.data() + i * 2, 2);
    return value;
  }
  DType type_;
  int64_t count_;
  std::vector<unsigned char> bytes_;
};

DType storage_type(const BufferSpec& spec, Storage storage) {
  if (spec.dtype == Dtype::i32) return DType::i32;
  switch (spec.role) {
    case Role::param_grad:
      return storage.g;
    case Role::stat:
      return DType::f32;
    case Role::activation:
      break;
  }
  return storage.a;
}

bool has_param_grads(const OpSpec& op) {
  const Shape& shape = op.shapes.front();
  for (const BufferSpec& spec : op.buffers(shape))
    if (spec.role == Role::param_grad) return true;
  return false;
}

bool is_flash_attention(const OpSpec& op) {
  return op.name.starts_with("flash_attention_");
}

bool is_optimizer(const OpSpec& op) {
  return op.name == "adamw_update" || op.name == "sgd_update" || op.name == "lion_update" ||
         op.name == "adam_mini_update" || op.name == "adafactor_update";
}

bool runs_in_storage_columns(const OpSpec& op) {
  // The optimizers' tensors follow OptimizerTypes, not (A, G): OptimizerStorage below. Flash
  // attention runs on the CPU and the emulated CUDA backend: FlashStorage below.
  return op.backend && !is_optimizer(op) && !is_flash_attention(op);
}

// The buffers of one run; f64 buffers are host doubles the backend returns.
struct OpRun {
  std::vector<Buffer> buffers;
  std::vector<double> f64;
  /// Passes when every buffer's slack still holds its canary.
  [[nodiscard]] ::testing::AssertionResult slack_intact(
      const std::string& what, const std::vector<BufferSpec>& specs) const {
    for (std::size_t k = 0; k < buffers.size(); k++) {
      ::testing::AssertionResult intact =
          buffers[k].slack_intact(what + ", buffer " + specs[k].name);
      if (!intact) return intact;
    }
    return ::testing::AssertionSuccess();
  }
  Views views() {
    Views v;
    for (std::size_t k = 0; k < buffers.size(); k++) {
      v.tensors.push_back(buffers[k].view());
      v.host_f64.push_back(&f64[k]);
    }
    return v;
  }
};

// Seeded values rounded to each buffer's type; with \p edges, the first elements of every
// activation input are NaN, +60000 and −60000 (in f16, a sum of two of them overflows to inf).
OpRun make_run(const std::vector<BufferSpec>& specs, const Shape& shape, Storage storage,
               uint64_t seed, bool edges) {
  OpRun run;
  run.f64.assign(specs.size(), 0.0);
  for (std::size_t k = 0; k < specs.size(); k++) {
    const BufferSpec& spec = specs[k];
    const int64_t count = spec.dtype == Dtype::f64 ? 0 : spec.count;
    run.buffers.emplace_back(storage_type(spec, storage), count);
    Buffer& buffer = run.buffers.back();
    std::mt19937_64 generator(seed * 1000003 + k);
    for (int64_t i = 0; i < count; i++) {
      if (spec.dtype == Dtype::i32) {
        std::uniform_int_distribution<int32_t> token(
            0, static_cast<int32_t>(std::max<int64_t>(shape.V, 1) - 1));
        const int32_t value = token(generator);
        std::memcpy(buffer.data() + i * 4, &value, 4);
        continue;
      }
      const double value = spec.init == Init::positive
                               ? std::uniform_real_distribution<double>(0.5, 1.5)(generator)
                               : std::normal_distribution<double>(0.0, spec.scale)(generator);
      buffer.set(i, static_cast<float>(value));
    }
    if (edges && !spec.compare && spec.dtype == Dtype::f32 && spec.role == Role::activation &&
        count >= 3) {
      buffer.set(0, std::numeric_limits<float>::quiet_NaN());
      buffer.set(1, 60000.0f);
      buffer.set(2, -60000.0f);
    }
  }
  return run;
}

// The same values widened to f32 (stats and i32 buffers unchanged).
OpRun widened(const OpRun& typed) {
  OpRun run;
  run.f64 = typed.f64;
  for (const Buffer& b : typed.buffers) {
    const DType type = b.type() == DType::i32 ? DType::i32 : DType::f32;
    run.buffers.emplace_back(type, b.count());
    Buffer& wide = run.buffers.back();
    if (type == DType::i32) {
      std::memcpy(wide.data(), b.bytes().data(), b.bytes().size());
    } else {
      for (int64_t i = 0; i < b.count(); i++) wide.set(i, b.get(i));
    }
  }
  return run;
}

// Compares one output with the f32 run's, rounded into the output's type (see the file comment).
::testing::AssertionResult compare(const std::string& what, const BufferSpec& spec,
                                   const Buffer& actual, const Buffer& reference, bool bitwise,
                                   double tolerance) {
  double max_reference = 0.0;
  for (int64_t i = 0; i < reference.count(); i++) {
    const double r = reference.get(i);
    if (std::isfinite(r)) max_reference = std::max(max_reference, std::fabs(r));
  }
  double worst_ratio = 0.0, worst_diff = 0.0, worst_allowed = 0.0;
  int64_t worst = -1;
  for (int64_t i = 0; i < actual.count(); i++) {
    const float a = actual.get(i);
    const float r = round_to(reference.get(i), actual.type());
    if (!std::isfinite(a) || !std::isfinite(r)) {
      if (a == r || (std::isnan(a) && std::isnan(r))) continue;
      return ::testing::AssertionFailure()
             << what << ", buffer " << spec.name << ": element " << i << " is " << a
             << " where the rounded f32 result is " << r << " (non-finite values must match)";
    }
    // The 16-bit run's f32 value lies within delta of the reference's, so its rounding lies in
    // [round(reference − delta), round(reference + delta)] (rounding is monotonic): at most one
    // step of the type away, and only where the reference is within delta of a rounding boundary.
    const double diff = std::fabs(static_cast<double>(a) - r);
    const double delta = bitwise ? 0.0 : tolerance * max_reference;
    const float exact = reference.get(i);
    const float low = round_to(static_cast<float>(exact - delta), actual.type());
    const float high = round_to(static_cast<float>(exact + delta), actual.type());
    const double allowed = a < r ? r - static_cast<double>(low) : static_cast<double>(high) - r;
    const bool same_bits = a == r && std::signbit(a) == std::signbit(r);
    const double ratio = same_bits ? 0.0 : allowed > 0.0 ? diff / allowed : INFINITY;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_diff = diff;
      worst_allowed = allowed;
      worst = i;
    }
  }
  if (worst_ratio <= 1.0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ", buffer " << spec.name << " (" << dtype_name(actual.type())
         << "): max |diff| " << worst_diff << " at index " << worst << " (got " << actual.get(worst)
         << ", rounded f32 result " << round_to(reference.get(worst), actual.type()) << "), "
         << (bitwise ? "must be bitwise equal" : "") << (bitwise ? "" : "at ")
         << (bitwise ? 0.0 : 100.0 * worst_ratio) << (bitwise ? "" : "% of the allowed distance ")
         << worst_allowed << " (the rounding of reference ± " << tolerance << " · max|reference| "
         << max_reference << ")";
}

struct StorageCase {
  std::size_t op_index;
  Storage storage;
};

void PrintTo(const StorageCase& c, std::ostream* os) {
  *os << emulated_op_table()[c.op_index].name << "_" << storage_name(c.storage);
}

std::vector<StorageCase> storage_cases() {
  std::vector<StorageCase> cases;
  const auto& table = emulated_op_table();
  for (std::size_t i = 0; i < table.size(); i++) {
    if (!runs_in_storage_columns(table[i])) continue;
    for (DType a : {DType::bf16, DType::f16}) {
      cases.push_back({i, {a, a}});
      if (has_param_grads(table[i])) cases.push_back({i, {a, DType::f32}});
    }
  }
  return cases;
}

class StorageTest : public ::testing::TestWithParam<StorageCase> {};

TEST_P(StorageTest, IsTheF32OpOnWidenedInputsRoundedOnce) {
  const OpSpec& op = emulated_op_table()[GetParam().op_index];
  const Storage storage = GetParam().storage;
  const nn::CpuKernelBackend backend;
  const bool bitwise = op.tolerance <= kElementwiseTolerance;
  const std::vector<Shape>& shapes = op.backend_shapes.empty() ? op.shapes : op.backend_shapes;
  for (std::size_t index = 0; index < shapes.size(); index++) {
    const Shape& shape = shapes[index];
    const std::vector<BufferSpec> specs = op.buffers(shape);
    for (const bool edges : {false, true}) {
      if (edges && index != 2 % shapes.size()) continue;  // one shape with edge values
      std::ostringstream label;
      label << op.name << " " << storage_name(storage) << " at " << shape.label
            << (edges ? " with NaN and ±60000 inputs" : "");
      const std::string what = label.str();
      OpRun typed = make_run(specs, shape, storage, index + 1, edges);
      OpRun reference = widened(typed);
      op.backend(shape, typed.views(), backend);
      op.backend(shape, reference.views(), backend);
      EXPECT_TRUE(typed.slack_intact(what, specs));
      EXPECT_TRUE(reference.slack_intact(what + " (f32 run)", specs));
      for (std::size_t k = 0; k < specs.size(); k++) {
        if (!specs[k].compare) continue;
        if (specs[k].dtype == Dtype::f64) {
          const double a = typed.f64[k], r = reference.f64[k];
          if (std::isnan(r)) {
            EXPECT_TRUE(std::isnan(a)) << what << ": " << a << " where the f32 run has NaN";
          } else {
            EXPECT_LE(std::fabs(a - r), kF64Tolerance * std::max(std::fabs(r), 1e-30))
                << what << ", buffer " << specs[k].name << ": " << a << " vs " << r;
          }
          continue;
        }
        EXPECT_TRUE(
            compare(what, specs[k], typed.buffers[k], reference.buffers[k], bitwise, op.tolerance));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, StorageTest, ::testing::ValuesIn(storage_cases()),
                         [](const ::testing::TestParamInfo<StorageCase>& param) {
                           return emulated_op_table()[param.param.op_index].name + "_" +
                                  storage_name(param.param.storage);
                         });

// ---- flash attention on 16-bit storage: CPU and emulated CUDA kernels ------------------------
//
// The CUDA kernels' 16-bit instantiations run nowhere else on a machine without a GPU, so the
// flash ops run here on three columns: CpuKernelBackend, the emulated CUDA backend (its v2
// kernels) and the emulated v1 launchers. The CUDA kernels do the float kernel's f32 arithmetic in
// the same order on widened values, so their two runs must agree bit for bit; the CPU's within the
// table's tolerance, as every other reduction above.
// The table's backward entries first run the forward into out and lse, which on 16-bit storage
// rounds out into A while the f32 run keeps it exact: an intermediate the contract says nothing
// about. So here the backward's inputs are made once, before both runs: out and lse by the
// column's own forward on the 16-bit inputs (so P = exp(S − lse) is a probability), then widened
// for the f32 run like every other input, and the two runs call the backward alone.

// The dropout stream of the forward and backward here (both runs of a case use the same mask).
constexpr uint64_t kFlashDropoutSeed = 0x5EED1234ull;

enum class FlashColumn { cpu_backend, emulated_backend, emulated_v1 };

const char* flash_column_name(FlashColumn column) {
  switch (column) {
    case FlashColumn::cpu_backend:
      return "cpu_backend";
    case FlashColumn::emulated_backend:
      return "emulated_backend";
    case FlashColumn::emulated_v1:
      return "emulated_v1";
  }
  return "?";
}

struct FlashStorageCase {
  std::size_t op_index;
  DType a;
  FlashColumn column;
};

std::string flash_storage_name(const FlashStorageCase& c) {
  std::ostringstream name;
  name << emulated_op_table()[c.op_index].name << "_" << dtype_name(c.a) << "_"
       << flash_column_name(c.column);
  return name.str();
}

void PrintTo(const FlashStorageCase& c, std::ostream* os) {
  *os << flash_storage_name(c);
}

std::vector<FlashStorageCase> flash_storage_cases() {
  std::vector<FlashStorageCase> cases;
  const auto& table = emulated_op_table();
  for (std::size_t i = 0; i < table.size(); i++) {
    if (!is_flash_attention(table[i])) continue;
    for (DType a : {DType::bf16, DType::f16}) {
      for (FlashColumn column :
           {FlashColumn::cpu_backend, FlashColumn::emulated_backend, FlashColumn::emulated_v1}) {
        cases.push_back({i, a, column});
      }
    }
  }
  return cases;
}

kernels::cpu::AttentionDropout flash_dropout(const Shape& s) {
  return {s.dropout_p, kFlashDropoutSeed, s.dropout_offset};
}

// f(A{}) for the storage type of a run's activation buffers (float, bf16_t or f16_t).
template <class F>
void with_activation_type(DType type, F&& f) {
  if (type == DType::bf16) {
    f(bf16_t{});
  } else if (type == DType::f16) {
    f(f16_t{});
  } else {
    f(float{});
  }
}

template <class T>
T* typed_data(Buffer& buffer) {
  return reinterpret_cast<T*>(buffer.data());
}

// The forward on buffers out, lse, q, k, v of a run, on one column (backend: the column's).
void flash_forward(FlashColumn column, const nn::KernelBackend& backend, OpRun& run, const Shape& s,
                   std::size_t out, std::size_t lse, std::size_t q, std::size_t k, std::size_t v) {
  if (column != FlashColumn::emulated_v1) {
    const Views views = run.views();
    backend.flash_attention_forward(views[out], views[lse], views[q], views[k], views[v], s.B, s.T,
                                    s.H, s.Hkv, s.D, flash_dropout(s));
    return;
  }
  auto& b = run.buffers;
  with_activation_type(b[q].type(), [&]<class A>(A) {
    kernels::cuda::flash_attention_forward(typed_data<A>(b[out]), typed_data<float>(b[lse]),
                                           typed_data<A>(b[q]), typed_data<A>(b[k]),
                                           typed_data<A>(b[v]), s.B, s.T, s.H, s.Hkv, s.D,
                                           flash_dropout(s), kernels::cuda::KernelVersion::v1);
  });
}

// The backward alone on the table's backward buffers (op_table.cpp: dq, dk, dv, delta, dout, q,
// k, v, out, lse).
void flash_backward(FlashColumn column, const nn::KernelBackend& backend, OpRun& run,
                    const Shape& s) {
  if (column != FlashColumn::emulated_v1) {
    const Views v = run.views();
    backend.flash_attention_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9],
                                     s.B, s.T, s.H, s.Hkv, s.D, flash_dropout(s));
    return;
  }
  auto& b = run.buffers;
  with_activation_type(b[5].type(), [&]<class A>(A) {
    kernels::cuda::flash_attention_backward(
        typed_data<A>(b[0]), typed_data<A>(b[1]), typed_data<A>(b[2]), typed_data<float>(b[3]),
        typed_data<A>(b[4]), typed_data<A>(b[5]), typed_data<A>(b[6]), typed_data<A>(b[7]),
        typed_data<A>(b[8]), typed_data<float>(b[9]), s.B, s.T, s.H, s.Hkv, s.D, flash_dropout(s),
        kernels::cuda::KernelVersion::v1);
  });
}

class FlashStorage : public ::testing::TestWithParam<FlashStorageCase> {};

TEST_P(FlashStorage, IsTheF32OpOnWidenedInputsRoundedOnce) {
  const OpSpec& op = emulated_op_table()[GetParam().op_index];
  const Storage storage{GetParam().a, GetParam().a};
  const FlashColumn column = GetParam().column;
  const std::unique_ptr<nn::KernelBackend> backend =
      column == FlashColumn::cpu_backend
          ? std::unique_ptr<nn::KernelBackend>(std::make_unique<nn::CpuKernelBackend>())
          : nn::make_emulated_cuda_kernel_backend();
  const bool bitwise = column != FlashColumn::cpu_backend;
  const bool backward = op.name.starts_with("flash_attention_backward");
  for (std::size_t index = 0; index < op.shapes.size(); index++) {
    const Shape& shape = op.shapes[index];
    const std::vector<BufferSpec> specs = op.buffers(shape);
    for (const bool edges : {false, true}) {
      if (edges && index != 2 % op.shapes.size()) continue;  // one shape with edge values
      std::ostringstream label;
      label << flash_storage_name(GetParam()) << " at " << shape.label
            << (edges ? " with NaN and ±60000 inputs" : "");
      const std::string what = label.str();
      OpRun typed = make_run(specs, shape, storage, index + 1, edges);
      if (backward) flash_forward(column, *backend, typed, shape, 8, 9, 5, 6, 7);
      OpRun reference = widened(typed);
      for (OpRun* run : {&typed, &reference}) {
        if (backward) {
          flash_backward(column, *backend, *run, shape);
        } else {
          flash_forward(column, *backend, *run, shape, 0, 1, 2, 3, 4);
        }
      }
      EXPECT_TRUE(typed.slack_intact(what, specs));
      EXPECT_TRUE(reference.slack_intact(what + " (f32 run)", specs));
      for (std::size_t k = 0; k < specs.size(); k++) {
        if (!specs[k].compare) continue;
        EXPECT_TRUE(
            compare(what, specs[k], typed.buffers[k], reference.buffers[k], bitwise, op.tolerance));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFlashOps, FlashStorage, ::testing::ValuesIn(flash_storage_cases()),
                         [](const ::testing::TestParamInfo<FlashStorageCase>& param) {
                           return flash_storage_name(param.param);
                         });

// The launchers' one limit beyond the CPU kernel's checks, and a bad group, each named in the
// message before anything launches (the pointers are never read).
TEST(FlashStorageArguments, CudaLaunchersNameAHeadSizeAbove256AndKvHeadsNotDividingH) {
  float x = 0.0f;
  for (auto version : {kernels::cuda::KernelVersion::v1, kernels::cuda::KernelVersion::v2}) {
    try {
      kernels::cuda::flash_attention_forward(&x, &x, &x, &x, &x, 1, 1, 1, 1, 257, {}, version);
      ADD_FAILURE() << "D = 257 was accepted";
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("head size D = 257 must be <= 256"), std::string::npos)
          << e.what();
    }
    try {
      kernels::cuda::flash_attention_backward(&x, &x, &x, &x, &x, &x, &x, &x, &x, &x, 1, 1, 3, 2, 8,
                                              {}, version);
      ADD_FAILURE() << "Hkv = 2 with H = 3 was accepted";
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("Hkv = 2 must divide heads H = 3"), std::string::npos)
          << e.what();
    }
  }
}

// ---- the kernels' load of an f16 ------------------------------------------------------------

TEST(Storage, BranchFreeF16WidenIsConvertHBitForBitOnAllPatterns) {
  for (uint32_t bits = 0; bits <= 0xFFFFu; bits++) {
    const float fast = kernels::cpu::widen(f16_t{static_cast<uint16_t>(bits)});
    const float exact = f16_bits_to_f32(static_cast<uint16_t>(bits));
    ASSERT_EQ(std::bit_cast<uint32_t>(fast), std::bit_cast<uint32_t>(exact))
        << "f16 bits 0x" << std::hex << bits;
  }
}

// ---- cast --------------------------------------------------------------------------------------

std::vector<float> cast_inputs() {
  std::mt19937_64 generator(7);
  std::vector<float> values;
  for (double scale : {1.0, 1000.0, 1e-6}) {
    std::normal_distribution<double> normal(0.0, scale);
    for (int i = 0; i < 333; i++) values.push_back(static_cast<float>(normal(generator)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float edge : {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 70000.0f, -70000.0f,
                     65504.0f, 65520.0f, 1e-8f, -0.0f, 3e38f, 1.0000001f})
    values.push_back(edge);
  return values;
}

TEST(Cast, EveryPairRoundsOnceToNearestEvenAndKeepsSpecials) {
  const nn::CpuKernelBackend backend;
  const std::vector<float> inputs = cast_inputs();
  const auto n = static_cast<int64_t>(inputs.size());
  for (DType from : {DType::f32, DType::bf16, DType::f16}) {
    for (DType to : {DType::f32, DType::bf16, DType::f16}) {
      Buffer in(from, n), out(to, n);
      for (int64_t i = 0; i < n; i++) {
        in.set(i, inputs[static_cast<size_t>(i)]);
        out.set(i, 12345.0f);  // every element must be written
      }
      backend.cast(out.view(), in.view());
      for (int64_t i = 0; i < n; i++) {
        const float expected = round_to(in.get(i), to);
        const float got = out.get(i);
        const bool same = (std::isnan(expected) && std::isnan(got)) ||
                          (expected == got && std::signbit(expected) == std::signbit(got));
        ASSERT_TRUE(same) << dtype_name(from) << " -> " << dtype_name(to) << " element " << i
                          << ": " << in.get(i) << " became " << got << ", expected " << expected;
      }
      if (from == to) {
        EXPECT_EQ(0, std::memcmp(in.bytes().data(), out.bytes().data(),
                                 static_cast<size_t>(n) * dtype_size_bytes(to)))
            << dtype_name(from) << ": a cast to the same type copies the bits";
      }
    }
  }
}

TEST(Cast, F16OverflowIsInfinityAndBf16KeepsTheRange) {
  const nn::CpuKernelBackend backend;
  Buffer in(DType::f32, 3), f16(DType::f16, 3), bf16(DType::bf16, 3);
  in.set(0, 65519.0f);  // rounds down to 65504
  in.set(1, 65520.0f);  // the tie above the largest f16 rounds to inf
  in.set(2, -1e6f);
  backend.cast(f16.view(), in.view());
  backend.cast(bf16.view(), in.view());
  EXPECT_EQ(f16.get(0), 65504.0f);
  EXPECT_EQ(f16.get(1), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16.get(2), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16.get(2), -999424.0f);  // 1e6 to 8 significant bits
}

// ---- check_gradients ---------------------------------------------------------------------------

TEST(CheckGradients, FindsInfAndNaNAndSumsSquaresInDoubleWithoutTouchingTheGradients) {
  const nn::CpuKernelBackend backend;
  const float multiplier = 1.0f / 1024.0f;
  for (DType type : {DType::f32, DType::bf16, DType::f16}) {
    for (int64_t n : {0, 1, 4097, 70001}) {
      Buffer grads(type, n);
      std::mt19937_64 generator(static_cast<uint64_t>(n) + 3);
      std::normal_distribution<double> normal(0.0, 500.0);  // scaled gradients
      for (int64_t i = 0; i < n; i++) grads.set(i, static_cast<float>(normal(generator)));
      const std::vector<unsigned char> before = grads.bytes();
      long double expected = 0;
      for (int64_t i = 0; i < n; i++) {
        const float scaled = multiplier * grads.get(i);
        expected += static_cast<long double>(scaled) * scaled;
      }
      const auto found = backend.check_gradients(grads.view(), multiplier);
      EXPECT_FALSE(found.found_inf) << dtype_name(type) << " n=" << n;
      EXPECT_NEAR(found.sum_of_squares, static_cast<double>(expected),
                  1e-12 * static_cast<double>(expected) + 1e-300)
          << dtype_name(type) << " n=" << n;
      EXPECT_EQ(before, grads.bytes()) << "check_gradients changed the gradients";
      if (n < 2) continue;
      grads.set(n - 1, std::numeric_limits<float>::quiet_NaN());
      EXPECT_TRUE(backend.check_gradients(grads.view(), multiplier).found_inf)
          << dtype_name(type) << " n=" << n << ": a NaN in the last element";
      grads.set(n - 1, 1.0f);
      grads.set(n / 2, 60000.0f);
      EXPECT_FALSE(backend.check_gradients(grads.view(), multiplier).found_inf);
      // 60000 · 1e35 overflows f32: the unscaled gradient is inf although the stored one is not.
      EXPECT_TRUE(backend.check_gradients(grads.view(), 1e35f).found_inf)
          << dtype_name(type) << " n=" << n << ": an overflow of multiplier · g";
    }
  }
}

// ---- optimizers on mixed storage ---------------------------------------------------------------

struct OptimizerStorage {
  DType param, grad, state;
  DType working;  // f32: none
};

std::string optimizer_name(const OptimizerStorage& s) {
  std::ostringstream text;
  text << "param " << dtype_name(s.param) << ", grad " << dtype_name(s.grad) << ", state "
       << dtype_name(s.state) << ", working "
       << (s.working == DType::f32 ? "none" : std::string(dtype_name(s.working)));
  return text.str();
}

// fp32; pure bf16; mixed precision (f32 master and state, 16-bit or f32 gradients, a working copy).
const OptimizerStorage kOptimizerStorages[] = {
    {DType::f32, DType::f32, DType::f32, DType::f32},
    {DType::bf16, DType::bf16, DType::bf16, DType::f32},
    {DType::f32, DType::bf16, DType::f32, DType::bf16},
    {DType::f32, DType::f16, DType::f32, DType::f16},
    {DType::f32, DType::f32, DType::f32, DType::bf16},
    {DType::f32, DType::f32, DType::f32, DType::f16},
};

// Runs the optimizer on typed buffers and the f32 kernel on their widened values (the gradient
// multiplied by the multiplier in f32, as the kernels do) and compares bit for bit after rounding.
template <typename Step, typename Reference>
void check_optimizer(const char* name, const OptimizerStorage& s, float grad_multiplier,
                     bool with_state, const Step& step, const Reference& reference) {
  const int64_t n = 4099;
  const nn::CpuKernelBackend backend;
  std::mt19937_64 generator(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  Buffer param(s.param, n), grad(s.grad, n), m(s.state, n), v(s.state, n);
  Buffer working(s.working == DType::f32 ? DType::bf16 : s.working, n);
  for (int64_t i = 0; i < n; i++) {
    param.set(i, static_cast<float>(normal(generator)));
    grad.set(i, static_cast<float>(normal(generator) / grad_multiplier));
    m.set(i, static_cast<float>(0.1 * normal(generator)));
    v.set(i, static_cast<float>(0.5 + std::fabs(normal(generator))));
    working.set(i, 7.0f);
  }
  std::vector<float> param32(static_cast<size_t>(n)), grad32(param32), m32(param32), v32(param32);
  for (int64_t i = 0; i < n; i++) {
    const auto at = static_cast<size_t>(i);
    param32[at] = param.get(i);
    grad32[at] = grad_multiplier * grad.get(i);
    m32[at] = m.get(i);
    v32[at] = v.get(i);
  }
  const bool has_working = s.working != DType::f32;
  step(backend, param.view(), grad.view(), m.view(), v.view(),
       has_working ? working.view() : memory::TensorView{});
  reference(param32.data(), grad32.data(), m32.data(), v32.data(), n);
  const auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  for (int64_t i = 0; i < n; i++) {
    const auto at = static_cast<size_t>(i);
    ASSERT_TRUE(same(param.get(i), round_to(param32[at], s.param)))
        << name << " " << optimizer_name(s) << " x" << grad_multiplier << ": param[" << i
        << "] = " << param.get(i) << ", expected " << round_to(param32[at], s.param);
    if (with_state) {
      ASSERT_TRUE(same(m.get(i), round_to(m32[at], s.state))) << name << " m[" << i << "]";
    }
    ASSERT_TRUE(same(v.get(i), round_to(v32[at], s.state)))
        << name << " " << optimizer_name(s) << ": v[" << i << "] = " << v.get(i) << ", expected "
        << round_to(v32[at], s.state) << " (grad " << grad.get(i) << ")";
    if (has_working) {
      ASSERT_TRUE(same(working.get(i), round_to(param32[at], s.working)))
          << name << " " << optimizer_name(s) << ": working[" << i << "] = " << working.get(i)
          << ", expected round(updated f32 param) " << round_to(param32[at], s.working);
    }
  }
}

TEST(Optimizers, AdamWOnEveryStorageIsTheF32StepRoundedOnce) {
  kernels::cpu::AdamWHyperparameters hp;
  hp.learning_rate = 0.05f;
  hp.weight_decay = 0.1f;
  for (const OptimizerStorage& s : kOptimizerStorages) {
    for (float multiplier : {1.0f, 1.0f / 1024.0f}) {
      check_optimizer(
          "adamw", s, multiplier, true,
          [&](const nn::KernelBackend& k, const memory::TensorView& p, const memory::TensorView& g,
              const memory::TensorView& m, const memory::TensorView& v,
              const memory::TensorView& w) {
            k.adamw_update(p, g, m, v, w, hp, {.step = 3, .grad_multiplier = multiplier});
          },
          [&](float* p, float* g, float* m, float* v, int64_t n) {
            kernels::cpu::adamw_update(p, g, m, v, n, hp, 3);
          });
    }
  }
}

TEST(Optimizers, SgdOnEveryStorageIsTheF32StepRoundedOnce) {
  for (const OptimizerStorage& s : kOptimizerStorages) {
    for (bool nesterov : {false, true}) {
      check_optimizer(
          "sgd", s, 1.0f / 256.0f, false,
          [&](const nn::KernelBackend& k, const memory::TensorView& p, const memory::TensorView& g,
              const memory::TensorView&, const memory::TensorView& v, const memory::TensorView& w) {
            k.sgd_update(p, g, v, w,
                         {.learning_rate = 0.05f,
                          .momentum = 0.9f,
                          .weight_decay = 0.01f,
                          .nesterov = nesterov},
                         {.grad_multiplier = 1.0f / 256.0f});
          },
          [&](float* p, float* g, float*, float* v, int64_t n) {
            kernels::cpu::sgd_update(p, g, v, n,
                                     {.learning_rate = 0.05f,
                                      .momentum = 0.9f,
                                      .weight_decay = 0.01f,
                                      .nesterov = nesterov});
          });
    }
  }
}

TEST(Optimizers, LionOnEveryStorageIsTheF32StepRoundedOnce) {
  kernels::cpu::LionHyperparameters hp;
  hp.learning_rate = 0.01f;
  hp.weight_decay = 0.1f;
  for (const OptimizerStorage& s : kOptimizerStorages) {
    for (float multiplier : {1.0f, 1.0f / 1024.0f}) {
      check_optimizer(
          "lion", s, multiplier, false,
          [&](const nn::KernelBackend& k, const memory::TensorView& p, const memory::TensorView& g,
              const memory::TensorView&, const memory::TensorView& m, const memory::TensorView& w) {
            k.lion_update(p, g, m, w, hp, {.grad_multiplier = multiplier});
          },
          [&](float* p, float* g, float*, float* m, int64_t n) {
            kernels::cpu::lion_update<float, float, float, bf16_t>(p, g, m, nullptr, n, hp,
                                                                   {.grad_multiplier = 1.0f});
          });
    }
  }
}

// ---- the two paths of the bf16 GEMMs -----------------------------------------------------------

// The f32 error bound of a sum of K products: each path is within (K + 2)·u·Σ|terms| of the exact
// value (u = 2^-24; +2 for the bias or accumulated value and the final add), so the two paths are
// within twice that of each other, plus one ulp of the output type for the final rounding.
double gemm_bound(double sum_of_abs_terms, int64_t K, double reference, DType type) {
  return 2.0 * static_cast<double>(K + 2) * std::ldexp(1.0, -24) * sum_of_abs_terms +
         ulp(reference, type);
}

struct GemmShape {
  int64_t N, C, OC;
};

const GemmShape kGemmShapes[] = {{1, 1, 1},     {1, 7, 3},     {3, 7, 5},      {33, 31, 17},
                                 {64, 257, 33}, {17, 64, 129}, {128, 256, 768}};

template <typename G>
void check_gemm_paths(const GemmShape& shape) {
  const auto [N, C, OC] = shape;
  constexpr DType kG = std::is_same_v<G, float> ? DType::f32 : DType::bf16;
  std::mt19937_64 generator(static_cast<uint64_t>(N * 1000 + C * 10 + OC));
  std::normal_distribution<double> normal(0.0, 1.0);
  const auto fill = [&](Buffer& b) {
    for (int64_t i = 0; i < b.count(); i++) b.set(i, static_cast<float>(normal(generator)));
  };
  Buffer inp(DType::bf16, N * C), weight(DType::bf16, OC * C), bias(DType::bf16, OC),
      dout(DType::bf16, N * OC);
  fill(inp), fill(weight), fill(bias), fill(dout);
  const auto* inp_p = reinterpret_cast<const bf16_t*>(inp.data());
  const auto* weight_p = reinterpret_cast<const bf16_t*>(weight.data());
  const auto* bias_p = reinterpret_cast<const bf16_t*>(bias.data());
  const auto* dout_p = reinterpret_cast<const bf16_t*>(dout.data());
  std::ostringstream label;
  label << "N" << N << "_C" << C << "_OC" << OC << " grads " << dtype_name(kG);
  const std::string what = label.str();

  // Forward.
  Buffer out_dnn(DType::bf16, N * OC), out_widen(DType::bf16, N * OC);
  nn::low_precision_linear_forward<bf16_t>(reinterpret_cast<bf16_t*>(out_dnn.data()), inp_p,
                                           weight_p, bias_p, N, C, OC,
                                           nn::LowPrecisionGemm::onednn);
  nn::low_precision_linear_forward<bf16_t>(reinterpret_cast<bf16_t*>(out_widen.data()), inp_p,
                                           weight_p, bias_p, N, C, OC, nn::LowPrecisionGemm::widen);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t o = 0; o < OC; o++) {
      double terms = std::fabs(bias.get(o));
      for (int64_t c = 0; c < C; c++)
        terms += std::fabs(inp.get(row * C + c) * weight.get(o * C + c));
      const double a = out_dnn.get(row * OC + o), r = out_widen.get(row * OC + o);
      ASSERT_LE(std::fabs(a - r), gemm_bound(terms, C, r, DType::bf16))
          << what << ": forward out[" << row << ", " << o << "] oneDNN " << a << " vs widen " << r;
    }
  }

  // Backward, accumulating into random gradients.
  Buffer dinp_dnn(DType::bf16, N * C), dweight_dnn(kG, OC * C), dbias_dnn(kG, OC);
  fill(dinp_dnn), fill(dweight_dnn), fill(dbias_dnn);
  Buffer dinp_widen = dinp_dnn, dweight_widen = dweight_dnn, dbias_widen = dbias_dnn;
  const Buffer dinp0 = dinp_dnn, dweight0 = dweight_dnn, dbias0 = dbias_dnn;
  nn::low_precision_linear_backward<bf16_t, G>(
      reinterpret_cast<bf16_t*>(dinp_dnn.data()), reinterpret_cast<G*>(dweight_dnn.data()),
      reinterpret_cast<G*>(dbias_dnn.data()), dout_p, inp_p, weight_p, N, C, OC,
      nn::LowPrecisionGemm::onednn);
  nn::low_precision_linear_backward<bf16_t, G>(
      reinterpret_cast<bf16_t*>(dinp_widen.data()), reinterpret_cast<G*>(dweight_widen.data()),
      reinterpret_cast<G*>(dbias_widen.data()), dout_p, inp_p, weight_p, N, C, OC,
      nn::LowPrecisionGemm::widen);
  for (int64_t row = 0; row < N; row++) {
    for (int64_t c = 0; c < C; c++) {
      double terms = std::fabs(dinp0.get(row * C + c));
      for (int64_t o = 0; o < OC; o++)
        terms += std::fabs(dout.get(row * OC + o) * weight.get(o * C + c));
      const double a = dinp_dnn.get(row * C + c), r = dinp_widen.get(row * C + c);
      ASSERT_LE(std::fabs(a - r), gemm_bound(terms, OC, r, DType::bf16))
          << what << ": dinp[" << row << ", " << c << "] oneDNN " << a << " vs widen " << r;
    }
  }
  for (int64_t o = 0; o < OC; o++) {
    double bias_terms = std::fabs(dbias0.get(o));
    for (int64_t row = 0; row < N; row++) bias_terms += std::fabs(dout.get(row * OC + o));
    ASSERT_LE(std::fabs(dbias_dnn.get(o) - dbias_widen.get(o)),
              gemm_bound(bias_terms, N, dbias_widen.get(o), kG))
        << what << ": dbias[" << o << "]";
    for (int64_t c = 0; c < C; c++) {
      double terms = std::fabs(dweight0.get(o * C + c));
      for (int64_t row = 0; row < N; row++)
        terms += std::fabs(dout.get(row * OC + o) * inp.get(row * C + c));
      const double a = dweight_dnn.get(o * C + c), r = dweight_widen.get(o * C + c);
      ASSERT_LE(std::fabs(a - r), gemm_bound(terms, N, r, kG))
          << what << ": dweight[" << o << ", " << c << "] oneDNN " << a << " vs widen " << r;
    }
  }
}

TEST(Bf16Gemm, OneDnnAgreesWithSgemmOnTheWidenedOperands) {
  if (!nn::bf16_onednn_available()) {
    GTEST_SKIP() << "SKIPPED: this CPU has no native bf16 (or VRAMLAB_CPU_BF16=0): only the "
                    "widening path runs";
  }
  for (const GemmShape& shape : kGemmShapes) {
    check_gemm_paths<float>(shape);
    check_gemm_paths<bf16_t>(shape);
  }
}

// On exactly representable data (small integers: every product and sum exact in f32) both paths,
// and the backend's choice, must be exact; the widening path is what a CPU without bf16 runs and
// what f16 always runs.
TEST(Bf16Gemm, EveryPathIsExactOnExactData) {
  const int64_t N = 5, C = 9, OC = 7;
  for (DType type : {DType::bf16, DType::f16}) {
    Buffer inp(type, N * C), weight(type, OC * C);
    for (int64_t i = 0; i < N * C; i++) inp.set(i, static_cast<float>(i % 5 - 2));
    for (int64_t i = 0; i < OC * C; i++) weight.set(i, static_cast<float>(i % 3 - 1));
    std::vector<Buffer> outs;
    outs.emplace_back(type, N * OC);
    const nn::CpuKernelBackend backend;
    backend.linear_forward(outs.back().view(), inp.view(), weight.view(), memory::TensorView{}, N,
                           C, OC);
    if (type == DType::bf16) {
      outs.emplace_back(type, N * OC);
      nn::low_precision_linear_forward<bf16_t>(reinterpret_cast<bf16_t*>(outs.back().data()),
                                               reinterpret_cast<const bf16_t*>(inp.data()),
                                               reinterpret_cast<const bf16_t*>(weight.data()),
                                               nullptr, N, C, OC, nn::LowPrecisionGemm::widen);
    }
    for (const Buffer& out : outs) {
      for (int64_t row = 0; row < N; row++) {
        for (int64_t o = 0; o < OC; o++) {
          float expected = 0;
          for (int64_t c = 0; c < C; c++) expected += inp.get(row * C + c) * weight.get(o * C + c);
          ASSERT_EQ(out.get(row * OC + o), expected) << dtype_name(type);
        }
      }
    }
  }
}

}  // namespace
}  // namespace vramlab::ops_test
