// The CUDA kernel backend over kernels/cuda/ops.h (see cuda_kernel_backend.h). Compiled twice:
// as is (emulated launchers, host memory) and with VRAMLAB_NN_CUDA_GPU=1 and
// VRAMLAB_CUDA_OPS_ABI=gpu (nvcc-built launchers, device memory through the CUDA runtime).
#include "common/nn/cuda/cuda_kernel_backend.h"

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

// One device double for the loss sum, outside the caching allocator (so the allocator's stats
// are the same bytes as with the CPU kernels).
class DeviceScratch {
 public:
  DeviceScratch() { check(cudaMalloc(&value_, sizeof(double)), "cudaMalloc(loss scratch)"); }
  ~DeviceScratch() { cudaFree(value_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  [[nodiscard]] double* get() const { return static_cast<double*>(value_); }

 private:
  void* value_ = nullptr;
};
#else
// Emulated device memory is host memory: the scratch is a host double, outside the allocator.
class DeviceScratch {
 public:
  [[nodiscard]] double* get() const { return &value_; }

 private:
  mutable double value_ = 0.0;
};
#endif

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

  void f32_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                         int64_t N, int64_t C, int64_t OC) const {
    ops::matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void f32_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int64_t N, int64_t C,
                          int64_t OC) const {
    ops::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }

