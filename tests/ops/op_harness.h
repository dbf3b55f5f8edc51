/// \file
/// \brief The table-driven op harness (like ggml's test-backend-ops): one table of ops × shapes,
/// every op run on every backend and compared with the CPU reference kernel in double.
///
/// An op is described once as data: its buffers (name, element count, dtype, how they are
/// initialized, whether they are compared) for a shape, and up to four calls: the double reference
/// (kernels/cpu `*_reference<double>`), the CPU fast path and the CUDA launcher
/// (kernels/cuda/ops.h) with a KernelVersion, all three on raw pointers, and, for the ops the
/// training step runs, the same op through a nn::KernelBackend on typed views. Every buffer starts
/// from the same seeded random values on every backend, outputs included, so forward kernels must
/// write every element and backward kernels must accumulate (+=) exactly as the reference does.
///
/// Columns (test_ops.cpp), each one gtest running all of the op's shapes:
///   cpu_fast             kernels/cpu directly (the code learners read)
///   emulated_v1/v2_<s>   kernels/cuda launchers under the SIMT emulator, three thread schedules
///   cuda_v1/v2           the same launchers built by nvcc, on a GPU
///   cpu_backend          CpuKernelBackend (what training runs on cpu and sim devices: its GEMMs
///                        are parallel_linear.h, not kernels/cpu's matmul)
///   emulated_backend_<s> the emulated CUDA backend (v2 kernels), in-order and random schedules
///   gpu_backend          the GPU CUDA backend on GPU memory
///   meta_backend         the meta backend: nothing may run, so every buffer must keep its bytes
/// The backend columns test the backends' own glue (argument order, eps, the unpadded vocabulary,
/// the loss-sum scratch, the typed checks of the views), which the raw-pointer columns bypass.
///
/// Error measure, per compared buffer: normalized max error = max_i |x_i − ref_i| / max_i |ref_i|
/// (the denominator floored at 1e-30); non-finite values must match exactly.
/// Tolerances (per dtype; every kernel here computes in f32, so only f32 rows exist; the bf16/f16
/// storage columns of test_ops_storage.cpp derive theirs from these):
///   f32 elementwise ops (one rounding per formula)           1e-6
///   f32 row reductions (norms, softmax, cross-entropy, rope) 1e-5
///   f32 attention, GEMM (sums over T or C products)          2e-5
///   f64 results of double-accumulated reductions             1e-9
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/memory/tensor_view.h"
#include "common/nn/kernel_backend.h"
#include "kernels/cuda/ops.h"

