/// \file
/// \brief The table-driven op harness (like ggml's test-backend-ops): one table of ops × shapes,
/// every op run on every backend and compared with the CPU reference kernel in double.
///
/// An op is described once as data: its buffers (name, element count, dtype, how they are
/// initialized, whether they are compared) for a shape, and three calls on raw pointers: the
/// double reference (kernels/cpu `*_reference<double>`), the CPU fast path, and the CUDA launcher
/// (kernels/cuda/ops.h) with a KernelVersion. Every buffer starts from the same seeded random
/// values on every backend, outputs included, so forward kernels must write every element and
/// backward kernels must accumulate (+=) exactly as the reference does.
///
/// Error measure, per compared buffer: normalized max error = max_i |x_i − ref_i| / max_i |ref_i|
/// (the denominator floored at 1e-30); non-finite values must match exactly.
/// Tolerances (per dtype; every kernel here computes in f32, so only f32 rows exist):
///   f32 elementwise ops (one rounding per formula)           1e-6
///   f32 row reductions (norms, softmax, cross-entropy, rope) 1e-5
///   f32 attention, GEMM (sums over T or C products)          2e-5
///   f64 results of double-accumulated reductions             1e-9
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/ops.h"

namespace vramlab::ops_test {

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

/// One buffer of an op.
struct BufferSpec {
  std::string name;   ///< as in the kernel's signature, e.g. "dinp"
  int64_t count = 0;  ///< elements
  Dtype dtype = Dtype::f32;
  Init init = Init::normal;
  double scale = 1.0;    ///< standard deviation of Init::normal
  bool compare = false;  ///< an output (checked against the reference)
};

/// Every size any op uses; each op reads the ones it needs. label names the shape in messages.
struct Shape {
  std::string label;  ///< e.g. "N33_C257"
  int64_t n = 0;      ///< elements of flat ops
  int64_t N = 0, C = 0;
  int64_t B = 0, T = 0, H = 0, Hkv = 0, D = 0, V = 0, Vp = 0;
  int64_t step = 1;         ///< optimizer step
  bool misaligned = false;  ///< shift every f32/i32 device buffer by 4 bytes (no float4 loads)
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
};

/// \return the table whose CUDA calls go to the kernels compiled by g++ for the SIMT emulator.
const std::vector<OpSpec>& emulated_op_table();
/// \return the same table whose CUDA calls go to the nvcc-compiled kernels (only linked with
/// VRAMLAB_HAVE_CUDA).
const std::vector<OpSpec>& gpu_op_table();

}  // namespace vramlab::ops_test
