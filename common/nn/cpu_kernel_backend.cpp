// The CPU kernel backend: kernels/cpu and parallel_linear on host memory (see
// cpu_kernel_backend.h).
#include "common/nn/cpu_kernel_backend.h"

#include "kernels/cpu/optimizer_8bit.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "common/dtype/convert.h"
#include "common/platform/errors.h"

#include "common/nn/low_precision_linear.h"
#include "common/nn/parallel_linear.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/flash_attention.h"
#include "kernels/cpu/gradient_check.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/rope.h"

namespace vramlab::nn {

namespace {

namespace cpu = kernels::cpu;

// Calls f(T{}) with T the C++ storage type of \p type (float, bf16_t or f16_t) and returns what f
// returns: the one place a DType becomes a kernel instantiation.
template <typename F>
decltype(auto) with_storage(DType type, const char* op, F&& f) {
  switch (type) {
    case DType::f32:
      return f(float{});
    case DType::bf16:
      return f(bf16_t{});
    case DType::f16:
      return f(f16_t{});
    default:
      throw InternalError(std::string(op) + ": no CPU kernel for storage type " +
                          std::string(dtype_name(type)));
  }
}

// Calls f(A{}) for the op's activation type.
template <typename F>
decltype(auto) with_activation(OpTypes types, const char* op, F&& f) {
  return with_storage(types.a, op, f);
}

// Calls f(A{}, G{}) for the op's activation type A and parameter-gradient type G ∈ {float, A}
// (KernelBackend checked that G is one of the two).
template <typename F>
void with_op_types(OpTypes types, const char* op, F&& f) {
  with_storage(types.a, op, [&]<typename A>(A) {
    if (types.g == DType::f32) {
      f(A{}, float{});
    } else {
      f(A{}, A{});
    }
  });
}

template <typename T>
T* as(void* pointer) {
  return static_cast<T*>(pointer);
}
template <typename T>
const T* as(const void* pointer) {
  return static_cast<const T*>(pointer);
}

}  // namespace

void CpuKernelBackend::do_fill_zero(void* device_pointer, std::size_t bytes) const {
  auto* first = static_cast<unsigned char*>(device_pointer);
  const auto total = static_cast<int64_t>(bytes);
  constexpr int64_t kChunkBytes = int64_t{1} << 18;
  const int64_t chunks = (total + kChunkBytes - 1) / kChunkBytes;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunkBytes;
    const int64_t end = begin + kChunkBytes < total ? begin + kChunkBytes : total;
    std::memset(first + begin, 0, static_cast<size_t>(end - begin));
  }
}

void CpuKernelBackend::do_copy_to_device(void* device_pointer, const void* host_pointer,
                                         std::size_t bytes) const {
  if (bytes != 0) std::memcpy(device_pointer, host_pointer, bytes);
}

void CpuKernelBackend::do_copy_to_host(void* host_pointer, const void* device_pointer,
                                       std::size_t bytes) const {
  if (bytes != 0) std::memcpy(host_pointer, device_pointer, bytes);
}

void CpuKernelBackend::do_linear_forward(OpTypes types, void* out, const void* inp,
                                         const void* weight, const void* bias, int64_t N, int64_t C,
                                         int64_t OC) const {
  with_activation(types, "linear_forward", [&]<typename A>(A) {
    if constexpr (std::is_same_v<A, float>) {
      parallel_linear_forward(as<float>(out), as<float>(inp), as<float>(weight), as<float>(bias), N,
                              C, OC);
    } else {
      low_precision_linear_forward<A>(as<A>(out), as<A>(inp), as<A>(weight), as<A>(bias), N, C, OC);
    }
  });
}

void CpuKernelBackend::do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                                          const void* dout, const void* inp, const void* weight,
                                          int64_t N, int64_t C, int64_t OC) const {
  with_op_types(types, "linear_backward", [&]<typename A, typename G>(A, G) {
    if constexpr (std::is_same_v<A, float>) {
      parallel_linear_backward(as<float>(dinp), as<float>(dweight), as<float>(dbias),
                               as<float>(dout), as<float>(inp), as<float>(weight), N, C, OC);
    } else {
      low_precision_linear_backward<A, G>(as<A>(dinp), as<G>(dweight), as<G>(dbias), as<A>(dout),
                                          as<A>(inp), as<A>(weight), N, C, OC);
    }
  });
}

void CpuKernelBackend::do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd,
                                            const void* inp, const void* weight, const void* bias,
                                            int64_t N, int64_t C) const {
  with_activation(types, "layernorm_forward", [&]<typename A>(A) {
    cpu::layernorm_forward<A>(as<A>(out), mean, rstd, as<A>(inp), as<A>(weight), as<A>(bias), N, C);
  });
}

