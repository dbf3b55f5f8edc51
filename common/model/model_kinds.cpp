// Names and parsers of ModelFamily, NormKind and MlpKind.
#include "common/model/model_kinds.h"

#include "common/platform/enum_names.h"

namespace vramlab {

namespace {

using platform::ChoiceList;
using platform::EnumName;

constexpr EnumName<ModelFamily> kFamilies[] = {{"gpt2", ModelFamily::gpt2},
                                               {"llama", ModelFamily::llama}};
constexpr EnumName<NormKind> kNorms[] = {{"layernorm", NormKind::layernorm},
                                         {"rmsnorm", NormKind::rmsnorm}};
constexpr EnumName<MlpKind> kMlps[] = {{"gelu", MlpKind::gelu}, {"swiglu", MlpKind::swiglu}};

}  // namespace

std::string_view model_family_name(ModelFamily family) {
  return platform::enum_name(family, kFamilies, "family");
}

std::string_view norm_kind_name(NormKind norm) {
  return platform::enum_name(norm, kNorms, "norm");
}

std::string_view mlp_kind_name(MlpKind mlp) {
  return platform::enum_name(mlp, kMlps, "mlp");
}

ModelFamily parse_model_family(std::string_view text) {
  return platform::parse_enum(text, kFamilies, "family", ChoiceList::sentence);
}

NormKind parse_norm_kind(std::string_view text) {
  return platform::parse_enum(text, kNorms, "norm", ChoiceList::sentence);
}

MlpKind parse_mlp_kind(std::string_view text) {
  return platform::parse_enum(text, kMlps, "mlp", ChoiceList::sentence);
}

}  // namespace vramlab
