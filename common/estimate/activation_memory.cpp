// Activation bytes per layer: Korthikanti et al. 2022 Table 2 with the element size as a
// parameter, and the ZeRO paper's 12hbsL footnote.
#include "common/estimate/activation_memory.h"

#include <utility>

#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::estimate {

namespace {

constexpr std::pair<std::string_view, Recompute> kRecompute[] = {
    {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};

}  // namespace

Recompute parse_recompute(std::string_view name) {
  for (const auto& [text, value] : kRecompute)
    if (text == name) return value;
  throw UsageError("unknown recompute '" + std::string(name) +
                   "' (expected one of: none, selective, full)");
}

std::string_view recompute_name(Recompute recompute) {
  for (const auto& [text, value] : kRecompute)
    if (value == recompute) return text;
  throw std::logic_error("recompute_name: invalid Recompute");
}

ActivationRow select_activation_row(int64_t tensor_parallel, bool sequence_parallel,
                                    Recompute recompute) {
  switch (recompute) {
    case Recompute::full:
      return ActivationRow::full_recompute;
    case Recompute::selective:
      return sequence_parallel ? ActivationRow::tensor_sequence_parallel_selective
                               : ActivationRow::tensor_parallel_selective;
    case Recompute::none:
      break;
  }
  if (sequence_parallel) return ActivationRow::tensor_sequence_parallel;
  return tensor_parallel == 1 ? ActivationRow::no_parallelism : ActivationRow::tensor_parallel;
}

int64_t korthikanti_activation_bytes_per_layer(ActivationRow row, const ActivationShape& shape) {
  require_positive(shape.seq, "sequence length");
  require_positive(shape.micro_batch, "micro-batch");
  require_positive(shape.hidden, "hidden");
  require_positive(shape.heads, "heads");
  require_positive(shape.tensor_parallel, "tensor-parallel degree");
  const int64_t e = shape.element_bytes;
  if (e != 1 && e != 2 && e != 4 && e != 8)
    throw UsageError("activation element size must be 1, 2, 4 or 8 bytes, got " +
                     std::to_string(e));
  const char* what = "activation bytes";
  const int64_t t = shape.tensor_parallel;
  const int64_t sbh =
      checked_mul(checked_mul(shape.seq, shape.micro_batch, what), shape.hidden, what);
  // as²b: the attention-score elements of one layer.
  const int64_t as2b =
      checked_mul(checked_mul(checked_mul(shape.heads, shape.seq, what), shape.seq, what),
                  shape.micro_batch, what);
  const int64_t replicated = checked_mul(sbh, 4 * e + 2, what);  // LN, attn and MLP inputs, masks
  const int64_t tp_split = checked_mul(sbh, 12 * e, what);       // Q, K, V, proj in, GeLU in/out
  const int64_t scores = checked_mul(as2b, 2 * e + 1, what);     // softmax, dropout out, mask
  // Every row is (not divided by t) + (divided by t); the division is rounded up once.
  int64_t whole = 0;
  int64_t over_t = 0;
  switch (row) {
    case ActivationRow::no_parallelism:
      whole = checked_add(checked_add(replicated, tp_split, what), scores, what);
      break;
    case ActivationRow::tensor_parallel:
      whole = replicated;
      over_t = checked_add(tp_split, scores, what);
      break;
    case ActivationRow::tensor_sequence_parallel:
      over_t = checked_add(checked_add(replicated, tp_split, what), scores, what);
      break;
    case ActivationRow::tensor_parallel_selective:
      whole = replicated;
      over_t = tp_split;
      break;
    case ActivationRow::tensor_sequence_parallel_selective:
      over_t = checked_add(replicated, tp_split, what);
      break;
    case ActivationRow::full_recompute:
      whole = checked_mul(sbh, e, what);
      break;
  }
  return checked_add(whole, ceil_div(over_t, t), what);
}

std::string korthikanti_formula(ActivationRow row, int64_t element_bytes) {
  const int64_t e = element_bytes;
  const std::string all = std::to_string(16 * e + 2);
  const std::string whole = std::to_string(4 * e + 2);
  const std::string split = std::to_string(12 * e);
  const std::string scores = std::to_string(2 * e + 1);
  const std::string source = "Korthikanti et al. 2022 Table 2";
  const std::string elements =
      e == 2 ? "" : " (paper's inventory, " + std::to_string(e) + "-byte elements, 1-byte masks)";
  switch (row) {
    case ActivationRow::no_parallelism:
      return source + " (no parallelism)" + elements + ": sbh(" + all + " + " + scores +
             "as/h) per layer × L";
    case ActivationRow::tensor_parallel:
      return source + " (tensor parallel)" + elements + ": sbh(" + whole + " + " + split + "/t + " +
             scores + "as/(ht)) per layer × L";
    case ActivationRow::tensor_sequence_parallel:
      return source + " (tensor + sequence parallel)" + elements + ": sbh(" + all + "/t + " +
             scores + "as/(ht)) per layer × L";
    case ActivationRow::tensor_parallel_selective:
      return source + " (tensor parallel + selective recompute)" + elements + ": sbh(" + whole +
             " + " + split + "/t) per layer × L";
    case ActivationRow::tensor_sequence_parallel_selective:
      return source + " (tensor + sequence parallel + selective recompute)" + elements + ": sbh·" +
             all + "/t per layer × L";
    case ActivationRow::full_recompute:
      return source + " (full activation recompute)" + elements + ": " + std::to_string(e) +
             "sbh per layer × L";
  }
  throw std::logic_error("korthikanti_formula: invalid ActivationRow");
}

int64_t zero_footnote_activation_bytes(int64_t hidden, int64_t micro_batch, int64_t seq,
                                       int64_t layers, int64_t element_bytes) {
  require_positive(hidden, "hidden");
  require_positive(micro_batch, "micro-batch");
  require_positive(seq, "sequence length");
  require_positive(layers, "layers");
  require_positive(element_bytes, "element size");
  const char* what = "activation bytes";
  int64_t bytes = checked_mul(12, hidden, what);
  for (int64_t factor : {micro_batch, seq, layers, element_bytes})
    bytes = checked_mul(bytes, factor, what);
  return bytes;
}

}  // namespace vramlab::estimate