void CpuKernelBackend::do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias,
                                             const void* dout, const void* inp, const void* weight,
                                             const float* mean, const float* rstd, int64_t N,
                                             int64_t C) const {
  with_op_types(types, "layernorm_backward", [&]<typename A, typename G>(A, G) {
    cpu::layernorm_backward<A, G>(as<A>(dinp), as<G>(dweight), as<G>(dbias), as<A>(dout),
                                  as<A>(inp), as<A>(weight), mean, rstd, N, C);
  });
}

void CpuKernelBackend::do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp,
                                          const void* weight, int64_t N, int64_t C) const {
  with_activation(types, "rmsnorm_forward", [&]<typename A>(A) {
    cpu::rmsnorm_forward<A>(as<A>(out), rstd, as<A>(inp), as<A>(weight), N, C);
  });
}

void CpuKernelBackend::do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight,
                                           const void* dout, const void* inp, const void* weight,
                                           const float* rstd, int64_t N, int64_t C) const {
  with_op_types(types, "rmsnorm_backward", [&]<typename A, typename G>(A, G) {
    cpu::rmsnorm_backward<A, G>(as<A>(dinp), as<G>(dweight), as<A>(dout), as<A>(inp), as<A>(weight),
                                rstd, N, C);
  });
}

void CpuKernelBackend::do_residual_forward(OpTypes types, void* out, const void* a, const void* b,
                                           int64_t n) const {
  with_activation(types, "residual_forward", [&]<typename A>(A) {
    cpu::residual_forward<A>(as<A>(out), as<A>(a), as<A>(b), n);
  });
}

void CpuKernelBackend::do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const {
  with_activation(types, "gelu_forward",
                  [&]<typename A>(A) { cpu::gelu_forward<A>(as<A>(out), as<A>(inp), n); });
}

void CpuKernelBackend::do_gelu_backward(OpTypes types, void* dinp, const void* inp,
                                        const void* dout, int64_t n) const {
  with_activation(types, "gelu_backward", [&]<typename A>(A) {
    cpu::gelu_backward<A>(as<A>(dinp), as<A>(inp), as<A>(dout), n);
  });
}

void CpuKernelBackend::do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up,
                                         int64_t n) const {
  with_activation(types, "swiglu_forward", [&]<typename A>(A) {
    cpu::swiglu_forward<A>(as<A>(out), as<A>(gate), as<A>(up), n);
  });
}

void CpuKernelBackend::do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout,
                                          const void* gate, const void* up, int64_t n) const {
  with_activation(types, "swiglu_backward", [&]<typename A>(A) {
    cpu::swiglu_backward<A>(as<A>(dgate), as<A>(dup), as<A>(dout), as<A>(gate), as<A>(up), n);
  });
}

void CpuKernelBackend::do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n,
                                          float p, uint64_t seed, uint64_t offset) const {
  with_activation(types, "dropout_forward", [&]<typename A>(A) {
    cpu::dropout_forward<A>(as<A>(out), as<A>(inp), n, p, seed, offset);
  });
}

void CpuKernelBackend::do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n,
                                           float p, uint64_t seed, uint64_t offset) const {
  with_activation(types, "dropout_backward", [&]<typename A>(A) {
    cpu::dropout_backward<A>(as<A>(dinp), as<A>(dout), n, p, seed, offset);
  });
}

void CpuKernelBackend::do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x,
                                        int64_t n, int64_t block) const {
  with_activation(types, "quantize_int8",
                  [&]<typename A>(A) { cpu::quantize_int8<A>(q, scales, as<A>(x), n, block); });
}

void CpuKernelBackend::do_dequantize_int8(OpTypes types, void* x, const int8_t* q,
                                          const float* scales, int64_t n, int64_t block) const {
  with_activation(types, "dequantize_int8",
                  [&]<typename A>(A) { cpu::dequantize_int8<A>(as<A>(x), q, scales, n, block); });
}

void CpuKernelBackend::do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B,
                                       int64_t T, int64_t H, int64_t D, double theta) const {
  with_activation(types, "rope_forward", [&]<typename A>(A) {
    cpu::rope_forward<A>(as<A>(out), as<A>(inp), B, T, H, D, theta);
  });
}

void CpuKernelBackend::do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B,
                                        int64_t T, int64_t H, int64_t D, double theta) const {
  with_activation(types, "rope_backward", [&]<typename A>(A) {
    cpu::rope_backward<A>(as<A>(dinp), as<A>(dout), B, T, H, D, theta);
  });
}

void CpuKernelBackend::do_attention_forward(OpTypes types, void* out, void* preatt, void* att,
                                            const void* q, const void* k, const void* v, int64_t B,
                                            int64_t T, int64_t H, int64_t Hkv, int64_t D,
                                            const AttentionDropout& dropout) const {
  with_activation(types, "attention_forward", [&]<typename A>(A) {
    cpu::attention_forward<A>(as<A>(out), as<A>(preatt), as<A>(att), as<A>(q), as<A>(k), as<A>(v),
                              B, T, H, Hkv, D, dropout);
  });
}

