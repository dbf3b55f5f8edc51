/// \file
/// \brief Names for an enum from one table: parse a name (a bad one is a UsageError that lists
/// the choices), name a value, list the names (for a flag's help and CLI11's IsMember).
///
/// The table, `{"name", Enum::value}` pairs in the order the choices should be listed, is the
/// single place a spelling lives; the technique enums (common/plan/techniques.cpp) and the model
/// kinds (common/model/model_kinds.cpp) use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/platform/errors.h"

namespace vramlab::platform {

/// How the choices read in a bad-value message.
enum class ChoiceList {
  one_of,    ///< "expected one of: a, b, c"
  sentence,  ///< "expected a, b or c"
};

/// One entry of an enum's names table.
template <typename Enum>
using EnumName = std::pair<std::string_view, Enum>;

/// \param table the names in listing order. \param style how the list reads.
/// \return "a, b, c" or "a, b or c".
template <typename Enum, size_t N>
std::string enum_choices(const EnumName<Enum> (&table)[N], ChoiceList style) {
  std::string text;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) text += style == ChoiceList::sentence && i + 1 == N ? " or " : ", ";
    text += table[i].first;
  }
  return text;
}

/// \param table the names. \return the names, in order.
template <typename Enum, size_t N>
std::vector<std::string> enum_names(const EnumName<Enum> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.first);
  return names;
}

/// \param text a name. \param table the names. \param what the noun of the message ("optimizer").
/// \param style how the choices read. \return the value named \p text.
/// \throws vramlab::UsageError "unknown WHAT 'TEXT' (expected ...)".
template <typename Enum, size_t N>
Enum parse_enum(std::string_view text, const EnumName<Enum> (&table)[N], const char* what,
                ChoiceList style) {
  for (const auto& [name, value] : table)
    if (name == text) return value;
  throw UsageError(std::string("unknown ") + what + " '" + std::string(text) + "' (expected " +
                   (style == ChoiceList::one_of ? "one of: " : "") + enum_choices(table, style) +
                   ")");
}

/// \param value a value. \param table the names. \param what the noun of the message.
/// \return its name. \throws std::logic_error for a value the table lacks (a cast gone wrong).
template <typename Enum, size_t N>
std::string_view enum_name(Enum value, const EnumName<Enum> (&table)[N], const char* what) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  throw std::logic_error(std::string("invalid ") + what + " value " +
                         std::to_string(static_cast<int64_t>(value)));
}

}  // namespace vramlab::platform
