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
  void do_fill_from_host(void*, DType, int64_t, const HostGenerator&) const override {}
  void do_linear_forward(OpTypes, void*, const void*, const void*, const void*, int64_t, int64_t,
                         int64_t) const override {}
  void do_linear_backward(OpTypes, void*, void*, void*, const void*, const void*, const void*,
                          int64_t, int64_t, int64_t) const override {}
  void do_layernorm_forward(OpTypes, void*, float*, float*, const void*, const void*, const void*,
                            int64_t, int64_t) const override {}
  void do_layernorm_backward(OpTypes, void*, void*, void*, const void*, const void*, const void*,
                             const float*, const float*, int64_t, int64_t) const override {}
  void do_rmsnorm_forward(OpTypes, void*, float*, const void*, const void*, int64_t,
                          int64_t) const override {}
  void do_rmsnorm_backward(OpTypes, void*, void*, const void*, const void*, const void*,
                           const float*, int64_t, int64_t) const override {}
  void do_residual_forward(OpTypes, void*, const void*, const void*, int64_t) const override {}
  void do_gelu_forward(OpTypes, void*, const void*, int64_t) const override {}
  void do_gelu_backward(OpTypes, void*, const void*, const void*, int64_t) const override {}
  void do_swiglu_forward(OpTypes, void*, const void*, const void*, int64_t) const override {}
  void do_swiglu_backward(OpTypes, void*, void*, const void*, const void*, const void*,
                          int64_t) const override {}
  void do_rope_forward(OpTypes, void*, const void*, int64_t, int64_t, int64_t, int64_t,
                       double) const override {}
  void do_rope_backward(OpTypes, void*, const void*, int64_t, int64_t, int64_t, int64_t,
                        double) const override {}
  void do_dropout_forward(OpTypes, void*, const void*, int64_t, float, uint64_t,
                          uint64_t) const override {}
  void do_dropout_backward(OpTypes, void*, const void*, int64_t, float, uint64_t,
                           uint64_t) const override {}
  void do_quantize_int8(OpTypes, int8_t*, float*, const void*, int64_t, int64_t) const override {}
  void do_dequantize_int8(OpTypes, void*, const int8_t*, const float*, int64_t,
                          int64_t) const override {}
  void do_attention_forward(OpTypes, void*, void*, void*, const void*, const void*, const void*,
                            int64_t, int64_t, int64_t, int64_t, int64_t,
                            const AttentionDropout&) const override {}
  void do_attention_backward(OpTypes, void*, void*, void*, void*, const void*, const void*,
                             const void*, const void*, const void*, int64_t, int64_t, int64_t,
                             int64_t, int64_t, const AttentionDropout&) const override {}
  void do_flash_attention_forward(OpTypes, void*, float*, const void*, const void*, const void*,
                                  int64_t, int64_t, int64_t, int64_t, int64_t,
                                  const AttentionDropout&) const override {}
  void do_flash_attention_backward(OpTypes, void*, void*, void*, float*, const void*, const void*,
                                   const void*, const void*, const void*, const float*, int64_t,
                                   int64_t, int64_t, int64_t, int64_t,
                                   const AttentionDropout&) const override {}
  void do_embedding_forward(OpTypes, void*, const int32_t*, const void*, const void*, int64_t,
                            int64_t, int64_t, int64_t) const override {}
  void do_embedding_backward(OpTypes, void*, void*, const void*, const int32_t*, int64_t, int64_t,
                             int64_t, int64_t) const override {}
  void do_cross_entropy_forward(OpTypes, float*, float*, void*, const void*, const int32_t*,
                                int64_t, int64_t) const override {}
  void do_cross_entropy_dlogits(OpTypes, void*, const void*, const int32_t*, int64_t, int64_t,
                                float) const override {}
  [[nodiscard]] double do_sum(OpTypes, const void*, int64_t) const override { return 0.0; }
  void do_cast(void*, DType, const void*, DType, int64_t) const override {}
  [[nodiscard]] GradientCheck do_check_gradients(const void*, DType, int64_t,
                                                 float) const override {
    return {};
  }
  void do_adamw_update(const OptimizerTypes&, void*, const void*, void*, void*, void*, int64_t,
                       const kernels::cpu::AdamWHyperparameters&, int64_t, float,
                       const ParameterRounding&) const override {}
  void do_sgd_update(const OptimizerTypes&, void*, const void*, void*, void*, int64_t, float, float,
                     float, bool, float, const ParameterRounding&) const override {}
  void do_lion_update(const OptimizerTypes&, void*, const void*, void*, void*, int64_t,
                      const kernels::cpu::LionHyperparameters&, float,
                      const ParameterRounding&) const override {}
  void do_adam_mini_update(const OptimizerTypes&, void*, const void*, void*, void*, void*, int64_t,
                           int64_t, const kernels::cpu::AdamWHyperparameters&, int64_t, float,
                           const ParameterRounding&) const override {}
  void do_adafactor_update(const OptimizerTypes&, void*, const void*, void*, void*, void*, int64_t,
                           int64_t, bool, const kernels::cpu::AdafactorHyperparameters&, int64_t,
                           float, const ParameterRounding&) const override {}
  void do_adamw_8bit_update(const OptimizerTypes&, void*, const void*, uint8_t*, uint8_t*, float*,
                            float*, void*, int64_t, int64_t,
                            const kernels::cpu::AdamWHyperparameters&, int64_t, float,
                            const ParameterRounding&) const override {}
};

}  // namespace

std::unique_ptr<KernelBackend> make_meta_kernel_backend() {
  return std::make_unique<MetaKernelBackend>();
}

}  // namespace vramlab::nn
