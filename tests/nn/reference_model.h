// A double-precision reference forward of the whole DecoderModel, composed from the kernels'
// *_reference<double> implementations: the oracle of the finite-difference gradient checks.
// It reads parameters in the ParameterStore's layout (ModelConfig::parameters() order).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/model/model_config.h"

namespace vramlab::nn::testing {

/// Mean cross-entropy of the model with parameters \p params (layout of config.parameters()).
/// \param config the model. \param params (P) all parameters. \param tokens (B, T).
/// \param targets (B, T). \param B batch. \param T sequence. \return the mean loss.
double reference_loss(const ModelConfig& config, const std::vector<double>& params,
                      const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                      int64_t B, int64_t T);

}  // namespace vramlab::nn::testing
