/// \file
/// \brief The small language a lesson's claims file uses to read numbers out of the lesson's
/// `--json` and to judge them: selectors, arithmetic, comparisons and text templates.
///
/// - A **selector** picks one value out of the JSON: `/optimizers[name=adamw]/final_loss` walks
///   keys and, at an array, takes the first element whose fields equal every `key=value` in the
///   brackets (comma-separated, no spaces: a value is compared as written) (or the element at a
///   number: `/quantization/0/step`, `-1` the last). Alternatives separated by ` | ` are tried in
///   order: the first that resolves is the value.
/// - An **expression** combines named values with numbers: `+ - * /`, parentheses, `abs(x)`,
///   `min(x, y)`, `max(x, y)`, the comparisons `< <= > >= == !=` (1 or 0) and `&&`, `||`.
/// - A **template** is text with `{name}` or `{name:format}` holes; a format is a report::Unit's
///   name (`bytes`, `bytes_decimal`, `percent`, `signed_percent`, `per_param`, `count`,
///   `seconds`, ...), `.Nf` (N digits after the point) or `.Ne` (scientific, N digits after the
///   point: 5.96e-08).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vramlab::workbook {

/// An expression names a value that is not set: the run did not measure it (or a typo, which the
/// lesson's test of its claims catches: every claim of a default run is measured).
class UnknownName : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Named values: numbers or text, as the selectors found them.
using ClaimValues = std::map<std::string, nlohmann::json, std::less<>>;

/// \param document the lesson's JSON. \param selector one or more selectors joined by " | ".
/// \return the first value the selectors reach, or nothing when none resolves (the run did not
/// measure it). \throws std::invalid_argument for a malformed selector (naming it).
std::optional<nlohmann::json> select(const nlohmann::json& document, std::string_view selector);

/// \param expression an expression over \p values. \param values its names' values (numbers;
/// a bool is 1 or 0). \return its value. \throws UnknownName for a name not in \p values;
/// std::invalid_argument for a malformed expression or a name whose value is not a number.
double evaluate(std::string_view expression, const ClaimValues& values);

/// \param text a template. \param values its holes' values. \return the text with every hole
/// filled. \throws std::invalid_argument for an unknown name or format, or an unclosed hole.
std::string fill(std::string_view text, const ClaimValues& values);

}  // namespace vramlab::workbook
