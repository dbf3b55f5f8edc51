// Names and parsers of ModelFamily, NormKind and MlpKind.
#include "common/model/model_kinds.h"

#include <string>

#include "common/platform/errors.h"

namespace vramlab {

namespace {

// One parser for the enums: the names table is the single place a spelling lives.
template <typename Enum, size_t N>
Enum parse(std::string_view text, const char* what, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  std::string expected;
  for (size_t i = 0; i < N; ++i)
    expected += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  throw UsageError(std::string("unknown ") + what + " '" + std::string(text) + "' (expected " +
                   expected + ")");
}

// Indexed by the enum's value.
constexpr std::string_view kFamilyNames[] = {"gpt2", "llama"};
constexpr std::string_view kNormNames[] = {"layernorm", "rmsnorm"};
constexpr std::string_view kMlpNames[] = {"gelu", "swiglu"};

template <typename Enum, size_t N>
std::string_view name_of(Enum value, const char* what, const std::string_view (&names)[N]) {
  const auto index = static_cast<size_t>(value);
  if (index >= N)
    throw std::logic_error(std::string("invalid ") + what + " value " + std::to_string(index));
  return names[index];
}

}  // namespace

std::string_view model_family_name(ModelFamily family) {
  return name_of(family, "family", kFamilyNames);
}

std::string_view norm_kind_name(NormKind norm) {
  return name_of(norm, "norm", kNormNames);
}

std::string_view mlp_kind_name(MlpKind mlp) {
  return name_of(mlp, "mlp", kMlpNames);
}

ModelFamily parse_model_family(std::string_view text) {
  return parse<ModelFamily>(text, "family", kFamilyNames);
}

NormKind parse_norm_kind(std::string_view text) {
  return parse<NormKind>(text, "norm", kNormNames);
}

MlpKind parse_mlp_kind(std::string_view text) {
  return parse<MlpKind>(text, "mlp", kMlpNames);
}

}  // namespace vramlab