  void f32_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int64_t N,
                            int64_t C) const {
    ops::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, kLayerNormEps);
  }
  void f32_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int64_t N, int64_t C) const {
    ops::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void f32_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                          int64_t C) const {
    ops::rmsnorm_forward(out, rstd, inp, weight, N, C, kLayerNormEps);
  }
  void f32_rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                           const float* weight, const float* rstd, int64_t N,
                           int64_t C) const {
    ops::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
  }

  void f32_residual_forward(float* out, const float* a, const float* b, int64_t n) const {
    ops::residual_forward(out, a, b, n);
  }
  void f32_gelu_forward(float* out, const float* inp, int64_t n) const {
    ops::gelu_forward(out, inp, n);
  }
  void f32_gelu_backward(float* dinp, const float* inp, const float* dout,
                        int64_t n) const {
    ops::gelu_backward(dinp, inp, dout, n);
  }
  void f32_swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const {
    ops::swiglu_forward(out, gate, up, n);
  }
  void f32_swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                          const float* up, int64_t n) const {
    ops::swiglu_backward(dgate, dup, dout, gate, up, n);
  }

  void f32_rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                       double theta) const {
    ops::rope_forward(out, inp, B, T, H, D, theta);
  }
  void f32_rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                        double theta) const {
    ops::rope_backward(dinp, dout, B, T, H, D, theta);
  }
  void f32_dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                          uint64_t offset) const {
    ops::dropout_forward(out, inp, n, p, seed, offset);
  }
  void f32_dropout_backward(float* dinp, const float* dout, int64_t n, float p, uint64_t seed,
                           uint64_t offset) const {
    ops::dropout_backward(dinp, dout, n, p, seed, offset);
  }
  void f32_quantize_int8(int8_t* q, float* scales, const float* x, int64_t n,
                        int64_t block) const {
    ops::quantize_int8(q, scales, x, n, block);
  }
  void f32_dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n,
                          int64_t block) const {
    ops::dequantize_int8(x, q, scales, n, block);
  }
  void f32_attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                            const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                            const AttentionDropout& dropout) const {
    ops::attention_forward(out, preatt, att, q, k, v, B, T, H, Hkv, D, dropout);
  }
  void f32_attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                             const float* q, const float* k, const float* v, const float* att,
                             int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const AttentionDropout& dropout) const {
    ops::attention_backward(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D, dropout);
  }

  void f32_embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                            int64_t B, int64_t T, int64_t C, int64_t V) const {
    ops::embedding_forward(out, tokens, wte, wpe, B, T, C, V);
  }
  void f32_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int64_t B, int64_t T, int64_t C, int64_t V) const {
    ops::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V);
  }
  void f32_cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                                const int32_t* targets, int64_t N, int64_t V) const {
    ops::cross_entropy_forward(losses, logsumexp, probs, logits, targets, N, V, V);
  }
  void f32_cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets,
                                int64_t N, int64_t V, float scale) const {
    ops::cross_entropy_dlogits(dlogits, probs, targets, N, V, V, scale);
  }
  double f32_sum(const float* x, int64_t n) const {
    ops::sum(scratch_.get(), x, n);
    double total = 0.0;
    do_copy_to_host(&total, scratch_.get(), sizeof total);
    return total;
  }

  void f32_adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                       const kernels::cpu::AdamWHyperparameters& hp, int64_t step) const {
    ops::adamw_update(param, grad, m, v, n, hp, step);
  }
  void f32_sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                     float learning_rate, float momentum, float weight_decay,
                     bool nesterov) const {
    ops::sgd_update(param, grad, momentum_buffer, n, learning_rate, momentum, weight_decay,
                    nesterov);
  }

  // The storage-typed entry points; until the bf16/f16 kernels land they accept f32 only.
  void do_linear_forward(OpTypes types, void* out, const void* inp, const void* weight, const void* bias, int64_t N, int64_t C, int64_t OC) const override {
    require_f32(types, "linear_forward");
    f32_linear_forward(static_cast<float*>(out), static_cast<const float*>(inp), static_cast<const float*>(weight), static_cast<const float*>(bias), N, C, OC);
  }
  void do_linear_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight, int64_t N, int64_t C, int64_t OC) const override {
    require_f32(types, "linear_backward");
    f32_linear_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<float*>(dbias), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), N, C, OC);
  }
  void do_layernorm_forward(OpTypes types, void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias, int64_t N, int64_t C) const override {
    require_f32(types, "layernorm_forward");
    f32_layernorm_forward(static_cast<float*>(out), mean, rstd, static_cast<const float*>(inp), static_cast<const float*>(weight), static_cast<const float*>(bias), N, C);
  }
  void do_layernorm_backward(OpTypes types, void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd, int64_t N, int64_t C) const override {
    require_f32(types, "layernorm_backward");
    f32_layernorm_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<float*>(dbias), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), mean, rstd, N, C);
  }
  void do_rmsnorm_forward(OpTypes types, void* out, float* rstd, const void* inp, const void* weight, int64_t N, int64_t C) const override {
    require_f32(types, "rmsnorm_forward");
    f32_rmsnorm_forward(static_cast<float*>(out), rstd, static_cast<const float*>(inp), static_cast<const float*>(weight), N, C);
  }
  void do_rmsnorm_backward(OpTypes types, void* dinp, void* dweight, const void* dout, const void* inp, const void* weight, const float* rstd, int64_t N, int64_t C) const override {
    require_f32(types, "rmsnorm_backward");
    f32_rmsnorm_backward(static_cast<float*>(dinp), static_cast<float*>(dweight), static_cast<const float*>(dout), static_cast<const float*>(inp), static_cast<const float*>(weight), rstd, N, C);
  }
  void do_residual_forward(OpTypes types, void* out, const void* a, const void* b, int64_t n) const override {
    require_f32(types, "residual_forward");
    f32_residual_forward(static_cast<float*>(out), static_cast<const float*>(a), static_cast<const float*>(b), n);
  }
  void do_gelu_forward(OpTypes types, void* out, const void* inp, int64_t n) const override {
    require_f32(types, "gelu_forward");
    f32_gelu_forward(static_cast<float*>(out), static_cast<const float*>(inp), n);
  }
  void do_gelu_backward(OpTypes types, void* dinp, const void* inp, const void* dout, int64_t n) const override {
    require_f32(types, "gelu_backward");
    f32_gelu_backward(static_cast<float*>(dinp), static_cast<const float*>(inp), static_cast<const float*>(dout), n);
  }
  void do_swiglu_forward(OpTypes types, void* out, const void* gate, const void* up, int64_t n) const override {
    require_f32(types, "swiglu_forward");
    f32_swiglu_forward(static_cast<float*>(out), static_cast<const float*>(gate), static_cast<const float*>(up), n);
  }
  void do_swiglu_backward(OpTypes types, void* dgate, void* dup, const void* dout, const void* gate, const void* up, int64_t n) const override {
    require_f32(types, "swiglu_backward");
    f32_swiglu_backward(static_cast<float*>(dgate), static_cast<float*>(dup), static_cast<const float*>(dout), static_cast<const float*>(gate), static_cast<const float*>(up), n);
  }
  void do_dropout_forward(OpTypes types, void* out, const void* inp, int64_t n, float p, uint64_t seed, uint64_t offset) const override {
    require_f32(types, "dropout_forward");
    f32_dropout_forward(static_cast<float*>(out), static_cast<const float*>(inp), n, p, seed, offset);
  }
  void do_dropout_backward(OpTypes types, void* dinp, const void* dout, int64_t n, float p, uint64_t seed, uint64_t offset) const override {
    require_f32(types, "dropout_backward");
    f32_dropout_backward(static_cast<float*>(dinp), static_cast<const float*>(dout), n, p, seed, offset);
  }
  void do_quantize_int8(OpTypes types, int8_t* q, float* scales, const void* x, int64_t n, int64_t block) const override {
    require_f32(types, "quantize_int8");
    f32_quantize_int8(q, scales, static_cast<const float*>(x), n, block);
  }
  void do_dequantize_int8(OpTypes types, void* x, const int8_t* q, const float* scales, int64_t n, int64_t block) const override {
    require_f32(types, "dequantize_int8");
    f32_dequantize_int8(static_cast<float*>(x), q, scales, n, block);
  }
  void do_rope_forward(OpTypes types, void* out, const void* inp, int64_t B, int64_t T, int64_t H, int64_t D, double theta) const override {
    require_f32(types, "rope_forward");
    f32_rope_forward(static_cast<float*>(out), static_cast<const float*>(inp), B, T, H, D, theta);
  }
  void do_rope_backward(OpTypes types, void* dinp, const void* dout, int64_t B, int64_t T, int64_t H, int64_t D, double theta) const override {
    require_f32(types, "rope_backward");
    f32_rope_backward(static_cast<float*>(dinp), static_cast<const float*>(dout), B, T, H, D, theta);
  }
  void do_attention_forward(OpTypes types, void* out, void* preatt, void* att, const void* q, const void* k, const void* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D, const AttentionDropout& dropout) const override {
    require_f32(types, "attention_forward");
    f32_attention_forward(static_cast<float*>(out), static_cast<float*>(preatt), static_cast<float*>(att), static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v), B, T, H, Hkv, D, dropout);
  }
  void do_attention_backward(OpTypes types, void* dq, void* dk, void* dv, void* dpreatt, const void* dout, const void* q, const void* k, const void* v, const void* att, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D, const AttentionDropout& dropout) const override {
    require_f32(types, "attention_backward");
    f32_attention_backward(static_cast<float*>(dq), static_cast<float*>(dk), static_cast<float*>(dv), static_cast<float*>(dpreatt), static_cast<const float*>(dout), static_cast<const float*>(q), static_cast<const float*>(k), static_cast<const float*>(v), static_cast<const float*>(att), B, T, H, Hkv, D, dropout);
  }
  void do_embedding_forward(OpTypes types, void* out, const int32_t* tokens, const void* wte, const void* wpe, int64_t B, int64_t T, int64_t C, int64_t V) const override {
    require_f32(types, "embedding_forward");
    f32_embedding_forward(static_cast<float*>(out), tokens, static_cast<const float*>(wte), static_cast<const float*>(wpe), B, T, C, V);
  }
  void do_embedding_backward(OpTypes types, void* dwte, void* dwpe, const void* dout, const int32_t* tokens, int64_t B, int64_t T, int64_t C, int64_t V) const override {
    require_f32(types, "embedding_backward");
    f32_embedding_backward(static_cast<float*>(dwte), static_cast<float*>(dwpe), static_cast<const float*>(dout), tokens, B, T, C, V);
  }
  void do_cross_entropy_forward(OpTypes types, float* losses, float* logsumexp, void* probs, const void* logits, const int32_t* targets, int64_t N, int64_t V) const override {
    require_f32(types, "cross_entropy_forward");
    f32_cross_entropy_forward(losses, logsumexp, static_cast<float*>(probs), static_cast<const float*>(logits), targets, N, V);
  }
  void do_cross_entropy_dlogits(OpTypes types, void* dlogits, const void* probs, const int32_t* targets, int64_t N, int64_t V, float scale) const override {
    require_f32(types, "cross_entropy_dlogits");
    f32_cross_entropy_dlogits(static_cast<float*>(dlogits), static_cast<const float*>(probs), targets, N, V, scale);
  }
  [[nodiscard]] double do_sum(OpTypes types, const void* x, int64_t n) const override {
    require_f32(types, "sum");
    return f32_sum(static_cast<const float*>(x), n);
  }
  void do_cast(void* out, DType out_type, const void* inp, DType inp_type,
               int64_t n) const override {
    (void)out, (void)out_type, (void)inp, (void)inp_type, (void)n;
    throw InternalError("cast: not implemented yet");
  }
  [[nodiscard]] GradientCheck do_check_gradients(const void*, DType, int64_t,
                                                 float) const override {
    throw InternalError("check_gradients: not implemented yet");
  }
  void do_adamw_update(const OptimizerTypes& types, void* param, const void* grad, void* m,
                       void* v, void* working, int64_t n,
                       const kernels::cpu::AdamWHyperparameters& hp, int64_t step,
                       float grad_multiplier) const override {
    if (types.param != DType::f32 || types.grad != DType::f32 || types.state != DType::f32 ||
        working != nullptr || grad_multiplier != 1.0f)
      throw InternalError("adamw_update: only f32 without a master copy is implemented yet");
    f32_adamw_update(static_cast<float*>(param), static_cast<const float*>(grad),
                     static_cast<float*>(m), static_cast<float*>(v), n, hp, step);
  }
  void do_sgd_update(const OptimizerTypes& types, void* param, const void* grad,
                     void* momentum_buffer, void* working, int64_t n, float learning_rate,
                     float momentum, float weight_decay, bool nesterov,
                     float grad_multiplier) const override {
    if (types.param != DType::f32 || types.grad != DType::f32 || types.state != DType::f32 ||
        working != nullptr || grad_multiplier != 1.0f)
      throw InternalError("sgd_update: only f32 without a master copy is implemented yet");
    f32_sgd_update(static_cast<float*>(param), static_cast<const float*>(grad),
                   static_cast<float*>(momentum_buffer), n, learning_rate, momentum, weight_decay,
                   nesterov);
  }
  static void require_f32(OpTypes types, const char* op) {
    if (types.a != DType::f32 || types.g != DType::f32)
      throw InternalError(std::string(op) + ": " + std::string(dtype_name(types.a)) + "/" +
                          std::string(dtype_name(types.g)) + " kernels are not implemented yet");
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
