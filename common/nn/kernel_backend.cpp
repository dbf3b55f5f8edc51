// KernelKind names and the typed checks in front of every backend's kernels (see
// kernel_backend.h).
#include "common/nn/kernel_backend.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "common/dtype/bulk_convert.h"
#include "common/platform/errors.h"
#include "common/platform/free_cores.h"
#include "kernels/cpu/quantize.h"

namespace vramlab::nn {

namespace {

// The arguments of one op call: each view must have the dtype and the element count the op's
// sizes give it. Products that overflow int64 cannot match any view, so they are reported too.
class Arguments {
 public:
  explicit Arguments(const char* op) : op_(op) {}
  // An op with storage types: A from \p activation, G from \p parameter_gradient (A when none).
  Arguments(const char* op, const TensorView& activation, const TensorView& parameter_gradient)
      : op_(op) {
    types_.a = activation.dtype();
    types_.g = parameter_gradient.none() ? types_.a : parameter_gradient.dtype();
    require(is_storage_type(types_.a), "activations are " + std::string(dtype_name(types_.a)) +
                                           "; the op needs f32, bf16 or f16");
    require(types_.g == DType::f32 || types_.g == types_.a,
            "parameter gradients are " + std::string(dtype_name(types_.g)) + " with " +
                std::string(dtype_name(types_.a)) +
                " activations; they must be f32 or the activations' type");
  }
  [[nodiscard]] OpTypes types() const { return types_; }
  // The dtype the op computes in, for the roofline's peak: A (f32 for ops without storage types).
  [[nodiscard]] DType compute() const { return types_.a; }
  // Bytes of every operand checked so far, each once (KernelWork::bytes).
  [[nodiscard]] double bytes() const { return bytes_; }

  // An operand of any dtype, whole (fill_zero, the copies): only counted.
  void* any(const TensorView& view) const {
    bytes_ += static_cast<double>(view.bytes());
    return view.data();
  }

  // An activation, its gradient, a weight or a bias: type A.
  void* act(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, types_.a, numel, false);
    return view.data();
  }
  void* act_or_none(const TensorView& view, const char* name, int64_t numel) const {
    return view.none() ? nullptr : act(view, name, numel);
  }
  void* act_prefix_or_none(const TensorView& view, const char* name, int64_t numel) const {
    if (view.none()) return nullptr;
    check(view, name, types_.a, numel, true);
    return view.data();
  }
  // A parameter gradient: type G.
  void* grad(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, types_.g, numel, false);
    return view.data();
  }
  void* grad_or_none(const TensorView& view, const char* name, int64_t numel) const {
    return view.none() ? nullptr : grad(view, name, numel);
  }
  void* grad_prefix_or_none(const TensorView& view, const char* name, int64_t numel) const {
    if (view.none()) return nullptr;
    check(view, name, types_.g, numel, true);
    return view.data();
  }
  // Any of f32, bf16, f16 (casts, the gradient check, optimizer tensors).
  void* storage(const TensorView& view, const char* name, int64_t numel) const {
    require(is_storage_type(view.dtype()), std::string(name) + " is " +
                                               std::string(dtype_name(view.dtype())) +
                                               "; the op needs f32, bf16 or f16");
    check(view, name, view.dtype(), numel, false);
    return view.data();
  }
  void* storage_or_none(const TensorView& view, const char* name, int64_t numel) const {
    return view.none() ? nullptr : storage(view, name, numel);
  }

  float* f32(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::f32, numel, false);
    return static_cast<float*>(view.data());
  }
  int32_t* i32(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::i32, numel, false);
    return static_cast<int32_t*>(view.data());
  }
  uint8_t* u8(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::u8, numel, false);
    return static_cast<uint8_t*>(view.data());
  }
  int8_t* i8(const TensorView& view, const char* name, int64_t numel) const {
    check(view, name, DType::i8, numel, false);
    return static_cast<int8_t*>(view.data());
  }
  // A scalar argument the op needs in range (a model validates the user's value first).
  void require(bool condition, const std::string& message) const {
    if (!condition) throw InternalError(std::string(op_) + ": " + message);
  }
  void dropout_probability(float p) const {
    std::ostringstream text;
    text.precision(9);
    text << "dropout probability p = " << p << " must be in [0, 1)";
    require(p >= 0.0f && p < 1.0f, text.str());
  }

 private:
  void check(const TensorView& view, const char* name, DType dtype, int64_t numel,
             bool prefix) const {
    const bool count_ok = prefix ? view.numel() >= numel : view.numel() == numel;
    if (view.dtype() == dtype && numel >= 0 && count_ok) {
      bytes_ += static_cast<double>(numel) * static_cast<double>(dtype_size_bytes(dtype));
      return;
    }
    throw InternalError(std::string(op_) + ": " + name + " is a " +
                        std::string(dtype_name(view.dtype())) + " tensor " +
                        memory::format_shape(view.shape()) + " of " + std::to_string(view.numel()) +
                        " elements; the op needs " + (prefix ? "at least " : "") +
                        (numel < 0 ? std::string("an impossible size (negative or overflowing)")
                                   : std::to_string(numel) + " elements") +
                        " of " + std::string(dtype_name(dtype)));
  }

  static bool is_storage_type(DType t) {
    return t == DType::f32 || t == DType::bf16 || t == DType::f16;
  }

  const char* op_;
  OpTypes types_;
  mutable double bytes_ = 0.0;
};

