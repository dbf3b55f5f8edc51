// The checks the planner's sums rely on.
#include "common/recompute/chain_costs.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::recompute {

namespace {

void check_bytes(int64_t value, const char* what, const std::string& where) {
  if (value < 0) throw InternalError(where + ": " + what + " " + std::to_string(value) + " < 0");
}

void check_cost(double value, const char* what, const std::string& where) {
  if (!std::isfinite(value) || value < 0.0) {
    throw InternalError(where + ": " + what + " " + std::to_string(value) +
                        " is not a finite cost ≥ 0");
  }
}

}  // namespace

void validate_chain_costs(const ChainCosts& costs) {
  check_bytes(costs.before_bytes, "before_bytes", "chain");
  check_bytes(costs.head_bytes, "head_bytes", "chain");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Every sum the planner and the timeline form is a part of this total.
  int64_t total = costs.before_bytes;
  auto add = [&](int64_t bytes) {
    if (bytes > kMax - total) {
      throw UsageError("the saved activations of " + std::to_string(costs.layers.size()) +
                       " layers do not fit in 64-bit byte counts");
    }
    total += bytes;
  };
  add(costs.head_bytes);
  for (size_t l = 0; l < costs.layers.size(); ++l) {
    const LayerCosts& layer = costs.layers[l];
    const std::string where = "layer " + std::to_string(l);
    check_bytes(layer.saved_bytes, "saved_bytes", where);
    check_bytes(layer.selective_bytes, "selective_bytes", where);
    check_bytes(layer.output_bytes, "output_bytes", where);
    if (layer.selective_bytes > layer.saved_bytes || layer.output_bytes > layer.selective_bytes) {
      // The output is saved under every choice and selective only drops a part of F.
      throw InternalError(where + ": expected output_bytes " + std::to_string(layer.output_bytes) +
                          " ≤ selective_bytes " + std::to_string(layer.selective_bytes) +
                          " ≤ saved_bytes " + std::to_string(layer.saved_bytes));
    }
    check_cost(layer.forward_cost, "forward_cost", where);
    check_cost(layer.selective_cost, "selective_cost", where);
    add(layer.saved_bytes);
  }
}

}  // namespace vramlab::recompute
