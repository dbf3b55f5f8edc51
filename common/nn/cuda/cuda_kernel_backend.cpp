// The CUDA kernel backend over kernels/cuda/ops.h (see cuda_kernel_backend.h). Compiled twice:
// as is (emulated launchers, host memory) and with VRAMLAB_NN_CUDA_GPU=1 and
// VRAMLAB_CUDA_OPS_ABI=gpu (nvcc-built launchers, device memory through the CUDA runtime).
#include "common/nn/cuda/cuda_kernel_backend.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/platform/errors.h"
#include "kernels/cuda/ops.h"

#if VRAMLAB_NN_CUDA_GPU
#include <cuda_runtime_api.h>
#endif

namespace vramlab::nn {

namespace {

namespace ops = kernels::cuda;

#if VRAMLAB_NN_CUDA_GPU
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
}

// The device doubles of the loss sum and the gradient check (ops::kCheckGradientsScratch),
// outside the caching allocator (so the allocator's stats are the same bytes as with the CPU
// kernels).
class DeviceScratch {
 public:
  DeviceScratch() {
    check(cudaMalloc(&value_, sizeof(double) * ops::kCheckGradientsScratch),
          "cudaMalloc(loss scratch)");
  }
  ~DeviceScratch() { cudaFree(value_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  [[nodiscard]] double* get() const { return static_cast<double*>(value_); }

 private:
  void* value_ = nullptr;
};
#else
// Emulated device memory is host memory: the scratch is host doubles, outside the allocator.
class DeviceScratch {
 public:
  [[nodiscard]] double* get() const { return values_; }

 private:
  mutable double values_[ops::kCheckGradientsScratch] = {};
};
#endif

// A storage type as a value, so one generic lambda receives the types a dispatch chose.
template <class T>
struct Storage {
  using type = T;
};

template <class T>
T* as(void* pointer) {
  return static_cast<T*>(pointer);
}
template <class T>
const T* as(const void* pointer) {
  return static_cast<const T*>(pointer);
}

[[noreturn]] void no_kernels(const char* op, const std::string& types) {
  throw InternalError(std::string(op) + ": no CUDA kernels for storage types " + types);
}

// Calls f(Storage<T>) for the storage type f32, bf16 or f16.
template <class F>
void dispatch_storage(DType type, const char* op, F&& f) {
  switch (type) {
    case DType::f32:
      return f(Storage<float>{});
    case DType::bf16:
      return f(Storage<bf16_t>{});
    case DType::f16:
      return f(Storage<f16_t>{});
    default:
      no_kernels(op, std::string(dtype_name(type)));
  }
}

// Calls f(Storage<A>, Storage<G>) for an op's (activation, parameter-gradient) pair: G is f32 or
// A, the pairs kernels/cuda instantiates (VRAMLAB_FOR_EACH_OP_TYPES).
template <class F>
void dispatch(OpTypes types, const char* op, F&& f) {
  dispatch_storage(types.a, op, [&](auto a) {
    using A = typename decltype(a)::type;
    if (types.g == DType::f32) return f(a, Storage<float>{});
    if (types.g == types.a) return f(a, Storage<A>{});
    no_kernels(op, std::string(dtype_name(types.a)) + "/" + std::string(dtype_name(types.g)));
  });
}

// Calls f(Storage<P>, Storage<R>, Storage<S>) for an optimizer's param (f32, bf16), grad (f32,
// bf16, f16) and state (f32, bf16) types; the working copy's type is the launcher's argument.
template <class F>
void dispatch_optimizer(const OptimizerTypes& types, const char* op, F&& f) {
  const auto only_f32_bf16 = [&](DType type, auto&& g) {
    if (type == DType::f32) return g(Storage<float>{});
    if (type == DType::bf16) return g(Storage<bf16_t>{});
    no_kernels(op, std::string(dtype_name(type)) + " (param and state are f32 or bf16)");
  };
  only_f32_bf16(types.param, [&](auto p) {
    dispatch_storage(types.grad, op,
                     [&](auto r) { only_f32_bf16(types.state, [&](auto s) { f(p, r, s); }); });
  });
}

class CudaKernelBackend final : public KernelBackend {
 public:
  [[nodiscard]] KernelKind kind() const override {
#if VRAMLAB_NN_CUDA_GPU
    return KernelKind::cuda;
#else
    return KernelKind::cuda_emulated;
#endif
  }

 private:
  void do_fill_zero(void* device_pointer, std::size_t bytes) const override {
    if (bytes == 0) return;
#if VRAMLAB_NN_CUDA_GPU
    check(cudaMemset(device_pointer, 0, bytes), "cudaMemset");
#else
    std::memset(device_pointer, 0, bytes);
#endif
  }
  void do_copy_to_device(void* device_pointer, const void* host_pointer,
                         std::size_t bytes) const override {
    if (bytes == 0) return;
#if VRAMLAB_NN_CUDA_GPU
    check(cudaMemcpy(device_pointer, host_pointer, bytes, cudaMemcpyHostToDevice),
          "cudaMemcpy(host to device)");
#else
    std::memcpy(device_pointer, host_pointer, bytes);
#endif
  }
  void do_copy_to_host(void* host_pointer, const void* device_pointer,
                       std::size_t bytes) const override {
    if (bytes == 0) return;
#if VRAMLAB_NN_CUDA_GPU
    check(cudaMemcpy(host_pointer, device_pointer, bytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy(device to host)");
#else
    std::memcpy(host_pointer, device_pointer, bytes);
#endif
  }

  void do_linear_forward(OpTypes types, void* out, const void* inp, const void* weight,
                         const void* bias, int64_t N, int64_t C, int64_t OC) const override {
    dispatch(types, "linear_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::matmul_forward<A>(as<A>(out), as<A>(inp), as<A>(weight), as<A>(bias), N, C, OC);
    });
  }
  void do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout,
                          const void* inp, const void* weight, int64_t N, int64_t C,
                          int64_t OC) const override {
    dispatch(types, "linear_backward", [&](auto a, auto g) {
      using A = typename decltype(a)::type;
      using G = typename decltype(g)::type;
      ops::matmul_backward<A, G>(as<A>(dinp), as<G>(dweight), as<G>(dbias), as<A>(dout), as<A>(inp),
                                 as<A>(weight), N, C, OC);
    });
  }
  void do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd, const void* inp,
                            const void* weight, const void* bias, int64_t N,
                            int64_t C) const override {
    dispatch(types, "layernorm_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::layernorm_forward<A>(as<A>(out), mean, rstd, as<A>(inp), as<A>(weight), as<A>(bias), N,
                                C, kLayerNormEps);
    });
  }
  void do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                             const void* dout, const void* inp, const void* weight,
                             const float* mean, const float* rstd, int64_t N,
                             int64_t C) const override {
    dispatch(types, "layernorm_backward", [&](auto a, auto g) {
      using A = typename decltype(a)::type;
      using G = typename decltype(g)::type;
      ops::layernorm_backward<A, G>(as<A>(dinp), as<G>(dweight), as<G>(dbias), as<A>(dout),
                                    as<A>(inp), as<A>(weight), mean, rstd, N, C);
    });
  }
  void do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp,
                          const void* weight, int64_t N, int64_t C) const override {
    dispatch(types, "rmsnorm_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::rmsnorm_forward<A>(as<A>(out), rstd, as<A>(inp), as<A>(weight), N, C, kLayerNormEps);
    });
  }
  void do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight, const void* dout,
                           const void* inp, const void* weight, const float* rstd, int64_t N,
                           int64_t C) const override {
    dispatch(types, "rmsnorm_backward", [&](auto a, auto g) {
      using A = typename decltype(a)::type;
      using G = typename decltype(g)::type;
      ops::rmsnorm_backward<A, G>(as<A>(dinp), as<G>(dweight), as<A>(dout), as<A>(inp),
                                  as<A>(weight), rstd, N, C);
    });
  }
  void do_residual_forward(OpTypes types, void* out, const void* a_in, const void* b_in,
                           int64_t n) const override {
    dispatch(types, "residual_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::residual_forward<A>(as<A>(out), as<A>(a_in), as<A>(b_in), n);
    });
  }
  void do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const override {
    dispatch(types, "gelu_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::gelu_forward<A>(as<A>(out), as<A>(inp), n);
    });
  }
  void do_gelu_backward(OpTypes types, void* dinp, const void* inp, const void* dout,
                        int64_t n) const override {
    dispatch(types, "gelu_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::gelu_backward<A>(as<A>(dinp), as<A>(inp), as<A>(dout), n);
    });
  }
  void do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up,
                         int64_t n) const override {
    dispatch(types, "swiglu_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::swiglu_forward<A>(as<A>(out), as<A>(gate), as<A>(up), n);
    });
  }
  void do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout, const void* gate,
                          const void* up, int64_t n) const override {
    dispatch(types, "swiglu_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::swiglu_backward<A>(as<A>(dgate), as<A>(dup), as<A>(dout), as<A>(gate), as<A>(up), n);
    });
  }
  void do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n, float p,
                          uint64_t seed, uint64_t offset) const override {
    dispatch(types, "dropout_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::dropout_forward<A>(as<A>(out), as<A>(inp), n, p, seed, offset);
    });
  }
  void do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n, float p,
                           uint64_t seed, uint64_t offset) const override {
    dispatch(types, "dropout_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::dropout_backward<A>(as<A>(dinp), as<A>(dout), n, p, seed, offset);
    });
  }
  void do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x, int64_t n,
                        int64_t block) const override {
    dispatch(types, "quantize_int8", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::quantize_int8<A>(q, scales, as<A>(x), n, block);
    });
  }
  void do_dequantize_int8(OpTypes types, void* x, const int8_t* q, const float* scales, int64_t n,
                          int64_t block) const override {
    dispatch(types, "dequantize_int8", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::dequantize_int8<A>(as<A>(x), q, scales, n, block);
    });
  }
  void do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B, int64_t T, int64_t H,
                       int64_t D, double theta) const override {
    dispatch(types, "rope_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::rope_forward<A>(as<A>(out), as<A>(inp), B, T, H, D, theta);
    });
  }
  void do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B, int64_t T,
                        int64_t H, int64_t D, double theta) const override {
    dispatch(types, "rope_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::rope_backward<A>(as<A>(dinp), as<A>(dout), B, T, H, D, theta);
    });
  }
  void do_attention_forward(OpTypes types, void* out, void* preatt, void* att, const void* q,
                            const void* k, const void* v, int64_t B, int64_t T, int64_t H,
                            int64_t Hkv, int64_t D,
                            const AttentionDropout& dropout) const override {
    dispatch(types, "attention_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::attention_forward<A>(as<A>(out), as<A>(preatt), as<A>(att), as<A>(q), as<A>(k), as<A>(v),
                                B, T, H, Hkv, D, dropout);
    });
  }
  void do_attention_backward(OpTypes types, void* dq, void* dk, void* dv, void* dpreatt,
                             const void* dout, const void* q, const void* k, const void* v,
                             const void* att, int64_t B, int64_t T, int64_t H, int64_t Hkv,
                             int64_t D, const AttentionDropout& dropout) const override {
    dispatch(types, "attention_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::attention_backward<A>(as<A>(dq), as<A>(dk), as<A>(dv), as<A>(dpreatt), as<A>(dout),
                                 as<A>(q), as<A>(k), as<A>(v), as<A>(att), B, T, H, Hkv, D,
                                 dropout);
    });
  }
  void do_flash_attention_forward(OpTypes types, void* out, float* lse, const void* q,
                                  const void* k, const void* v, int64_t B, int64_t T, int64_t H,
                                  int64_t Hkv, int64_t D,
                                  const AttentionDropout& dropout) const override {
    dispatch(types, "flash_attention_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::flash_attention_forward<A>(as<A>(out), lse, as<A>(q), as<A>(k), as<A>(v), B, T, H, Hkv,
                                      D, dropout);
    });
  }
  void do_flash_attention_backward(OpTypes types, void* dq, void* dk, void* dv, float* delta,
                                   const void* dout, const void* q, const void* k, const void* v,
                                   const void* out, const float* lse, int64_t B, int64_t T,
                                   int64_t H, int64_t Hkv, int64_t D,
                                   const AttentionDropout& dropout) const override {
    dispatch(types, "flash_attention_backward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::flash_attention_backward<A>(as<A>(dq), as<A>(dk), as<A>(dv), delta, as<A>(dout),
                                       as<A>(q), as<A>(k), as<A>(v), as<A>(out), lse, B, T, H, Hkv,
                                       D, dropout);
    });
  }
  void do_embedding_forward(OpTypes types, void* out, const int32_t* tokens, const void* wte,
                            const void* wpe, int64_t B, int64_t T, int64_t C,
                            int64_t V) const override {
    dispatch(types, "embedding_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::embedding_forward<A>(as<A>(out), tokens, as<A>(wte), as<A>(wpe), B, T, C, V);
    });
  }
  void do_embedding_backward(OpTypes types, void* dwte, void* dwpe, const void* dout,
                             const int32_t* tokens, int64_t B, int64_t T, int64_t C,
                             int64_t V) const override {
    dispatch(types, "embedding_backward", [&](auto a, auto g) {
      using A = typename decltype(a)::type;
      using G = typename decltype(g)::type;
      ops::embedding_backward<A, G>(as<G>(dwte), as<G>(dwpe), as<A>(dout), tokens, B, T, C, V);
    });
  }
  void do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp, void* probs,
                                const void* logits, const int32_t* targets, int64_t N,
                                int64_t V) const override {
    dispatch(types, "cross_entropy_forward", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::cross_entropy_forward<A>(losses, logsumexp, as<A>(probs), as<A>(logits), targets, N, V,
                                    V);
    });
  }
  void do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs,
                                const int32_t* targets, int64_t N, int64_t V,
                                float scale) const override {
    dispatch(types, "cross_entropy_dlogits", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::cross_entropy_dlogits<A>(as<A>(dlogits), as<A>(probs), targets, N, V, V, scale);
    });
  }
  [[nodiscard]] double do_sum(OpTypes types, const void* x, int64_t n) const override {
    dispatch(types, "sum", [&](auto a, auto) {
      using A = typename decltype(a)::type;
      ops::sum<A>(scratch_.get(), as<A>(x), n);
    });
    return scratch_value();
  }
  void do_cast(void* out, DType out_type, const void* inp, DType inp_type,
               int64_t n) const override {
    dispatch_storage(out_type, "cast", [&](auto to) {
      dispatch_storage(inp_type, "cast", [&](auto from) {
        using To = typename decltype(to)::type;
        using From = typename decltype(from)::type;
        ops::cast<To, From>(as<To>(out), as<From>(inp), n);
      });
    });
  }
  [[nodiscard]] GradientCheck do_check_gradients(const void* grads, DType type, int64_t n,
                                                 float multiplier) const override {
    dispatch_storage(type, "check_gradients", [&](auto t) {
      using T = typename decltype(t)::type;
      ops::check_gradients<T>(scratch_.get(), as<T>(grads), n, multiplier);
    });
    const double total = scratch_value();
    GradientCheck check;
    check.found_inf = !std::isfinite(total);
    check.sum_of_squares = check.found_inf ? 0.0 : total;
    return check;
  }
  void do_adamw_update(const OptimizerTypes& types, void* param, const void* grad, void* m, void* v,
                       void* working, int64_t n, const kernels::cpu::AdamWHyperparameters& hp,
                       const UpdateStep& at) const override {
    dispatch_optimizer(types, "adamw_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      using S = typename decltype(s)::type;
      ops::adamw_update<P, R, S>(as<P>(param), as<R>(grad), as<S>(m), as<S>(v), working,
                                 types.working, n, hp, at, ops::KernelVersion::v2);
    });
  }
  void do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                     void* momentum_buffer, void* working, int64_t n,
                     const kernels::cpu::SgdHyperparameters& hp,
                     const UpdateStep& at) const override {
    dispatch_optimizer(types, "sgd_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      using S = typename decltype(s)::type;
      ops::sgd_update<P, R, S>(as<P>(param), as<R>(grad), as<S>(momentum_buffer), working,
                               types.working, n, hp, at);
    });
  }
  void do_lion_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                      void* working, int64_t n, const kernels::cpu::LionHyperparameters& hp,
                      const UpdateStep& at) const override {
    dispatch_optimizer(types, "lion_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      using S = typename decltype(s)::type;
      ops::lion_update<P, R, S>(as<P>(param), as<R>(grad), as<S>(m), working, types.working, n, hp,
                                at, ops::KernelVersion::v2);
    });
  }
  void do_adam_mini_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                           void* v, void* working, int64_t block_size, int64_t count,
                           const kernels::cpu::AdamWHyperparameters& hp,
                           const UpdateStep& at) const override {
    dispatch_optimizer(types, "adam_mini_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      using S = typename decltype(s)::type;
      ops::adam_mini_update<P, R, S>(as<P>(param), as<R>(grad), as<S>(m), as<S>(v), working,
                                     types.working, block_size, count, hp, at,
                                     ops::KernelVersion::v2);
    });
  }
  void do_adafactor_update(const OptimizerTypes& types, void* param, const void* grad,
                           void* row_var, void* col_var, void* working, int64_t rows, int64_t cols,
                           bool factored, const kernels::cpu::AdafactorHyperparameters& hp,
                           const UpdateStep& at) const override {
    dispatch_optimizer(types, "adafactor_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      using S = typename decltype(s)::type;
      ops::adafactor_update<P, R, S>(as<P>(param), as<R>(grad), as<S>(row_var), as<S>(col_var),
                                     working, types.working, rows, cols, factored, hp, at,
                                     ops::KernelVersion::v2);
    });
  }
  void do_adamw_8bit_update(const OptimizerTypes& types, void* param, const void* grad, uint8_t* qm,
                            uint8_t* qv, float* absmax_m, float* absmax_v, void* working, int64_t n,
                            int64_t block, const kernels::cpu::AdamWHyperparameters& hp,
                            const UpdateStep& at) const override {
    dispatch_optimizer(types, "adamw_8bit_update", [&](auto p, auto r, auto s) {
      using P = typename decltype(p)::type;
      using R = typename decltype(r)::type;
      if constexpr (std::is_same_v<typename decltype(s)::type, float>)
        ops::adamw_8bit_update<P, R>(as<P>(param), as<R>(grad), qm, qv, absmax_m, absmax_v, working,
                                     types.working, n, block, hp, at, ops::KernelVersion::v2);
    });
  }

  double scratch_value() const {
    double total = 0.0;
    do_copy_to_host(&total, scratch_.get(), sizeof total);
    return total;
  }

  // The CPU kernels' default epsilon (kernels/cpu/normalization.h), which the CPU backend uses.
  static constexpr float kLayerNormEps = 1e-5f;
  DeviceScratch scratch_;
};

}  // namespace

#if VRAMLAB_NN_CUDA_GPU
std::unique_ptr<KernelBackend> make_gpu_cuda_kernel_backend() {
  return std::make_unique<CudaKernelBackend>();
}
#else
std::unique_ptr<KernelBackend> make_emulated_cuda_kernel_backend() {
  return std::make_unique<CudaKernelBackend>();
}
#endif

}  // namespace vramlab::nn