// 2·M·K·N: a (M × K)·(K × N) matmul's FLOPs (KernelWork::flops).
double matmul_flops(int64_t M, int64_t K, int64_t N) {
  return 2.0 * static_cast<double>(M) * static_cast<double>(K) * static_cast<double>(N);
}

// One matmul of causal attention (QKᵀ, AV or one of their gradients) over H heads of size D: only
// the scores of keys s ≤ t exist, so Σ_t (t + 1) = T(T + 1)/2 rows of D multiply-adds per head,
// B·H·D·T(T + 1) FLOPs in all.
double causal_attention_matmul_flops(int64_t B, int64_t T, int64_t H, int64_t D) {
  return static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(D) *
         static_cast<double>(T) * (static_cast<double>(T) + 1.0);
}

int64_t product(std::initializer_list<int64_t> sizes) {
  int64_t total = 1;
  for (const int64_t s : sizes)
    if (s < 0 || __builtin_mul_overflow(total, s, &total)) return -1;
  return total;
}

}  // namespace

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::cpu:
      return "cpu";
    case KernelKind::cuda_emulated:
      return "cuda-emulated";
    case KernelKind::cuda:
      return "cuda";
    case KernelKind::meta:
      return "meta";
  }
  return "unknown";
}

KernelKind parse_kernel_kind(std::string_view text) {
  for (const KernelKind kind :
       {KernelKind::cpu, KernelKind::cuda_emulated, KernelKind::cuda, KernelKind::meta})
    if (text == kernel_kind_name(kind)) return kind;
  throw UsageError("unknown kernels '" + std::string(text) +
                   "' (expected cpu, cuda-emulated, cuda or meta)");
}

namespace {

// A kernel call as the backend's observer hears it: started, then finished (also when the kernel
// throws, so the observer's spans stay balanced).
class KernelSpan {
 public:
  KernelSpan(KernelObserver& observer, std::string_view op, const KernelWork& work)
      : observer_(observer), op_(op), work_(work) {
    observer_.kernel_started(op_);
  }
  ~KernelSpan() { observer_.kernel_finished(op_, work_); }
  KernelSpan(const KernelSpan&) = delete;
  KernelSpan& operator=(const KernelSpan&) = delete;

