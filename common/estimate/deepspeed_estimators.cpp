// DeepSpeed's ZeRO-2 and ZeRO-3 model-state estimators, from their published formulas. Python's
// float arithmetic and int() truncation are reproduced with doubles and a checked conversion.
#include "common/estimate/deepspeed_estimators.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

namespace {

void require_factor(double factor) {
  if (!(factor >= 0.0) || !std::isfinite(factor))
    throw UsageError("additional buffer factor must be finite and non-negative, got " +
                     std::to_string(factor));
}

// Python's int(x) for a non-negative float, or a UsageError when it does not fit in int64.
int64_t python_int(double x, const char* what) {
  if (!(x < 9.2233720368547758e18))
    throw UsageError(std::string(what) + " overflows int64 (" + std::to_string(x) + ")");
  return static_cast<int64_t>(x);
}

}  // namespace

DeepSpeedEstimate deepspeed_zero2_model_states_mem_needs(int64_t total_params,
                                                         int64_t gpus_per_node, int64_t num_nodes,
                                                         bool cpu_offload,
                                                         double additional_buffer_factor) {
  require_positive(total_params, "total params");
  require_positive(gpus_per_node, "GPUs per node");
  require_positive(num_nodes, "nodes");
  require_factor(additional_buffer_factor);
  const int64_t total_gpus = checked_mul(num_nodes, gpus_per_node, "GPU count");
  const double P = static_cast<double>(total_params);
  DeepSpeedEstimate out;
  if (cpu_offload) {
    out.gpu_bytes = checked_mul(2, total_params, "GPU bytes");
    const double per_param = std::max(4.0 * static_cast<double>(total_gpus), 16.0);
    out.cpu_bytes = python_int(P * per_param * additional_buffer_factor, "CPU bytes");
  } else {
    out.gpu_bytes = checked_add(checked_mul(2, total_params, "GPU bytes"),
                                python_int(18.0 * P / static_cast<double>(total_gpus), "GPU bytes"),
                                "GPU bytes");
    out.cpu_bytes = python_int(
        P * 4.0 * static_cast<double>(gpus_per_node) * additional_buffer_factor, "CPU bytes");
  }
  return out;
}

DeepSpeedEstimate deepspeed_zero3_model_states_mem_needs(
    int64_t total_params, int64_t largest_layer_params, int64_t gpus_per_node, int64_t num_nodes,
    bool cpu_offload, bool cpu_offload_params, bool zero_init, double additional_buffer_factor) {
  require_positive(total_params, "total params");
  require_positive(largest_layer_params, "largest layer params");
  require_positive(gpus_per_node, "GPUs per node");
  require_positive(num_nodes, "nodes");
  require_factor(additional_buffer_factor);
  const int64_t total_gpus = checked_mul(num_nodes, gpus_per_node, "GPU count");
  const double P = static_cast<double>(total_params);
  const double gpn = static_cast<double>(gpus_per_node);
  const double gpus_factor = 1.0 / static_cast<double>(num_nodes);
  const double f = additional_buffer_factor;
  const int64_t largest_layer_memory = checked_mul(4, largest_layer_params, "GPU bytes");
  DeepSpeedEstimate out;
  double cpu = 0.0;
  if (cpu_offload) {
    const double states = cpu_offload_params ? 18.0 : 16.0;
    if (cpu_offload_params) {
      out.gpu_bytes = largest_layer_memory;
    } else {
      out.gpu_bytes = checked_add(
          largest_layer_memory, python_int(2.0 * P / static_cast<double>(total_gpus), "GPU bytes"),
          "GPU bytes");
    }
    cpu = zero_init ? P * states * gpus_factor * f
                    : P * std::max(4.0 * gpn, states * gpus_factor) * f;
  } else {
    out.gpu_bytes = checked_add(largest_layer_memory,
                                python_int(18.0 * P / static_cast<double>(total_gpus), "GPU bytes"),
                                "GPU bytes");
    cpu = zero_init ? static_cast<double>(largest_layer_params) * 4.0 * gpn * f : P * 4.0 * gpn * f;
  }
  out.cpu_bytes = python_int(cpu, "CPU bytes");
  return out;
}

int64_t deepspeed_largest_layer_params(const ModelConfig& model) {
  std::map<std::string, int64_t, std::less<>> per_module;
  for (const ParameterSpec& spec : model.parameters()) {
    std::string_view module = spec.name;
    for (const std::string_view own : {std::string_view(".weight"), std::string_view(".bias")})
      if (module.size() > own.size() && module.ends_with(own)) module.remove_suffix(own.size());
    auto [it, added] = per_module.try_emplace(std::string(module), 0);
    it->second = checked_add(it->second, spec.numel(), "largest layer parameters");
  }
  int64_t largest = 0;
  for (const auto& [module, count] : per_module) largest = std::max(largest, count);
  return largest;
}

}  // namespace vramlab::estimate