void CpuKernelBackend::do_attention_backward(OpTypes types, void* dq, void* dk, void* dv,
                                             void* dpreatt, const void* dout, const void* q,
                                             const void* k, const void* v, const void* att,
                                             int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                             int64_t D, const AttentionDropout& dropout) const {
  with_activation(types, "attention_backward", [&]<typename A>(A) {
    cpu::attention_backward<A>(as<A>(dq), as<A>(dk), as<A>(dv), as<A>(dpreatt), as<A>(dout),
                               as<A>(q), as<A>(k), as<A>(v), as<A>(att), B, T, H, Hkv, D, dropout);
  });
}

void CpuKernelBackend::do_flash_attention_forward(OpTypes types, void* out, float* lse,
                                                  const void* q, const void* k, const void* v,
                                                  int64_t B, int64_t T, int64_t H, int64_t Hkv,
                                                  int64_t D,
                                                  const AttentionDropout& dropout) const {
  with_activation(types, "flash_attention_forward", [&]<typename A>(A) {
    cpu::flash_attention_forward<A>(as<A>(out), lse, as<A>(q), as<A>(k), as<A>(v), B, T, H, Hkv, D,
                                    dropout);
  });
}

void CpuKernelBackend::do_flash_attention_backward(OpTypes types, void* dq, void* dk, void* dv,
                                                   float* delta, const void* dout, const void* q,
                                                   const void* k, const void* v, const void* out,
                                                   const float* lse, int64_t B, int64_t T,
                                                   int64_t H, int64_t Hkv, int64_t D,
                                                   const AttentionDropout& dropout) const {
  with_activation(types, "flash_attention_backward", [&]<typename A>(A) {
    cpu::flash_attention_backward<A>(as<A>(dq), as<A>(dk), as<A>(dv), delta, as<A>(dout), as<A>(q),
                                     as<A>(k), as<A>(v), as<A>(out), lse, B, T, H, Hkv, D, dropout);
  });
}

void CpuKernelBackend::do_embedding_forward(OpTypes types, void* out, const int32_t* tokens,
                                            const void* wte, const void* wpe, int64_t B, int64_t T,
                                            int64_t C, int64_t V) const {
  with_activation(types, "embedding_forward", [&]<typename A>(A) {
    cpu::embedding_forward<A>(as<A>(out), tokens, as<A>(wte), as<A>(wpe), B, T, C, V);
  });
}

void CpuKernelBackend::do_embedding_backward(OpTypes types, void* dwte, void* dwpe,
                                             const void* dout, const int32_t* tokens, int64_t B,
                                             int64_t T, int64_t C, int64_t V) const {
  with_op_types(types, "embedding_backward", [&]<typename A, typename G>(A, G) {
    cpu::embedding_backward<A, G>(as<G>(dwte), as<G>(dwpe), as<A>(dout), tokens, B, T, C, V);
  });
}

void CpuKernelBackend::do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp,
                                                void* probs, const void* logits,
                                                const int32_t* targets, int64_t N,
                                                int64_t V) const {
  with_activation(types, "cross_entropy_forward", [&]<typename A>(A) {
    cpu::cross_entropy_forward<A>(losses, logsumexp, as<A>(probs), as<A>(logits), targets, N, V, V);
  });
}

void CpuKernelBackend::do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs,
                                                const int32_t* targets, int64_t N, int64_t V,
                                                float scale) const {
  with_activation(types, "cross_entropy_dlogits", [&]<typename A>(A) {
    cpu::cross_entropy_dlogits<A>(as<A>(dlogits), as<A>(probs), targets, N, V, V, scale);
  });
}

double CpuKernelBackend::do_sum(OpTypes types, const void* x, int64_t n) const {
  return with_activation(types, "sum", [&]<typename A>(A) { return cpu::sum<A>(as<A>(x), n); });
}

void CpuKernelBackend::do_cast(void* out, DType out_type, const void* inp, DType inp_type,
                               int64_t n) const {
  with_storage(out_type, "cast", [&]<typename To>(To) {
    with_storage(inp_type, "cast",
                 [&]<typename From>(From) { cpu::cast<To, From>(as<To>(out), as<From>(inp), n); });
  });
}

KernelBackend::GradientCheck CpuKernelBackend::do_check_gradients(const void* grads, DType type,
                                                                  int64_t n,
                                                                  float multiplier) const {
  const cpu::GradientCheck found = with_storage(type, "check_gradients", [&]<typename T>(T) {
    return cpu::check_gradients<T>(as<T>(grads), n, multiplier);
  });
  return {found.found_inf, found.sum_of_squares};
}