 private:
  KernelObserver& observer_;
  std::string_view op_;
  KernelWork work_;
};

// Note [Meta kernels]
// A meta buffer has an address and no memory, so on meta no kernel may run: every op returns after
// its checks, with a value-initialised result (sum() is 0, check_gradients() finds nothing). The
// skip is here, where every op passes, rather than in a backend of empty overrides that each new
// op would have to extend; the meta backend is the CPU one with its kind changed, so it is complete
// by construction, and no CPU kernel is reached from it.
template <typename Kernel, typename... Args>
decltype(auto) run_kernel(const KernelBackend& backend, Kernel kernel, Args&&... args) {
  using Result = decltype((backend.*kernel)(std::forward<Args>(args)...));
  if (backend.kind() == KernelKind::meta) return Result();
  return (backend.*kernel)(std::forward<Args>(args)...);
}

// A kernel call placed on the clock's current stream (Note [The stream clock] in
// common/stream/clock.cpp) with its measured time, or its roofline time when the backend has one:
// the kernel ran synchronously on this machine, or (on meta) did not run at all.
class ClockSpan {
 public:
  ClockSpan(stream::Clock* clock, std::string_view op, std::optional<double> roofline_seconds)
      : clock_(clock),
        op_(op),
        roofline_seconds_(roofline_seconds),
        start_(clock != nullptr && !roofline_seconds ? Clock::now() : Clock::time_point{}) {}
  ~ClockSpan() {
    if (clock_ == nullptr) return;
    const double seconds = roofline_seconds_
                               ? *roofline_seconds_
                               : std::chrono::duration<double>(Clock::now() - start_).count();
    clock_->enqueue(clock_->current_stream(), seconds, op_);
  }
  ClockSpan(const ClockSpan&) = delete;
  ClockSpan& operator=(const ClockSpan&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  stream::Clock* clock_;
  std::string_view op_;
  std::optional<double> roofline_seconds_;
  Clock::time_point start_;
};

// Runs \p kernel, one of \p backend's do_ implementations, inside a KernelSpan named \p op when
// an observer is installed, on the cores other processes leave free (Note [Sharing the cores]),
// and places it on the backend's clock when \p on_clock (a copy's time is the link's, which the
// Runtime knows). \p a has checked the arguments, counting their bytes, and \p flops are the
// op's matmul FLOPs (KernelWork). The caller evaluates the arguments, so the argument checks
// happen before the span starts, and a call that fails them is not a kernel. On meta the span is
// still recorded: a profile of a meta run shows which kernels a step calls.
template <bool on_clock = true, typename Kernel, typename... Args>
decltype(auto) observed(const KernelBackend& backend, std::string_view op, const Arguments& a,
                        double flops, Kernel kernel, Args&&... args) {
  platform::fit_threads_to_free_cores();
  const KernelWork work{flops, a.bytes()};
  const std::optional<Roofline>& roofline = backend.roofline();
  const ClockSpan timed(
      on_clock ? backend.clock() : nullptr, op,
      roofline ? std::optional(roofline->seconds(work, a.compute())) : std::nullopt);
  KernelObserver* const observer = backend.observer();
  if (observer == nullptr) [[likely]]
    return run_kernel(backend, kernel, std::forward<Args>(args)...);
  const KernelSpan span(*observer, op, work);
  return run_kernel(backend, kernel, std::forward<Args>(args)...);
}

}  // namespace

void KernelBackend::fill_zero(const TensorView& buffer) const {
  const Arguments a("fill_zero");
  if (buffer.numel() > 0)
    observed(*this, "fill_zero", a, 0.0, &KernelBackend::do_fill_zero, a.any(buffer),
             static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::copy_to_device(const TensorView& buffer, const void* host_pointer) const {
  const Arguments a("copy_to_device");
  if (buffer.numel() > 0)
    observed<false>(*this, "copy_to_device", a, 0.0, &KernelBackend::do_copy_to_device,
                    a.any(buffer), host_pointer, static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::copy_to_host(void* host_pointer, const TensorView& buffer) const {
  const Arguments a("copy_to_host");
  if (buffer.numel() > 0)
    observed<false>(*this, "copy_to_host", a, 0.0, &KernelBackend::do_copy_to_host, host_pointer,
                    a.any(buffer), static_cast<size_t>(buffer.bytes()));
}

void KernelBackend::fill_from_host(const TensorView& buffer, const HostGenerator& generate) const {
  const Arguments a("fill_from_host");
  observed(*this, "fill_from_host", a, 0.0, &KernelBackend::do_fill_from_host,
           a.storage(buffer, "buffer", buffer.numel()), buffer.dtype(), buffer.numel(), generate);
}

void KernelBackend::do_fill_from_host(void* device_pointer, DType dtype, int64_t numel,
                                      const HostGenerator& generate) const {
  constexpr int64_t kChunkElements = int64_t{1} << 20;
  const auto chunk = static_cast<size_t>(std::min(numel, kChunkElements));
  std::vector<float> staging(chunk);                              // (chunk) f32 values
  std::vector<uint16_t> narrow(dtype == DType::f32 ? 0 : chunk);  // (chunk) rounded to dtype
  const size_t element = dtype_size_bytes(dtype);
  for (int64_t first = 0; first < numel; first += kChunkElements) {
    const int64_t count = std::min(kChunkElements, numel - first);
    generate(staging.data(), first, count);
    const void* source = staging.data();
    if (dtype == DType::bf16) convert_f32_to_bf16(staging.data(), narrow.data(), size_t(count));
    if (dtype == DType::f16) convert_f32_to_f16(staging.data(), narrow.data(), size_t(count));
    if (dtype != DType::f32) source = narrow.data();
    do_copy_to_device(static_cast<char*>(device_pointer) + static_cast<size_t>(first) * element,
                      source, static_cast<size_t>(count) * element);
  }
}

void KernelBackend::linear_forward(const TensorView& out, const TensorView& inp,
                                   const TensorView& weight, const TensorView& bias, int64_t N,
                                   int64_t C, int64_t OC) const {
  const Arguments a("linear_forward", inp, {});
  observed(*this, "linear_forward", a, matmul_flops(N, C, OC), &KernelBackend::do_linear_forward,
           a.types(), a.act(out, "out", product({N, OC})), a.act(inp, "inp", product({N, C})),
           a.act(weight, "weight", product({OC, C})), a.act_or_none(bias, "bias", OC), N, C, OC);
}

void KernelBackend::linear_backward(const TensorView& dinp, const TensorView& dweight,
                                    const TensorView& dbias, const TensorView& dout,
                                    const TensorView& inp, const TensorView& weight, int64_t N,
                                    int64_t C, int64_t OC) const {
  const Arguments a("linear_backward", inp, dweight);
  const double flops = matmul_flops(N, C, OC) * (dinp.none() ? 1.0 : 2.0);  // dweight (, dinp)
  observed(*this, "linear_backward", a, flops, &KernelBackend::do_linear_backward, a.types(),
           a.act_or_none(dinp, "dinp", product({N, C})),
           a.grad(dweight, "dweight", product({OC, C})), a.grad_or_none(dbias, "dbias", OC),
           a.act(dout, "dout", product({N, OC})), a.act(inp, "inp", product({N, C})),
           a.act(weight, "weight", product({OC, C})), N, C, OC);
}

void KernelBackend::layernorm_forward(const TensorView& out, const TensorView& mean,
                                      const TensorView& rstd, const TensorView& inp,
                                      const TensorView& weight, const TensorView& bias, int64_t N,
                                      int64_t C) const {
  const Arguments a("layernorm_forward", inp, {});
  const int64_t NC = product({N, C});
  observed(*this, "layernorm_forward", a, 0.0, &KernelBackend::do_layernorm_forward, a.types(),
           a.act(out, "out", NC), a.f32(mean, "mean", N), a.f32(rstd, "rstd", N),
           a.act(inp, "inp", NC), a.act(weight, "weight", C), a.act(bias, "bias", C), N, C);
}

void KernelBackend::layernorm_backward(const TensorView& dinp, const TensorView& dweight,
                                       const TensorView& dbias, const TensorView& dout,
                                       const TensorView& inp, const TensorView& weight,
                                       const TensorView& mean, const TensorView& rstd, int64_t N,
                                       int64_t C) const {
  const Arguments a("layernorm_backward", inp, dweight);
  const int64_t NC = product({N, C});
  observed(*this, "layernorm_backward", a, 0.0, &KernelBackend::do_layernorm_backward, a.types(),
           a.act(dinp, "dinp", NC), a.grad(dweight, "dweight", C), a.grad(dbias, "dbias", C),
           a.act(dout, "dout", NC), a.act(inp, "inp", NC), a.act(weight, "weight", C),
           a.f32(mean, "mean", N), a.f32(rstd, "rstd", N), N, C);
}

void KernelBackend::rmsnorm_forward(const TensorView& out, const TensorView& rstd,
                                    const TensorView& inp, const TensorView& weight, int64_t N,
                                    int64_t C) const {
  const Arguments a("rmsnorm_forward", inp, {});
  const int64_t NC = product({N, C});
  observed(*this, "rmsnorm_forward", a, 0.0, &KernelBackend::do_rmsnorm_forward, a.types(),
           a.act(out, "out", NC), a.f32(rstd, "rstd", N), a.act(inp, "inp", NC),
           a.act(weight, "weight", C), N, C);
}

void KernelBackend::rmsnorm_backward(const TensorView& dinp, const TensorView& dweight,
                                     const TensorView& dout, const TensorView& inp,
                                     const TensorView& weight, const TensorView& rstd, int64_t N,
                                     int64_t C) const {
  const Arguments a("rmsnorm_backward", inp, dweight);
  const int64_t NC = product({N, C});
  observed(*this, "rmsnorm_backward", a, 0.0, &KernelBackend::do_rmsnorm_backward, a.types(),
           a.act(dinp, "dinp", NC), a.grad(dweight, "dweight", C), a.act(dout, "dout", NC),
           a.act(inp, "inp", NC), a.act(weight, "weight", C), a.f32(rstd, "rstd", N), N, C);
}

void KernelBackend::residual_forward(const TensorView& out, const TensorView& a_in,
                                     const TensorView& b_in) const {
  const Arguments a("residual_forward", a_in, {});
  const int64_t n = out.numel();
  observed(*this, "residual_forward", a, 0.0, &KernelBackend::do_residual_forward, a.types(),
           a.act(out, "out", n), a.act(a_in, "a", n), a.act(b_in, "b", n), n);
}

void KernelBackend::gelu_forward(const TensorView& out, const TensorView& inp) const {
  const Arguments a("gelu_forward", inp, {});
  const int64_t n = out.numel();
  observed(*this, "gelu_forward", a, 0.0, &KernelBackend::do_gelu_forward, a.types(),
           a.act(out, "out", n), a.act(inp, "inp", n), n);
}

void KernelBackend::gelu_backward(const TensorView& dinp, const TensorView& inp,
                                  const TensorView& dout) const {
  const Arguments a("gelu_backward", inp, {});
  const int64_t n = dinp.numel();
  observed(*this, "gelu_backward", a, 0.0, &KernelBackend::do_gelu_backward, a.types(),
           a.act(dinp, "dinp", n), a.act(inp, "inp", n), a.act(dout, "dout", n), n);
}

void KernelBackend::swiglu_forward(const TensorView& out, const TensorView& gate,
                                   const TensorView& up) const {
  const Arguments a("swiglu_forward", gate, {});
  const int64_t n = out.numel();
  observed(*this, "swiglu_forward", a, 0.0, &KernelBackend::do_swiglu_forward, a.types(),
           a.act(out, "out", n), a.act(gate, "gate", n), a.act(up, "up", n), n);
}

void KernelBackend::swiglu_backward(const TensorView& dgate, const TensorView& dup,
                                    const TensorView& dout, const TensorView& gate,
                                    const TensorView& up) const {
  const Arguments a("swiglu_backward", gate, {});
  const int64_t n = dout.numel();
  observed(*this, "swiglu_backward", a, 0.0, &KernelBackend::do_swiglu_backward, a.types(),
           a.act(dgate, "dgate", n), a.act(dup, "dup", n), a.act(dout, "dout", n),
           a.act(gate, "gate", n), a.act(up, "up", n), n);
}

void KernelBackend::dropout_forward(const TensorView& out, const TensorView& inp, float p,
                                    uint64_t seed, uint64_t offset) const {
  const Arguments a("dropout_forward", inp, {});
  a.dropout_probability(p);
  const int64_t n = out.numel();
  observed(*this, "dropout_forward", a, 0.0, &KernelBackend::do_dropout_forward, a.types(),
           a.act(out, "out", n), a.act(inp, "inp", n), n, p, seed, offset);
}

void KernelBackend::dropout_backward(const TensorView& dinp, const TensorView& dout, float p,
                                     uint64_t seed, uint64_t offset) const {
  const Arguments a("dropout_backward", dout, {});
  a.dropout_probability(p);
  const int64_t n = dinp.numel();
  observed(*this, "dropout_backward", a, 0.0, &KernelBackend::do_dropout_backward, a.types(),
           a.act(dinp, "dinp", n), a.act(dout, "dout", n), n, p, seed, offset);
}

void KernelBackend::quantize_int8(const TensorView& q, const TensorView& scales,
                                  const TensorView& x, int64_t block) const {
  const Arguments a("quantize_int8", x, {});
  a.require(block >= 1, "block = " + std::to_string(block) + " must be >= 1");
  const int64_t n = x.numel();
  observed(*this, "quantize_int8", a, 0.0, &KernelBackend::do_quantize_int8, a.types(),
           a.i8(q, "q", n), a.f32(scales, "scales", kernels::cpu::int8_block_count(n, block)),
           a.act(x, "x", n), n, block);
}

void KernelBackend::dequantize_int8(const TensorView& x, const TensorView& q,
                                    const TensorView& scales, int64_t block) const {
  const Arguments a("dequantize_int8", x, {});
  a.require(block >= 1, "block = " + std::to_string(block) + " must be >= 1");
  const int64_t n = x.numel();
  observed(*this, "dequantize_int8", a, 0.0, &KernelBackend::do_dequantize_int8, a.types(),
           a.act(x, "x", n), a.i8(q, "q", n),
           a.f32(scales, "scales", kernels::cpu::int8_block_count(n, block)), n, block);
}

void KernelBackend::rope_forward(const TensorView& out, const TensorView& inp, int64_t B, int64_t T,
                                 int64_t H, int64_t D, double theta) const {
  const Arguments a("rope_forward", inp, {});
  const int64_t n = product({B, T, H, D});
  observed(*this, "rope_forward", a, 0.0, &KernelBackend::do_rope_forward, a.types(),
           a.act(out, "out", n), a.act(inp, "inp", n), B, T, H, D, theta);
}

void KernelBackend::rope_backward(const TensorView& dinp, const TensorView& dout, int64_t B,
                                  int64_t T, int64_t H, int64_t D, double theta) const {
  const Arguments a("rope_backward", dout, {});
  const int64_t n = product({B, T, H, D});
  observed(*this, "rope_backward", a, 0.0, &KernelBackend::do_rope_backward, a.types(),
           a.act(dinp, "dinp", n), a.act(dout, "dout", n), B, T, H, D, theta);
}

void KernelBackend::attention_forward(const TensorView& out, const TensorView& preatt,
                                      const TensorView& att, const TensorView& q,
                                      const TensorView& k, const TensorView& v, int64_t B,
                                      int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                      const AttentionDropout& dropout) const {
  const Arguments a("attention_forward", q, {});
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const int64_t scores = product({B, H, T, T});
  // QKᵀ, and AV unless only the probabilities are asked for.
  const double flops = causal_attention_matmul_flops(B, T, H, D) * (out.none() ? 1.0 : 2.0);
  observed(*this, "attention_forward", a, flops, &KernelBackend::do_attention_forward, a.types(),
           a.act_or_none(out, "out", q_numel), a.act(preatt, "preatt", scores),
           a.act(att, "att", scores), a.act(q, "q", q_numel), a.act(k, "k", kv_numel),
           a.act(v, "v", kv_numel), B, T, H, Hkv, D, dropout);
}

void KernelBackend::attention_backward(const TensorView& dq, const TensorView& dk,
                                       const TensorView& dv, const TensorView& dpreatt,
                                       const TensorView& dout, const TensorView& q,
                                       const TensorView& k, const TensorView& v,
                                       const TensorView& att, int64_t B, int64_t T, int64_t H,
                                       int64_t Hkv, int64_t D,
                                       const AttentionDropout& dropout) const {
  const Arguments a("attention_backward", q, {});
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const int64_t scores = product({B, H, T, T});
  const double flops = 4.0 * causal_attention_matmul_flops(B, T, H, D);  // d(att), dv, dq, dk
  observed(*this, "attention_backward", a, flops, &KernelBackend::do_attention_backward, a.types(),
           a.act(dq, "dq", q_numel), a.act(dk, "dk", kv_numel), a.act(dv, "dv", kv_numel),
           a.act(dpreatt, "dpreatt", scores), a.act(dout, "dout", q_numel), a.act(q, "q", q_numel),
           a.act(k, "k", kv_numel), a.act(v, "v", kv_numel), a.act(att, "att", scores), B, T, H,
           Hkv, D, dropout);
}

void KernelBackend::flash_attention_forward(const TensorView& out, const TensorView& lse,
                                            const TensorView& q, const TensorView& k,
                                            const TensorView& v, int64_t B, int64_t T, int64_t H,
                                            int64_t Hkv, int64_t D,
                                            const AttentionDropout& dropout) const {
  const Arguments a("flash_attention_forward", q, {});
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const double flops = 2.0 * causal_attention_matmul_flops(B, T, H, D);  // QKᵀ, AV
  observed(*this, "flash_attention_forward", a, flops, &KernelBackend::do_flash_attention_forward,
           a.types(), a.act(out, "out", q_numel), a.f32(lse, "lse", product({B, H, T})),
           a.act(q, "q", q_numel), a.act(k, "k", kv_numel), a.act(v, "v", kv_numel), B, T, H, Hkv,
           D, dropout);
}

void KernelBackend::flash_attention_backward(const TensorView& dq, const TensorView& dk,
                                             const TensorView& dv, const TensorView& delta,
                                             const TensorView& dout, const TensorView& q,
                                             const TensorView& k, const TensorView& v,
                                             const TensorView& out, const TensorView& lse,
                                             int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                             int64_t D, const AttentionDropout& dropout) const {
  const Arguments a("flash_attention_backward", q, {});
  a.dropout_probability(dropout.p);
  const int64_t q_numel = product({B, T, H, D}), kv_numel = product({B, T, Hkv, D});
  const int64_t rows = product({B, H, T});
  const double flops =
      5.0 * causal_attention_matmul_flops(B, T, H, D);  // QKᵀ again, d(att), dv, dq, dk
  observed(*this, "flash_attention_backward", a, flops, &KernelBackend::do_flash_attention_backward,
           a.types(), a.act(dq, "dq", q_numel), a.act(dk, "dk", kv_numel),
           a.act(dv, "dv", kv_numel), a.f32(delta, "delta", rows), a.act(dout, "dout", q_numel),
           a.act(q, "q", q_numel), a.act(k, "k", kv_numel), a.act(v, "v", kv_numel),
           a.act(out, "out", q_numel), a.f32(lse, "lse", rows), B, T, H, Hkv, D, dropout);
}

void KernelBackend::embedding_forward(const TensorView& out, const TensorView& tokens,
                                      const TensorView& wte, const TensorView& wpe, int64_t B,
                                      int64_t T, int64_t C, int64_t V) const {
  const Arguments a("embedding_forward", wte, {});
  observed(*this, "embedding_forward", a, 0.0, &KernelBackend::do_embedding_forward, a.types(),
           a.act(out, "out", product({B, T, C})), a.i32(tokens, "tokens", product({B, T})),
           a.act(wte, "wte", product({V, C})), a.act_prefix_or_none(wpe, "wpe", product({T, C})), B,
           T, C, V);
}

void KernelBackend::embedding_backward(const TensorView& dwte, const TensorView& dwpe,
                                       const TensorView& dout, const TensorView& tokens, int64_t B,
                                       int64_t T, int64_t C, int64_t V) const {
  const Arguments a("embedding_backward", dout, dwte);
  observed(*this, "embedding_backward", a, 0.0, &KernelBackend::do_embedding_backward, a.types(),
           a.grad(dwte, "dwte", product({V, C})),
           a.grad_prefix_or_none(dwpe, "dwpe", product({T, C})),
           a.act(dout, "dout", product({B, T, C})), a.i32(tokens, "tokens", product({B, T})), B, T,
           C, V);
}

void KernelBackend::cross_entropy_forward(const TensorView& losses, const TensorView& logsumexp,
                                          const TensorView& probs, const TensorView& logits,
                                          const TensorView& targets, int64_t N, int64_t V) const {
  const Arguments a("cross_entropy_forward", logits, {});
  const int64_t NV = product({N, V});
  observed(*this, "cross_entropy_forward", a, 0.0, &KernelBackend::do_cross_entropy_forward,
           a.types(), a.f32(losses, "losses", N), a.f32(logsumexp, "logsumexp", N),
           a.act(probs, "probs", NV), a.act(logits, "logits", NV), a.i32(targets, "targets", N), N,
           V);
}

void KernelBackend::cross_entropy_dlogits(const TensorView& dlogits, const TensorView& probs,
                                          const TensorView& targets, int64_t N, int64_t V,
                                          float scale) const {
  const Arguments a("cross_entropy_dlogits", probs, {});
  const int64_t NV = product({N, V});
  observed(*this, "cross_entropy_dlogits", a, 0.0, &KernelBackend::do_cross_entropy_dlogits,
           a.types(), a.act(dlogits, "dlogits", NV), a.act(probs, "probs", NV),
           a.i32(targets, "targets", N), N, V, scale);
}

double KernelBackend::sum(const TensorView& x) const {
  const Arguments a("sum", x, {});
  return observed(*this, "sum", a, 0.0, &KernelBackend::do_sum, a.types(), a.act(x, "x", x.numel()),
                  x.numel());
}

void KernelBackend::cast(const TensorView& out, const TensorView& inp) const {
  const Arguments a("cast");
  const int64_t n = inp.numel();
  observed(*this, "cast", a, 0.0, &KernelBackend::do_cast, a.storage(out, "out", n), out.dtype(),
           a.storage(inp, "inp", n), inp.dtype(), n);
}

KernelBackend::GradientCheck KernelBackend::check_gradients(const TensorView& grads,
                                                            float multiplier) const {
  const Arguments a("check_gradients");
  return observed(*this, "check_gradients", a, 0.0, &KernelBackend::do_check_gradients,
                  a.storage(grads, "grads", grads.numel()), grads.dtype(), grads.numel(),
                  multiplier);
}

namespace {

// The optimizer's tensors: param f32 or bf16, state like param's rule (f32 or bf16, all the same),
// grad any storage type, working none or 16-bit.
OptimizerTypes optimizer_types(const Arguments& a, const TensorView& param, const TensorView& grad,
                               const TensorView& state, const TensorView& working,
                               const ParameterRounding& rounding) {
  OptimizerTypes types;
  types.param = param.dtype();
  types.grad = grad.dtype();
  types.state = state.none() ? param.dtype() : state.dtype();
  types.working = working.none() ? param.dtype() : working.dtype();
  a.require(
      types.param == DType::f32 || types.param == DType::bf16,
      "param is " + std::string(dtype_name(types.param)) + "; the optimizer updates f32 or bf16");
  a.require(types.state == DType::f32 || types.state == DType::bf16,
            "state is " + std::string(dtype_name(types.state)) + "; it must be f32 or bf16");
  a.require(
      working.none() || types.working == DType::bf16 || types.working == DType::f16,
      "working copy is " + std::string(dtype_name(types.working)) + "; it must be bf16 or f16");
  a.require(!rounding.stochastic || types.param != DType::f32,
            "stochastic rounding applies to a 16-bit param; this one is f32 (exact)");
  return types;
}

}  // namespace

void KernelBackend::adamw_update(const TensorView& param, const TensorView& grad,
                                 const TensorView& m, const TensorView& v,
                                 const TensorView& working,
                                 const kernels::cpu::AdamWHyperparameters& hp,
                                 const UpdateStep& at) const {
  const Arguments a("adamw_update");
  const int64_t n = param.numel();
  const OptimizerTypes types = optimizer_types(a, param, grad, m, working, at.rounding);
  a.require(v.dtype() == types.state, "exp_avg_sq is " + std::string(dtype_name(v.dtype())) +
                                          " but exp_avg is " +
                                          std::string(dtype_name(types.state)));
  observed(*this, "adamw_update", a, 0.0, &KernelBackend::do_adamw_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n), a.storage(m, "exp_avg", n),
           a.storage(v, "exp_avg_sq", n), a.storage_or_none(working, "working", n), n, hp, at);
}

void KernelBackend::sgd_update(const TensorView& param, const TensorView& grad,
                               const TensorView& momentum_buffer, const TensorView& working,
                               const kernels::cpu::SgdHyperparameters& hp,
                               const UpdateStep& at) const {
  const Arguments a("sgd_update");
  const int64_t n = param.numel();
  const OptimizerTypes types =
      optimizer_types(a, param, grad, momentum_buffer, working, at.rounding);
  observed(*this, "sgd_update", a, 0.0, &KernelBackend::do_sgd_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n),
           a.storage_or_none(momentum_buffer, "momentum_buffer", n),
           a.storage_or_none(working, "working", n), n, hp, at);
}

void KernelBackend::lion_update(const TensorView& param, const TensorView& grad,
                                const TensorView& m, const TensorView& working,
                                const kernels::cpu::LionHyperparameters& hp,
                                const UpdateStep& at) const {
  const Arguments a("lion_update");
  const int64_t n = param.numel();
  const OptimizerTypes types = optimizer_types(a, param, grad, m, working, at.rounding);
  observed(*this, "lion_update", a, 0.0, &KernelBackend::do_lion_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n), a.storage(m, "exp_avg", n),
           a.storage_or_none(working, "working", n), n, hp, at);
}

void KernelBackend::adam_mini_update(const TensorView& param, const TensorView& grad,
                                     const TensorView& m, const TensorView& v,
                                     const TensorView& working, int64_t block_size,
                                     const kernels::cpu::AdamWHyperparameters& hp,
                                     const UpdateStep& at) const {
  const Arguments a("adam_mini_update");
  const int64_t n = param.numel();
  a.require(block_size >= 1 && n % block_size == 0, "block size " + std::to_string(block_size) +
                                                        " must divide the " + std::to_string(n) +
                                                        " elements");
  const int64_t count = n / block_size;
  const OptimizerTypes types = optimizer_types(a, param, grad, m, working, at.rounding);
  a.require(v.dtype() == types.state, "v is " + std::string(dtype_name(v.dtype())) + " but m is " +
                                          std::string(dtype_name(types.state)));
  observed(*this, "adam_mini_update", a, 0.0, &KernelBackend::do_adam_mini_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n), a.storage(m, "exp_avg", n),
           a.storage(v, "v", count), a.storage_or_none(working, "working", n), block_size, count,
           hp, at);
}

void KernelBackend::adafactor_update(const TensorView& param, const TensorView& grad,
                                     const TensorView& row_var, const TensorView& col_var,
                                     const TensorView& working, int64_t rows, int64_t cols,
                                     bool factored,
                                     const kernels::cpu::AdafactorHyperparameters& hp,
                                     const UpdateStep& at) const {
  const Arguments a("adafactor_update");
  const int64_t n = param.numel();
  a.require(rows >= 1 && cols >= 1 && rows * cols == n && (factored || rows == 1),
            "shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                (factored ? " (factored)" : " (unfactored, rows must be 1)") + " does not hold " +
                std::to_string(n) + " elements");
  const OptimizerTypes types = optimizer_types(a, param, grad, row_var, working, at.rounding);
  a.require(factored != col_var.none(),
            factored ? "a factored step needs col_var" : "an unfactored step has no col_var");
  a.require(col_var.none() || col_var.dtype() == types.state,
            "col_var is " + std::string(dtype_name(col_var.dtype())) + " but row_var is " +
                std::string(dtype_name(types.state)));
  observed(*this, "adafactor_update", a, 0.0, &KernelBackend::do_adafactor_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n),
           a.storage(row_var, "row_var", factored ? rows : cols),
           a.storage_or_none(col_var, "col_var", cols), a.storage_or_none(working, "working", n),
           rows, cols, factored, hp, at);
}

void KernelBackend::adamw_8bit_update(const TensorView& param, const TensorView& grad,
                                      const TensorView& qm, const TensorView& qv,
                                      const TensorView& absmax_m, const TensorView& absmax_v,
                                      const TensorView& working, int64_t block,
                                      const kernels::cpu::AdamWHyperparameters& hp,
                                      const UpdateStep& at) const {
  const Arguments a("adamw_8bit_update");
  const int64_t n = param.numel();
  a.require(block >= 1, "block size " + std::to_string(block) + " must be positive");
  const int64_t blocks = kernels::cpu::quantization_block_count(n, block);
  const OptimizerTypes types = optimizer_types(a, param, grad, absmax_m, working, at.rounding);
  a.require(types.state == DType::f32, "absmax must be f32");
  observed(*this, "adamw_8bit_update", a, 0.0, &KernelBackend::do_adamw_8bit_update, types,
           a.storage(param, "param", n), a.storage(grad, "grad", n), a.u8(qm, "qm", n),
           a.u8(qv, "qv", n), a.f32(absmax_m, "absmax_m", blocks),
           a.f32(absmax_v, "absmax_v", blocks), a.storage_or_none(working, "working", n), n, block,
           hp, at);
}

}  // namespace vramlab::nn
