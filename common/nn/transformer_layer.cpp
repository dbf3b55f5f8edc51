// One transformer block, forward and backward (see block.h).
#include "common/nn/transformer_layer.h"

#include "common/model/saved_tensor_names.h"

#include <string>

#include "common/dist/communicator.h"
#include "common/memory/history.h"

namespace vramlab::nn {

namespace {

std::variant<Mlp, SwigluMlp> make_mlp(const ParameterStore& params, const ModelConfig& c,
                                      const std::string& prefix, int64_t layer,
                                      dist::Communicator* tensor_parallel) {
  if (c.mlp == MlpKind::gelu) return Mlp(params, prefix, layer, tensor_parallel);
  return SwigluMlp(params, prefix, layer, tensor_parallel);
}

}  // namespace

TransformerLayer::TransformerLayer(const ParameterStore& params, const ModelConfig& config,
                                   int64_t layer, dist::Communicator* tensor_parallel)
    : layer_(layer),
      module_name_(layer_module_name(layer)),
      C_(config.hidden),
      tensor_parallel_(tensor_parallel),
      norm1_(params, module_name_ + (config.family == ModelFamily::gpt2 ? ".ln1" : ".norm1"),
             config.family == ModelFamily::gpt2 ? saved::ln1 : saved::norm1, layer),
      attention_(params, config, layer, tensor_parallel),
      norm2_(params, module_name_ + (config.family == ModelFamily::gpt2 ? ".ln2" : ".norm2"),
             config.family == ModelFamily::gpt2 ? saved::ln2 : saved::norm2, layer),
      mlp_(make_mlp(params, config, module_name_ + ".mlp", layer, tensor_parallel)) {}

const char* TransformerLayer::norm1_name() const {
  return norm1_.is_layernorm() ? "ln1" : "norm1";
}

const char* TransformerLayer::norm2_name() const {
  return norm2_.is_layernorm() ? "ln2" : "norm2";
}

const Tensor& TransformerLayer::forward(Runtime& runtime, SavedActivations& saved,
                                        const TensorView& x, int64_t B, int64_t T,
                                        const LayerDropout& dropout) const {
  const memory::ModuleScope module(module_name_);
  const KernelBackend& kernels = runtime.kernels();
  const Tensor& ln1 = [&]() -> const Tensor& {
    const memory::ModuleScope norm(norm1_name());
    return norm1_.forward(runtime, saved, x, B, T);  // (B, T, C)
  }();
  const Tensor& residual2 = [&]() -> const Tensor& {
    const memory::ModuleScope attn("attn");
    return attention_.forward(runtime, saved, ln1.view(), B, T, saved::residual2,
                              {dropout.p, dropout.seed, dropout.attention_offset});  // (B, T, C)
  }();
  // Each branch's output is dropped in place before it joins the stream; its backward needs no
  // saved mask, only the offset.
  if (dropout.p > 0.0f)
    kernels.dropout_forward(residual2.view(), residual2.view(), dropout.p, dropout.seed,
                            dropout.attention_output_offset);
  kernels.residual_forward(residual2.view(), residual2.view(), x);
  const Tensor& ln2 = [&]() -> const Tensor& {
    const memory::ModuleScope norm(norm2_name());
    return norm2_.forward(runtime, saved, residual2.view(), B, T);  // (B, T, C)
  }();
  const Tensor& residual3 = [&]() -> const Tensor& {
    const memory::ModuleScope module_mlp("mlp");
    return std::visit(
        [&](const auto& mlp) -> const Tensor& {
          return mlp.forward(runtime, saved, ln2.view(), B, T, saved::residual3);  // (B, T, C)
        },
        mlp_);
  }();
  if (dropout.p > 0.0f)
    kernels.dropout_forward(residual3.view(), residual3.view(), dropout.p, dropout.seed,
                            dropout.mlp_output_offset);
  kernels.residual_forward(residual3.view(), residual3.view(), residual2.view());
  return residual3;
}

void TransformerLayer::backward(Runtime& runtime, SavedActivations& saved, const TensorView& x,
                                const TensorView& dresidual, int64_t B, int64_t T,
                                const LayerDropout& dropout) const {
  const memory::ModuleScope module(module_name_);
  // The gradient reaching a branch's output: the stream's, through the branch's dropout mask.
  auto branch_gradient = [&](Tensor& scratch, uint64_t offset) -> TensorView {
    if (dropout.p == 0.0f) return dresidual;
    scratch = runtime.temporary({B, T, C_}, "dbranch", dresidual.dtype());  // (B, T, C)
    runtime.kernels().dropout_backward(scratch.view(), dresidual, dropout.p, dropout.seed, offset);
    return scratch.view();
  };
  const TensorView residual2 = saved.get(layer_, saved::residual2).view();  // (B, T, C)
  {
    // dresidual holds ∂loss/∂residual3; the norm2 backward adds the MLP branch → ∂loss/∂residual2.
    Tensor dln2 = runtime.zeros({B, T, C_}, memory::MemoryCategory::temporary, "dln2",
                                dresidual.dtype());  // (B, T, C)
    const TensorView ln2 =
        saved.get(layer_, norm2_.is_layernorm() ? saved::ln2 : saved::norm2).view();
    Tensor dropped;  // (B, T, C) with dropout only
    const TensorView dout = branch_gradient(dropped, dropout.mlp_output_offset);
    {
      const memory::ModuleScope module_mlp("mlp");
      std::visit(
          [&](const auto& mlp) { mlp.backward(runtime, saved, dln2.view(), dout, ln2, B, T); },
          mlp_);
      // Each rank's fc (gate, up) saw the whole ln2 through its own units: the sum is ∂loss/∂ln2.
      if (tensor_parallel_ != nullptr)
        tensor_parallel_->all_reduce(dln2.view(), dist::Traffic::activations);
    }
    const memory::ModuleScope norm(norm2_name());
    norm2_.backward(runtime, saved, dresidual, dln2.view(), residual2, B, T);
  }
  {
    // Then the attention branch → ∂loss/∂x.
    Tensor dln1 = runtime.zeros({B, T, C_}, memory::MemoryCategory::temporary, "dln1",
                                dresidual.dtype());  // (B, T, C)
    const TensorView ln1 =
        saved.get(layer_, norm1_.is_layernorm() ? saved::ln1 : saved::norm1).view();
    Tensor dropped;  // (B, T, C) with dropout only
    const TensorView dout = branch_gradient(dropped, dropout.attention_output_offset);
    {
      const memory::ModuleScope attn("attn");
      attention_.backward(runtime, saved, dln1.view(), dout, ln1, B, T,
                          {dropout.p, dropout.seed, dropout.attention_offset});
      if (tensor_parallel_ != nullptr)
        tensor_parallel_->all_reduce(dln1.view(), dist::Traffic::activations);
    }
    const memory::ModuleScope norm(norm1_name());
    norm1_.backward(runtime, saved, dresidual, dln1.view(), x, B, T);
  }
  saved.release_layer(layer_);
}

}  // namespace vramlab::nn
