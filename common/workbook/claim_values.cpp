// Selectors, expressions and templates of the claims files (see claim_values.h).
#include "common/workbook/claim_values.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/platform/errors.h"
#include "common/report/typed_table.h"

namespace vramlab::workbook {

namespace {

using nlohmann::json;

// A filter's wanted value matches a field when their text is the same: "mixed-bf16", "1", "true".
bool field_equals(const json& field, const std::string& wanted) {
  if (field.is_string()) return field.get<std::string>() == wanted;
  return field.dump() == wanted;
}

std::optional<json> select_one(const json& document, std::string_view selector) {
  if (selector.empty() || selector.front() != '/')
    throw std::invalid_argument("selector '" + std::string(selector) + "' must start with '/'");
  const json* at = &document;
  size_t i = 1;
  while (i <= selector.size()) {
    size_t end = i;
    int depth = 0;
    while (end < selector.size() && (depth > 0 || selector[end] != '/')) {
      if (selector[end] == '[') ++depth;
      if (selector[end] == ']') --depth;
      ++end;
    }
    const std::string_view segment = selector.substr(i, end - i);
    const size_t bracket = segment.find('[');
    const std::string key(segment.substr(0, bracket));
    if (!key.empty()) {
      if (at->is_object()) {
        const auto found = at->find(key);
        if (found == at->end()) return std::nullopt;
        at = &*found;
      } else if (at->is_array()) {
        int64_t index = 0;
        const auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
        if (ec != std::errc() || p != key.data() + key.size())
          throw std::invalid_argument("selector '" + std::string(selector) + "': '" + key +
                                      "' indexes an array");
        const auto size = static_cast<int64_t>(at->size());
        if (index < 0) index += size;  // -1: the last element
        if (index < 0 || index >= size) return std::nullopt;
        at = &(*at)[static_cast<size_t>(index)];
      } else {
        return std::nullopt;
      }
    }
    if (bracket != std::string_view::npos) {
      if (segment.back() != ']')
        throw std::invalid_argument("selector '" + std::string(selector) + "': unclosed '['");
      if (!at->is_array()) return std::nullopt;
      std::vector<std::pair<std::string, std::string>> wanted;
      std::string_view filters = segment.substr(bracket + 1, segment.size() - bracket - 2);
      while (!filters.empty()) {
        const size_t comma = filters.find(',');
        const std::string_view one = filters.substr(0, comma);
        const size_t equals = one.find('=');
        if (equals == std::string_view::npos)
          throw std::invalid_argument("selector '" + std::string(selector) + "': filter '" +
                                      std::string(one) + "' is not key=value");
        wanted.emplace_back(one.substr(0, equals), one.substr(equals + 1));
        filters = comma == std::string_view::npos ? std::string_view() : filters.substr(comma + 1);
      }
      const json* match = nullptr;
      for (const json& element : *at) {
        bool all = element.is_object();
        for (const auto& [k, v] : wanted)
          all = all && element.contains(k) && field_equals(element[k], v);
        if (all) {
          match = &element;
          break;
        }
      }
      if (!match) return std::nullopt;
      at = match;
    }
    i = end + 1;
  }
  if (at->is_null()) return std::nullopt;
  return *at;
}

// A recursive-descent reader of one expression.
class Parser {
 public:
  Parser(std::string_view text, const ClaimValues& values) : text_(text), values_(values) {}

