/// \file
/// \brief Activation compression: what the layers keep between forward and backward held as int8
/// with an absmax scale per tensor or per block (the scheme of a saved_tensors_hooks pack/unpack
/// pair), and the bytes that takes. Used by the runtime's saved-activation store (common/nn) and
/// by the estimator.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/plan/techniques.h"

namespace vramlab::recompute {

/// The modes and their names, from the plan's vocabulary (common/plan/techniques.h).
using plan::ActivationCompression;
using plan::compression_name;
using plan::parse_compression;

/// Elements per scale of ActivationCompression::int8_block: the scales cost 4 bytes in 256
/// (1.6%), and one outlier spoils 256 values instead of the whole tensor.
inline constexpr int64_t kInt8ActivationBlock = 256;

/// Bytes of \p numel fp32 elements once compressed: numel int8 values plus the fp32 scales.
/// \param numel elements (≥ 0). \param compression the mode (none: 4 · numel).
int64_t compressed_bytes(int64_t numel, ActivationCompression compression);

}  // namespace vramlab::recompute