namespace {

// Calls f(P{}, Gr{}, S{}, W{}) for an optimizer's storage types: param and state f32 or bf16,
// grad any storage type, working bf16 or f16 (bf16 stands in when there is none: the kernels
// never touch a null working copy).
template <typename F>
void with_optimizer_types(const OptimizerTypes& types, const char* op, F&& f) {
  const auto param_or_state = [&](DType type, auto&& g) {
    if (type == DType::f32) return g(float{});
    if (type == DType::bf16) return g(bf16_t{});
    throw InternalError(std::string(op) + ": no CPU kernel for an optimizer tensor of type " +
                        std::string(dtype_name(type)));
  };
  const DType working = types.working == DType::f16 ? DType::f16 : DType::bf16;
  param_or_state(types.param, [&]<typename P>(P) {
    with_storage(types.grad, op, [&]<typename Gr>(Gr) {
      param_or_state(types.state, [&]<typename S>(S) {
        with_storage(working, op, [&]<typename W>(W) {
          if constexpr (!std::is_same_v<W, float>) f(P{}, Gr{}, S{}, W{});
        });
      });
    });
  });
}

}  // namespace

void CpuKernelBackend::do_adamw_update(const OptimizerTypes& types, void* param, const void* grad,
                                       void* m, void* v, void* working, int64_t n,
                                       const kernels::cpu::AdamWHyperparameters& hp,
                                       const UpdateStep& at) const {
  with_optimizer_types(types, "adamw_update",
                       [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
                         cpu::adamw_update<P, Gr, S, W>(as<P>(param), as<Gr>(grad), as<S>(m),
                                                        as<S>(v), as<W>(working), n, hp, at);
                       });
}

void CpuKernelBackend::do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                                     void* momentum_buffer, void* working, int64_t n,
                                     const kernels::cpu::SgdHyperparameters& hp,
                                     const UpdateStep& at) const {
  with_optimizer_types(
      types, "sgd_update", [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
        cpu::sgd_update<P, Gr, S, W>(as<P>(param), as<Gr>(grad), as<S>(momentum_buffer),
                                     as<W>(working), n, hp, at);
      });
}

void CpuKernelBackend::do_lion_update(const OptimizerTypes& types, void* param, const void* grad,
                                      void* m, void* working, int64_t n,
                                      const kernels::cpu::LionHyperparameters& hp,
                                      const UpdateStep& at) const {
  with_optimizer_types(types, "lion_update",
                       [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
                         cpu::lion_update<P, Gr, S, W>(as<P>(param), as<Gr>(grad), as<S>(m),
                                                       as<W>(working), n, hp, at);
                       });
}

void CpuKernelBackend::do_adam_mini_update(const OptimizerTypes& types, void* param,
                                           const void* grad, void* m, void* v, void* working,
                                           int64_t block_size, int64_t count,
                                           const kernels::cpu::AdamWHyperparameters& hp,
                                           const UpdateStep& at) const {
  with_optimizer_types(
      types, "adam_mini_update", [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
        cpu::adam_mini_update<P, Gr, S, W>(as<P>(param), as<Gr>(grad), as<S>(m), as<S>(v),
                                           as<W>(working), block_size, count, hp, at);
      });
}

void CpuKernelBackend::do_adafactor_update(const OptimizerTypes& types, void* param,
                                           const void* grad, void* row_var, void* col_var,
                                           void* working, int64_t rows, int64_t cols, bool factored,
                                           const kernels::cpu::AdafactorHyperparameters& hp,
                                           const UpdateStep& at) const {
  with_optimizer_types(
      types, "adafactor_update", [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
        cpu::adafactor_update<P, Gr, S, W>(as<P>(param), as<Gr>(grad), as<S>(row_var),
                                           as<S>(col_var), as<W>(working), rows, cols, factored, hp,
                                           at);
      });
}

void CpuKernelBackend::do_adamw_8bit_update(const OptimizerTypes& types, void* param,
                                            const void* grad, uint8_t* qm, uint8_t* qv,
                                            float* absmax_m, float* absmax_v, void* working,
                                            int64_t n, int64_t block,
                                            const kernels::cpu::AdamWHyperparameters& hp,
                                            const UpdateStep& at) const {
  with_optimizer_types(types, "adamw_8bit_update",
                       [&]<typename P, typename Gr, typename S, typename W>(P, Gr, S, W) {
                         if constexpr (std::is_same_v<S, float>)
                           cpu::adamw_8bit_update<P, Gr, W>(as<P>(param), as<Gr>(grad), qm, qv,
                                                            absmax_m, absmax_v, as<W>(working), n,
                                                            block, hp, at);
                       });
}

}  // namespace vramlab::nn