namespace vramlab::ops_test {

/// Relative tolerance of the op table's elementwise ops (one or two roundings of a float result).
inline constexpr double kElementwiseTolerance = 2e-6;

/// Element type of a buffer.
enum class Dtype {
  f32,  ///< float (the reference sees it widened to double)
  f64,  ///< double (scalar results of reductions)
  i32,  ///< int32 token ids and targets
};

/// How a buffer is filled before every run (seeded: identical on every backend).
enum class Init {
  normal,         ///< N(0, scale²)
  positive,       ///< uniform in [0.5, 1.5) (variances, second moments)
  index_below_V,  ///< i32 uniform in [0, shape.V)
};

/// Which storage type a buffer takes when an op runs on 16-bit storage (kernel_backend.h, "Storage
/// types"); the f32 columns ignore it.
enum class Role {
  activation,  ///< an activation, its gradient, a weight or a bias: the op's type A
  param_grad,  ///< a parameter gradient (dweight, dbias, dwte, dwpe): the op's type G
  stat,        ///< always f32: norm statistics, losses, logsumexp
};

/// One buffer of an op.
struct BufferSpec {
  std::string name;   ///< as in the kernel's signature, e.g. "dinp"
  int64_t count = 0;  ///< elements
  Dtype dtype = Dtype::f32;
  Init init = Init::normal;
  double scale = 1.0;            ///< standard deviation of Init::normal
  bool compare = false;          ///< an output (checked against the reference)
  Role role = Role::activation;  ///< its storage type under bf16/f16 (f32 and i32 buffers only)
};

/// Every size any op uses; each op reads the ones it needs. label names the shape in messages.
struct Shape {
  std::string label;  ///< e.g. "N33_C257"
  int64_t n = 0;      ///< elements of flat ops
  int64_t N = 0, C = 0;
  int64_t B = 0, T = 0, H = 0, Hkv = 0, D = 0, V = 0, Vp = 0;
  int64_t step = 1;             ///< optimizer step
  int64_t position_offset = 0;  ///< RoPE: position of t = 0 (the backend has only 0)
  bool no_bias = false;         ///< matmul: no bias / dbias (nullptr, or the "none" view)
  bool no_dinp = false;         ///< matmul_backward: no dinp (the first layer's input)
  bool no_momentum = false;     ///< sgd_update: momentum 0 and no momentum buffer
  bool unfactored = false;      ///< adafactor_update: a vector (N = 1) with a full variance
  bool misaligned = false;      ///< shift every f32/i32 device buffer by 4 bytes (no float4 loads)
  float dropout_p = 0.0f;       ///< dropout ops: the drop probability
  uint64_t dropout_offset = 0;  ///< dropout ops: added to every mask index
};

/// Typed views of an op's buffers, in BufferSpec order. Real is float for the backends and double
/// for the reference (f32 buffers widened); f64 and i32 buffers keep their type.
template <class Real>
struct Args {
  std::vector<void*> pointers;  ///< one per BufferSpec
  /// \param k buffer index (an f32 buffer). \return its pointer.
  Real* f(std::size_t k) const { return static_cast<Real*>(pointers[k]); }
  /// \param k buffer index (an f64 buffer). \return its pointer.
  double* f64(std::size_t k) const { return static_cast<double*>(pointers[k]); }
  /// \param k buffer index (an i32 buffer). \return its pointer.
  int32_t* i32(std::size_t k) const { return static_cast<int32_t*>(pointers[k]); }
};

/// The buffers of an op as a KernelBackend takes them, in BufferSpec order: one flat view of
/// `count` elements per f32 or i32 buffer (the backend checks element counts, not dimensions),
/// on the backend's memory. An f64 buffer holds a result the backend returns to the host (sum's
/// double), so it has no view, only a host pointer.
struct Views {
  std::vector<memory::TensorView> tensors;  ///< one per BufferSpec ("none" for f64 buffers)
  std::vector<double*> host_f64;            ///< one per BufferSpec (nullptr unless f64)
  /// \param k buffer index (an f32 or i32 buffer). \return its view.
  const memory::TensorView& operator[](std::size_t k) const { return tensors[k]; }
  /// \param k buffer index (an f64 buffer). \return its host pointer.
  double* f64(std::size_t k) const { return host_f64[k]; }
};

/// One op of the table.
struct OpSpec {
  std::string name;           ///< e.g. "layernorm_backward"
  bool has_v2 = false;        ///< the CUDA op has an optimized kernel
  double tolerance = 1e-6;    ///< normalized max error allowed for f32 outputs
  std::vector<Shape> shapes;  ///< every shape the op runs at
  /// The buffers at a shape.
  std::function<std::vector<BufferSpec>(const Shape&)> buffers;
  /// The double CPU reference, on host buffers.
  std::function<void(const Shape&, const Args<double>&)> reference;
  /// The CPU fast path, on host buffers.
  std::function<void(const Shape&, const Args<float>&)> cpu_fast;
  /// The CUDA launcher, on device buffers.
  std::function<void(const Shape&, const Args<float>&, kernels::cuda::KernelVersion)> cuda;
  /// The op through a KernelBackend (what training runs), on the backend's memory; empty for ops
  /// the backend does not have (no backend columns then).
  std::function<void(const Shape&, const Views&, const nn::KernelBackend&)> backend = nullptr;
  /// The shapes of the backend columns when they differ from `shapes` (the backend has fewer
  /// knobs: no padded vocabulary, no RoPE position offset); empty: `shapes`.
  std::vector<Shape> backend_shapes = {};
};

/// \return the table whose CUDA calls go to the kernels compiled by g++ for the SIMT emulator.
const std::vector<OpSpec>& emulated_op_table();
/// \return the same table whose CUDA calls go to the nvcc-compiled kernels (only linked with
/// VRAMLAB_HAVE_CUDA).
const std::vector<OpSpec>& gpu_op_table();

}  // namespace vramlab::ops_test
