// Names and parsers of the technique enums (see techniques.h).
#include "common/plan/techniques.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "common/platform/errors.h"

namespace vramlab::plan {

namespace {

// One table per enum: the single place a spelling lives.
constexpr std::pair<std::string_view, Precision> kPrecisions[] = {
    {"fp32", Precision::fp32},
    {"bf16", Precision::bf16},
    {"mixed-fp16", Precision::mixed_fp16},
    {"mixed-bf16", Precision::mixed_bf16},
};
constexpr std::pair<std::string_view, Optimizer> kOptimizers[] = {
    {"sgd", Optimizer::sgd},
    {"sgd-momentum", Optimizer::sgd_momentum},
    {"adamw", Optimizer::adamw},
    {"adamw-8bit", Optimizer::adamw_8bit},
    {"lion", Optimizer::lion},
    {"adam-mini", Optimizer::adam_mini},
    {"adafactor", Optimizer::adafactor},
};
constexpr std::pair<std::string_view, AttentionKind> kAttention[] = {
    {"naive", AttentionKind::naive},
    {"flash", AttentionKind::flash},
};
constexpr std::pair<std::string_view, ActivationCompression> kCompression[] = {
    {"none", ActivationCompression::none},
    {"int8", ActivationCompression::int8},
    {"int8-block", ActivationCompression::int8_block},
};
constexpr std::pair<std::string_view, ZeroStage> kZeroStages[] = {
    {"ddp", ZeroStage::ddp},
    {"zero1", ZeroStage::optimizer_states},
    {"zero2", ZeroStage::gradients},
    {"zero3", ZeroStage::parameters},
};

// "a, b, c" (a list) or "a, b or c" (a sentence): the two ways the messages have always read.
enum class ListStyle { commas, sentence };

template <typename Enum, size_t N>
std::string choices(const std::pair<std::string_view, Enum> (&table)[N], ListStyle style) {
  std::string text;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) text += style == ListStyle::sentence && i + 1 == N ? " or " : ", ";
    text += table[i].first;
  }
  return text;
}

template <typename Enum, size_t N>
Enum parse(std::string_view text, const std::pair<std::string_view, Enum> (&table)[N],
           const char* what, ListStyle style) {
  for (const auto& [name, value] : table)
    if (name == text) return value;
  throw UsageError(std::string("unknown ") + what + " '" + std::string(text) + "' (expected " +
                   (style == ListStyle::commas ? "one of: " : "") + choices(table, style) + ")");
}

template <typename Enum, size_t N>
std::string_view name_of(Enum value, const std::pair<std::string_view, Enum> (&table)[N],
                         const char* what) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  throw std::logic_error(std::string("invalid ") + what + " value " +
                         std::to_string(static_cast<int64_t>(value)));
}

}  // namespace

Precision parse_precision(std::string_view name) {
  return parse(name, kPrecisions, "precision", ListStyle::commas);
}

std::string_view precision_name(Precision precision) {
  return name_of(precision, kPrecisions, "precision");
}

bool is_mixed(Precision precision) {
  return precision == Precision::mixed_fp16 || precision == Precision::mixed_bf16;
}

LossScaleSpec parse_loss_scale(std::string_view text) {
  if (text == "dynamic") return {LossScaleKind::dynamic, 65536.0};
  if (text == "none") return {LossScaleKind::none, 1.0};
  constexpr std::string_view kStatic = "static:";
  if (text.starts_with(kStatic)) {
    const std::string_view number = text.substr(kStatic.size());
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error == std::errc() && end == number.data() + number.size() && std::isfinite(value) &&
        value > 0)
      return {LossScaleKind::fixed, value};
    throw UsageError("loss scale '" + std::string(text) +
                     "': the static scale must be a finite number > 0, e.g. static:1024");
  }
  throw UsageError("unknown loss scale '" + std::string(text) +
                   "' (expected dynamic, static:S or none)");
}

std::string loss_scale_name(const LossScaleSpec& spec) {
  switch (spec.kind) {
    case LossScaleKind::dynamic:
      return "dynamic";
    case LossScaleKind::none:
      return "none";
    case LossScaleKind::fixed: {
      std::ostringstream text;
      text.precision(17);
      text << "static:" << spec.value;
      return text.str();
    }
  }
  return "none";
}

void EightBitOptions::validate() const {
  if (block_size < 1)
    throw UsageError("8-bit quantization block size must be positive, got " +
                     std::to_string(block_size));
  if (min_8bit_size < 0)
    throw UsageError("8-bit minimum tensor size must be non-negative, got " +
                     std::to_string(min_8bit_size));
}

Optimizer parse_optimizer(std::string_view name) {
  return parse(name, kOptimizers, "optimizer", ListStyle::commas);
}

std::string_view optimizer_name(Optimizer optimizer) {
  return name_of(optimizer, kOptimizers, "optimizer");
}

std::string_view attention_kind_name(AttentionKind attention) {
  return name_of(attention, kAttention, "attention");
}

AttentionKind parse_attention_kind(std::string_view text) {
  return parse(text, kAttention, "attention", ListStyle::sentence);
}

std::string_view compression_name(ActivationCompression compression) {
  return name_of(compression, kCompression, "activation compression");
}

ActivationCompression parse_compression(std::string_view text) {
  return parse(text, kCompression, "activation compression", ListStyle::sentence);
}

ZeroStage zero_stage_from_int(int64_t stage) {
  if (stage < 0 || stage > 3)
    throw UsageError("--zero " + std::to_string(stage) +
                     " is not a ZeRO stage (expected 0, 1, 2 or 3)");
  return static_cast<ZeroStage>(stage);
}

std::string_view zero_stage_name(ZeroStage stage) {
  return name_of(stage, kZeroStages, "ZeRO stage");
}

}  // namespace vramlab::plan
