// The meta device's kernels: nothing runs (see meta_kernel_backend.h).
#include "common/nn/meta_kernel_backend.h"

namespace vramlab::nn {

namespace {

class MetaKernelBackend final : public KernelBackend {
 public:
  [[nodiscard]] KernelKind kind() const override { return KernelKind::meta; }

 private:
  void do_fill_zero(void*, std::size_t) const override {}
  void do_copy_to_device(void*, const void*, std::size_t) const override {}
  void do_copy_to_host(void*, const void*, std::size_t) const override {}
  void do_fill_from_host(float*, int64_t, const HostGenerator&) const override {}
  void do_linear_forward(float*, const float*, const float*, const float*, int64_t, int64_t,
                         int64_t) const override {}
  void do_linear_backward(float*, float*, float*, const float*, const float*, const float*, int64_t,
                          int64_t, int64_t) const override {}
  void do_layernorm_forward(float*, float*, float*, const float*, const float*, const float*,
                            int64_t, int64_t) const override {}
  void do_layernorm_backward(float*, float*, float*, const float*, const float*, const float*,
                             const float*, const float*, int64_t, int64_t) const override {}
  void do_rmsnorm_forward(float*, float*, const float*, const float*, int64_t,
                          int64_t) const override {}
  void do_rmsnorm_backward(float*, float*, const float*, const float*, const float*, const float*,
                           int64_t, int64_t) const override {}
  void do_residual_forward(float*, const float*, const float*, int64_t) const override {}
  void do_gelu_forward(float*, const float*, int64_t) const override {}
  void do_gelu_backward(float*, const float*, const float*, int64_t) const override {}
  void do_swiglu_forward(float*, const float*, const float*, int64_t) const override {}
  void do_swiglu_backward(float*, float*, const float*, const float*, const float*,
                          int64_t) const override {}
  void do_rope_forward(float*, const float*, int64_t, int64_t, int64_t, int64_t,
                       double) const override {}
  void do_rope_backward(float*, const float*, int64_t, int64_t, int64_t, int64_t,
                        double) const override {}
  void do_dropout_forward(float*, const float*, int64_t, float, uint64_t, uint64_t) const override {
  }
  void do_dropout_backward(float*, const float*, int64_t, float, uint64_t,
                           uint64_t) const override {}
  void do_quantize_int8(int8_t*, float*, const float*, int64_t, int64_t) const override {}
  void do_dequantize_int8(float*, const int8_t*, const float*, int64_t, int64_t) const override {}
  void do_attention_forward(float*, float*, float*, const float*, const float*, const float*,
                            int64_t, int64_t, int64_t, int64_t, int64_t,
                            const AttentionDropout&) const override {}
  void do_attention_backward(float*, float*, float*, float*, const float*, const float*,
                             const float*, const float*, const float*, int64_t, int64_t, int64_t,
                             int64_t, int64_t, const AttentionDropout&) const override {}
  void do_embedding_forward(float*, const int32_t*, const float*, const float*, int64_t, int64_t,
                            int64_t, int64_t) const override {}
  void do_embedding_backward(float*, float*, const float*, const int32_t*, int64_t, int64_t,
                             int64_t, int64_t) const override {}
  void do_cross_entropy_forward(float*, float*, float*, const float*, const int32_t*, int64_t,
                                int64_t) const override {}
  void do_cross_entropy_dlogits(float*, const float*, const int32_t*, int64_t, int64_t,
                                float) const override {}
  [[nodiscard]] double do_sum(const float*, int64_t) const override { return 0.0; }
  void do_adamw_update(float*, const float*, float*, float*, int64_t,
                       const kernels::cpu::AdamWHyperparameters&, int64_t) const override {}
  void do_sgd_update(float*, const float*, float*, int64_t, float, float, float,
                     bool) const override {}
};

}  // namespace

std::unique_ptr<KernelBackend> make_meta_kernel_backend() {
  return std::make_unique<MetaKernelBackend>();
}

}  // namespace vramlab::nn
