/// \file
/// \brief Reading the optional fields of a memory snapshot's JSON (one rule for the replay and
/// the timeline page: a missing or mistyped field reads as absent).
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

namespace vramlab::snapshot::detail {

/// The field \p key of \p object, or nullptr when \p object is not an object or lacks it.
const nlohmann::json* optional_field(const nlohmann::json& object, const char* key);

/// The field \p key as a non-negative integer (a float only when it is a whole number that fits
/// in 64 bits), or 0 when it is missing or is not such a number.
std::uint64_t optional_unsigned(const nlohmann::json& object, const char* key);

/// Sets \p out to \p value as a non-negative integer under the rule of optional_unsigned.
/// \returns false, leaving \p out alone, when \p value is not such a number.
bool to_unsigned(const nlohmann::json& value, std::uint64_t& out);

}  // namespace vramlab::snapshot::detail
