// Names and parsers of the technique enums (see techniques.h).
#include "common/plan/techniques.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "common/platform/enum_names.h"
#include "common/platform/errors.h"

namespace vramlab::plan {

namespace {

using platform::ChoiceList;
using platform::EnumName;

// One table per enum: the single place a spelling lives.
constexpr EnumName<Precision> kPrecisions[] = {
    {"fp32", Precision::fp32},
    {"bf16", Precision::bf16},
    {"mixed-fp16", Precision::mixed_fp16},
    {"mixed-bf16", Precision::mixed_bf16},
};
constexpr EnumName<Optimizer> kOptimizers[] = {
    {"sgd", Optimizer::sgd},
    {"sgd-momentum", Optimizer::sgd_momentum},
    {"adamw", Optimizer::adamw},
    {"adamw-8bit", Optimizer::adamw_8bit},
    {"lion", Optimizer::lion},
    {"adam-mini", Optimizer::adam_mini},
    {"adafactor", Optimizer::adafactor},
};
constexpr EnumName<AttentionKind> kAttention[] = {
    {"naive", AttentionKind::naive},
    {"flash", AttentionKind::flash},
};
constexpr EnumName<ActivationCompression> kCompression[] = {
    {"none", ActivationCompression::none},
    {"int8", ActivationCompression::int8},
    {"int8-block", ActivationCompression::int8_block},
};
constexpr EnumName<ZeroStage> kZeroStages[] = {
    {"ddp", ZeroStage::ddp},
    {"zero1", ZeroStage::optimizer_states},
    {"zero2", ZeroStage::gradients},
    {"zero3", ZeroStage::parameters},
};

}  // namespace

Precision parse_precision(std::string_view name) {
  return platform::parse_enum(name, kPrecisions, "precision", ChoiceList::one_of);
}

std::string_view precision_name(Precision precision) {
  return platform::enum_name(precision, kPrecisions, "precision");
}

std::vector<std::string> precision_names() {
  return platform::enum_names(kPrecisions);
}

std::vector<std::string> optimizer_names() {
  return platform::enum_names(kOptimizers);
}

std::vector<std::string> attention_kind_names() {
  return platform::enum_names(kAttention);
}

std::vector<std::string> compression_names() {
  return platform::enum_names(kCompression);
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
  return platform::parse_enum(name, kOptimizers, "optimizer", ChoiceList::one_of);
}

std::string_view optimizer_name(Optimizer optimizer) {
  return platform::enum_name(optimizer, kOptimizers, "optimizer");
}

std::string_view attention_kind_name(AttentionKind attention) {
  return platform::enum_name(attention, kAttention, "attention");
}

AttentionKind parse_attention_kind(std::string_view text) {
  return platform::parse_enum(text, kAttention, "attention", ChoiceList::sentence);
}

std::string_view compression_name(ActivationCompression compression) {
  return platform::enum_name(compression, kCompression, "activation compression");
}

ActivationCompression parse_compression(std::string_view text) {
  return platform::parse_enum(text, kCompression, "activation compression", ChoiceList::sentence);
}

ZeroStage zero_stage_from_int(int64_t stage) {
  if (stage < 0 || stage > 3)
    throw UsageError("--zero " + std::to_string(stage) +
                     " is not a ZeRO stage (expected 0, 1, 2 or 3)");
  return static_cast<ZeroStage>(stage);
}

std::string_view zero_stage_name(ZeroStage stage) {
  return platform::enum_name(stage, kZeroStages, "ZeRO stage");
}

ZeroStage parse_zero_stage_name(std::string_view text) {
  return platform::parse_enum(text, kZeroStages, "ZeRO stage", ChoiceList::one_of);
}

}  // namespace vramlab::plan
