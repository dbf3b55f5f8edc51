/// \file
/// \brief Activation compression: what the layers keep between forward and backward held as int8
/// with an absmax scale per tensor or per block (the scheme of a saved_tensors_hooks pack/unpack
/// pair), and the bytes that takes. Used by the runtime's saved-activation store (common/nn) and
/// by the estimator.
#pragma once

#include <cstdint>
#include <string_view>

namespace vramlab::checkpoint {

/// How kept activations are stored between a layer's forward and its backward.
enum class ActivationCompression : unsigned char {
  none,        ///< fp32 as computed
  int8,        ///< int8 with one absmax scale per tensor (scale = max|x| / 127)
  int8_block,  ///< int8 with one absmax scale per kInt8ActivationBlock elements
};

/// Elements per scale of ActivationCompression::int8_block: the scales cost 4 bytes in 256
/// (1.6%), and one outlier spoils 256 values instead of the whole tensor.
inline constexpr int64_t kInt8ActivationBlock = 256;

/// \return "none", "int8" or "int8-block". \param compression the mode.
std::string_view compression_name(ActivationCompression compression);
/// \param text "none", "int8" or "int8-block". \return the mode.
/// \throws vramlab::UsageError naming \p text and the choices.
ActivationCompression parse_compression(std::string_view text);
/// Bytes of \p numel fp32 elements once compressed: numel int8 values plus the fp32 scales.
/// \param numel elements (≥ 0). \param compression the mode (none: 4 · numel).
int64_t compressed_bytes(int64_t numel, ActivationCompression compression);

}  // namespace vramlab::checkpoint
