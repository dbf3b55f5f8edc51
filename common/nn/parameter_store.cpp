// ParameterStore: one block of parameters, one of gradients, named views (see parameter_store.h).
#include "common/nn/parameter_store.h"

#include <stdexcept>

#include "common/memory/memory_category.h"

namespace vramlab::nn {

ParameterStore::ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs,
                               DType value_dtype, DType grad_dtype)
    : runtime_(runtime), grad_dtype_(grad_dtype) {
  for (const ParameterSpec& spec : specs) {
    views_.push_back(
        ParameterView{spec.name, spec.shape, spec.layer, numel_, spec.numel(), spec.init});
    numel_ += spec.numel();
  }
  values_ =
      runtime_.allocate({numel_}, value_dtype, memory::MemoryCategory::parameter, "parameters");
}

const ParameterView& ParameterStore::find(std::string_view name) const {
  for (const ParameterView& v : views_)
    if (v.name == name) return v;
  throw std::logic_error("parameter store: no parameter named '" + std::string(name) + "'");
}

bool ParameterStore::contains(std::string_view name) const {
  for (const ParameterView& v : views_)
    if (v.name == name) return true;
  return false;
}

void ParameterStore::ensure_grads() {
  if (grads_.empty())
    grads_ = runtime_.zeros({numel_}, memory::MemoryCategory::gradient, "gradients", grad_dtype_);
}

void ParameterStore::zero_grad(bool set_to_none) {
  if (set_to_none) {
    grads_.reset();
  } else {
    runtime_.fill_zero(grads_);
  }
}

}  // namespace vramlab::nn
