// The CUDA kernel backend over kernels/cuda/ops.h (see cuda_kernel_backend.h). Compiled twice:
// as is (emulated launchers, host memory) and with VRAMLAB_NN_CUDA_GPU=1 and
// VRAMLAB_CUDA_OPS_ABI=gpu (nvcc-built launchers, device memory through the CUDA runtime).
#include "common/nn/cuda/cuda_kernel_backend.h"

#include <cstring>
#include <stdexcept>
#include <string>

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

  void do_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                         int64_t N, int64_t C, int64_t OC) const override {
    ops::matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void do_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, int64_t N, int64_t C,
                          int64_t OC) const override {
    ops::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }

  void do_layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int64_t N,
                            int64_t C) const override {
    ops::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, kLayerNormEps);
  }
  void do_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int64_t N, int64_t C) const override {
    ops::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void do_rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                          int64_t C) const override {
    ops::rmsnorm_forward(out, rstd, inp, weight, N, C, kLayerNormEps);
  }
  void do_rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                           const float* weight, const float* rstd, int64_t N,
                           int64_t C) const override {
    ops::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
  }

  void do_residual_forward(float* out, const float* a, const float* b, int64_t n) const override {
    ops::residual_forward(out, a, b, n);
  }
  void do_gelu_forward(float* out, const float* inp, int64_t n) const override {
    ops::gelu_forward(out, inp, n);
  }
  void do_gelu_backward(float* dinp, const float* inp, const float* dout,
                        int64_t n) const override {
    ops::gelu_backward(dinp, inp, dout, n);
  }
  void do_swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const override {
    ops::swiglu_forward(out, gate, up, n);
  }
  void do_swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                          const float* up, int64_t n) const override {
    ops::swiglu_backward(dgate, dup, dout, gate, up, n);
  }

  void do_rope_forward(float* out, const float* inp, int64_t B, int64_t T, int64_t H, int64_t D,
                       double theta) const override {
    ops::rope_forward(out, inp, B, T, H, D, theta);
  }
  void do_rope_backward(float* dinp, const float* dout, int64_t B, int64_t T, int64_t H, int64_t D,
                        double theta) const override {
    ops::rope_backward(dinp, dout, B, T, H, D, theta);
  }
  void do_dropout_forward(float* out, const float* inp, int64_t n, float p, uint64_t seed,
                          uint64_t offset) const override {
    ops::dropout_forward(out, inp, n, p, seed, offset);
  }
  void do_dropout_backward(float* dinp, const float* dout, int64_t n, float p, uint64_t seed,
                           uint64_t offset) const override {
    ops::dropout_backward(dinp, dout, n, p, seed, offset);
  }
  void do_quantize_int8(int8_t* q, float* scales, const float* x, int64_t n,
                        int64_t block) const override {
    ops::quantize_int8(q, scales, x, n, block);
  }
  void do_dequantize_int8(float* x, const int8_t* q, const float* scales, int64_t n,
                          int64_t block) const override {
    ops::dequantize_int8(x, q, scales, n, block);
  }
  void do_attention_forward(float* out, float* preatt, float* att, const float* q, const float* k,
                            const float* v, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                            const AttentionDropout& dropout) const override {
    ops::attention_forward(out, preatt, att, q, k, v, B, T, H, Hkv, D, dropout);
  }
  void do_attention_backward(float* dq, float* dk, float* dv, float* dpreatt, const float* dout,
                             const float* q, const float* k, const float* v, const float* att,
                             int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t D,
                             const AttentionDropout& dropout) const override {
    ops::attention_backward(dq, dk, dv, dpreatt, dout, q, k, v, att, B, T, H, Hkv, D, dropout);
  }

  void do_embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                            int64_t B, int64_t T, int64_t C, int64_t V) const override {
    ops::embedding_forward(out, tokens, wte, wpe, B, T, C, V);
  }
  void do_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                             int64_t B, int64_t T, int64_t C, int64_t V) const override {
    ops::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V);
  }
  void do_cross_entropy_forward(float* losses, float* logsumexp, float* probs, const float* logits,
                                const int32_t* targets, int64_t N, int64_t V) const override {
    ops::cross_entropy_forward(losses, logsumexp, probs, logits, targets, N, V, V);
  }
  void do_cross_entropy_dlogits(float* dlogits, const float* probs, const int32_t* targets,
                                int64_t N, int64_t V, float scale) const override {
    ops::cross_entropy_dlogits(dlogits, probs, targets, N, V, V, scale);
  }
  [[nodiscard]] double do_sum(const float* x, int64_t n) const override {
    ops::sum(scratch_.get(), x, n);
    double total = 0.0;
    do_copy_to_host(&total, scratch_.get(), sizeof total);
    return total;
  }

  void do_adamw_update(float* param, const float* grad, float* m, float* v, int64_t n,
                       const kernels::cpu::AdamWHyperparameters& hp, int64_t step) const override {
    ops::adamw_update(param, grad, m, v, n, hp, step);
  }
  void do_sgd_update(float* param, const float* grad, float* momentum_buffer, int64_t n,
                     float learning_rate, float momentum, float weight_decay,
                     bool nesterov) const override {
    ops::sgd_update(param, grad, momentum_buffer, n, learning_rate, momentum, weight_decay,
                    nesterov);
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
