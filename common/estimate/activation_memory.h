/// \file
/// \brief Activation bytes per transformer layer: Korthikanti et al. 2022 (arXiv 2205.05198)
/// Table 2, all six rows, and the ZeRO paper's footnote estimate.
///
/// Korthikanti et al. count, per layer and with s = sequence, b = micro-batch, h = hidden,
/// a = heads, t = tensor-parallel degree (§4.1): attention 11sbh + 5as²b, MLP 19sbh, two
/// LayerNorm inputs 4sbh, i.e. sbh(34 + 5as/h) bytes, with 16-bit (2-byte) activations, 1-byte
/// dropout masks, the s×s attention scores materialised and LayerNorm statistics ignored.
///
/// Written with the element size e instead of 2 (the masks stay 1 byte), the same inventory is:
///   - not split by TP: the two LayerNorm inputs, the attention input, the MLP input (4 elements
///     per token-channel) and two dropout masks (2 bytes): sbh(4e + 2) — 10 when e = 2;
///   - split by TP: Q, K, V, the projection input, the GeLU input and output (12 elements):
///     12e·sbh/t — 24/t when e = 2;
///   - attention scores: softmax output and dropout output (2 elements) and a mask (1 byte):
///     (2e + 1)as²b/t — 5as²b/t when e = 2;
///   - sequence parallelism splits the first group too; full recompute keeps only the layer input
///     (e·sbh, 2sbh when e = 2).
/// With e = 2 each row is exactly the paper's; with e = 4 (fp32 training) it is the paper's
/// inventory with 4-byte elements: sbh(66 + 9as/h) without parallelism.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vramlab::estimate {

/// The six rows of Korthikanti et al. Table 2.
enum class ActivationRow {
  no_parallelism,                      ///< sbh(34 + 5as/h)
  tensor_parallel,                     ///< sbh(10 + 24/t + 5as/(ht))
  tensor_sequence_parallel,            ///< sbh(34/t + 5as/(ht))
  tensor_parallel_selective,           ///< sbh(10 + 24/t)
  tensor_sequence_parallel_selective,  ///< sbh·34/t
  full_recompute,                      ///< 2sbh
};

/// Activation recomputation policy.
enum class Recompute {
  none,       ///< save everything for backward.
  selective,  ///< recompute the attention scores (Korthikanti et al. §4.2.2).
  full,       ///< keep only each layer's input, recompute the layer in backward.
};

/// Parses "none", "selective", "full".
/// \param name the text. \return the policy.
/// \throws vramlab::UsageError "unknown recompute 'NAME' (expected one of: ...)".
Recompute parse_recompute(std::string_view name);
/// \param recompute a policy. \return its name as parse_recompute accepts it.
std::string_view recompute_name(Recompute recompute);

/// The Table 2 row that applies.
/// \param tensor_parallel t (1 without TP; row no_parallelism is chosen for t = 1 without SP).
/// \param sequence_parallel whether sequence parallelism is on.
/// \param recompute the recompute policy.
/// \return the row.
ActivationRow select_activation_row(int64_t tensor_parallel, bool sequence_parallel,
                                    Recompute recompute);

/// The shapes Table 2 needs.
struct ActivationShape {
  int64_t seq = 0;              ///< s.
  int64_t micro_batch = 0;      ///< b.
  int64_t hidden = 0;           ///< h.
  int64_t heads = 0;            ///< a.
  int64_t tensor_parallel = 1;  ///< t.
  int64_t element_bytes = 2;    ///< e: 2 as in the paper, 4 for fp32 activations.
};

/// Bytes one transformer layer keeps for backward, per Table 2 (rounded up to a whole byte when
/// t does not divide the count).
/// \param row the Table 2 row. \param shape s, b, h, a, t, e.
/// \return bytes per layer on one device.
/// \throws vramlab::UsageError for a size ≤ 0, an element size other than 1, 2, 4 or 8, or an
/// overflow.
int64_t korthikanti_activation_bytes_per_layer(ActivationRow row, const ActivationShape& shape);

/// The row's formula with its source, e.g. "Korthikanti et al. 2022 Table 2 (tensor parallel):
/// sbh(10 + 24/t + 5as/(ht))"; for e ≠ 2 the coefficients are those of the file comment.
/// \param row the row. \param element_bytes e.
/// \return the text.
std::string korthikanti_formula(ActivationRow row, int64_t element_bytes);

/// ZeRO (Rajbhandari et al. 2020) §3, footnote 3: activations of a transformer without
/// checkpointing ≈ 12·h·b·s·L elements (attention scores not counted).
/// \param hidden h. \param micro_batch b. \param seq s. \param layers L.
/// \param element_bytes bytes per element (2 for fp16, as the paper's 60 GB).
/// \return bytes. \throws vramlab::UsageError for a size ≤ 0 or an overflow.
int64_t zero_footnote_activation_bytes(int64_t hidden, int64_t micro_batch, int64_t seq,
                                       int64_t layers, int64_t element_bytes);

}  // namespace vramlab::estimate