  double parse() {
    const double v = logical();
    skip();
    if (at_ < text_.size()) fail("unexpected '" + std::string(text_.substr(at_)) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("expression '" + std::string(text_) + "': " + why);
  }
  void skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(std::string_view token) {
    skip();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }
  double logical() {
    double v = comparison();
    while (true) {
      if (take("&&")) {
        const double r = comparison();
        v = (v != 0.0 && r != 0.0) ? 1.0 : 0.0;
      } else if (take("||")) {
        const double r = comparison();
        v = (v != 0.0 || r != 0.0) ? 1.0 : 0.0;
      } else {
        return v;
      }
    }
  }
  double comparison() {
    const double v = sum();
    if (take("<=")) return v <= sum() ? 1.0 : 0.0;
    if (take(">=")) return v >= sum() ? 1.0 : 0.0;
    if (take("==")) return v == sum() ? 1.0 : 0.0;
    if (take("!=")) return v != sum() ? 1.0 : 0.0;
    if (take("<")) return v < sum() ? 1.0 : 0.0;
    if (take(">")) return v > sum() ? 1.0 : 0.0;
    return v;
  }
  double sum() {
    double v = product();
    while (true) {
      if (take("+"))
        v += product();
      else if (take("-"))
        v -= product();
      else
        return v;
    }
  }
  double product() {
    double v = unary();
    while (true) {
      if (take("*"))
        v *= unary();
      else if (take("/"))
        v /= unary();
      else
        return v;
    }
  }
  double unary() {
    if (take("-")) return -unary();
    if (take("(")) {
      const double v = logical();
      if (!take(")")) fail("missing ')'");
      return v;
    }
    skip();
    if (at_ < text_.size() &&
        (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.')) {
      double v = 0.0;
      const auto [p, ec] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), v);
      if (ec != std::errc()) fail("bad number");
      at_ = static_cast<size_t>(p - text_.data());
      return v;
    }
    const size_t start = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
      ++at_;
    const std::string name(text_.substr(start, at_ - start));
    if (name.empty()) fail("expected a number, a name or '('");
    if (name == "abs" || name == "min" || name == "max") {
      if (!take("(")) fail(name + " without '('");
      const double a = logical();
      double v = std::fabs(a);
      if (name != "abs") {
        if (!take(",")) fail(name + " takes two arguments");
        const double b = logical();
        v = name == "min" ? std::min(a, b) : std::max(a, b);
      }
      if (!take(")")) fail("missing ')' after " + name);
      return v;
    }
    const auto found = values_.find(name);
    if (found == values_.end())
      throw UnknownName("expression '" + std::string(text_) + "': unknown name '" + name + "'");
    const json& value = found->second;
    if (value.is_boolean()) return value.get<bool>() ? 1.0 : 0.0;
    if (!value.is_number()) fail("'" + name + "' is not a number");
    return value.get<double>();
  }

  std::string_view text_;
  const ClaimValues& values_;
  size_t at_ = 0;
};

report::Value value_of(const json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  return {};
}

}  // namespace

std::optional<json> select(const json& document, std::string_view selector) {
  while (!selector.empty()) {
    const size_t bar = selector.find(" | ");
    const std::string_view one = selector.substr(0, bar);
    if (std::optional<json> found = select_one(document, one)) return found;
    if (bar == std::string_view::npos) break;
    selector.remove_prefix(bar + 3);
  }
  return std::nullopt;
}

double evaluate(std::string_view expression, const ClaimValues& values) {
  return Parser(expression, values).parse();
}

std::string fill(std::string_view text, const ClaimValues& values) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('{', i);
    if (open == std::string_view::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    const size_t close = text.find('}', open);
    if (close == std::string_view::npos)
      throw std::invalid_argument("template '" + std::string(text) + "': unclosed '{'");
    const std::string_view hole = text.substr(open + 1, close - open - 1);
    const size_t colon = hole.find(':');
    const std::string name(hole.substr(0, colon));
    const std::string format =
        colon == std::string_view::npos ? "" : std::string(hole.substr(colon + 1));
    const auto found = values.find(name);
    if (found == values.end())
      throw std::invalid_argument("template '" + std::string(text) + "': unknown name '" + name +
                                  "'");
    const report::Value value = value_of(found->second);
    if (format.empty()) {
      out += value.format(report::Unit::text, -1);
    } else if (format.size() >= 3 && format.front() == '.' &&
               (format.back() == 'f' || format.back() == 'e')) {
      int digits = 0;
      const auto [p, ec] =
          std::from_chars(format.data() + 1, format.data() + format.size() - 1, digits);
      if (ec != std::errc() || p != format.data() + format.size() - 1 || digits > 12)
        throw std::invalid_argument("template '" + std::string(text) + "': bad format '" + format +
                                    "'");
      if (format.back() == 'f') {
        out += value.format(report::Unit::fixed, digits);
      } else if (found->second.is_number()) {
        char number[48];
        std::snprintf(number, sizeof number, "%.*e", digits, found->second.get<double>());
        out += number;
      } else {
        throw std::invalid_argument("template '" + std::string(text) + "': '" + name +
                                    "' is not a number, for format '" + format + "'");
      }
    } else {
      try {
        out += value.format(report::parse_unit(format), -1);
      } catch (const UsageError& e) {
        throw std::invalid_argument("template '" + std::string(text) + "': " + e.what());
      }
    }
    i = close + 1;
  }
  return out;
}

}  // namespace vramlab::workbook
