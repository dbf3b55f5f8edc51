// Claims files: parsing, evaluation against a run, and the claims table (see claims.h).
#include "common/workbook/claims.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "common/workbook/claim_values.h"

namespace vramlab::workbook {

namespace {

using nlohmann::json;

std::vector<std::pair<std::string, std::string>> named_texts(const json& claim, const char* key,
                                                             const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!claim.contains(key)) return out;
  if (!claim[key].is_object())
    throw std::invalid_argument(where + ": '" + key + "' is not an object");
  for (const auto& [name, text] : claim[key].items()) {
    if (!text.is_string())
      throw std::invalid_argument(where + ": " + key + "." + name + " is not a string");
    out.emplace_back(name, text.get<std::string>());
  }
  return out;
}

std::string text_field(const json& claim, const char* key, const std::string& where) {
  if (!claim.contains(key)) return "";
  if (!claim[key].is_string()) throw std::invalid_argument(where + ": '" + key + "' is not text");
  return claim[key].get<std::string>();
}

// Whether every {name} of a template is set.
bool fillable(std::string_view text, const ClaimValues& values) {
  size_t at = 0;
  while ((at = text.find('{', at)) != std::string_view::npos) {
    const size_t close = text.find('}', at);
    if (close == std::string_view::npos) return true;  // fill() names the error
    const std::string_view hole = text.substr(at + 1, close - at - 1);
    if (!values.contains(hole.substr(0, hole.find(':')))) return false;
    at = close + 1;
  }
  return true;
}

// An expression over values of which some may be unset (not measured by this run): its value, or
// nothing when it names an unset value. Any other error is the file's and propagates.
std::optional<double> evaluate_if_set(const std::string& expression, const ClaimValues& values) {
  try {
    return evaluate(expression, values);
  } catch (const UnknownName&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<Claim> parse_claims(const json& file, std::string_view where) {
  const std::string name(where);
  if (!file.is_object() || !file.contains("claims") || !file["claims"].is_array())
    throw std::invalid_argument(name + ": expected an object with a \"claims\" array");
  std::vector<Claim> claims;
  std::set<int> ids;
  for (const json& c : file["claims"]) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_number_integer())
      throw std::invalid_argument(name + ": a claim without an integer \"id\"");
    Claim claim;
    claim.id = c["id"].get<int>();
    const std::string at = name + ", claim " + std::to_string(claim.id);
    if (!ids.insert(claim.id).second)
      throw std::invalid_argument(at + ": a second claim of this id");
    claim.claim = text_field(c, "claim", at);
    if (claim.claim.empty()) throw std::invalid_argument(at + ": no \"claim\" text");
    claim.values = named_texts(c, "values", at);
    claim.derived = named_texts(c, "derived", at);
    if (c.contains("measured") && c["measured"].is_string()) {
      claim.measured = {c["measured"].get<std::string>()};
    } else if (c.contains("measured") && c["measured"].is_array()) {
      for (const json& t : c["measured"]) {
        if (!t.is_string())
          throw std::invalid_argument(at + ": a \"measured\" template is not text");
        claim.measured.push_back(t.get<std::string>());
      }
    }
    if (claim.measured.empty()) throw std::invalid_argument(at + ": no \"measured\" template");
    claim.holds_if = text_field(c, "holds_if", at);
    claim.holds = text_field(c, "holds", at);
    claim.fails = text_field(c, "fails", at);
    claim.verdict = text_field(c, "verdict", at);
    const bool rule = !claim.holds_if.empty();
    if (rule == !claim.verdict.empty())
      throw std::invalid_argument(at +
                                  ": give either \"holds_if\" (with \"holds\" and \"fails\") "
                                  "or a fixed \"verdict\"");
    if (rule && (claim.holds.empty() || claim.fails.empty()))
      throw std::invalid_argument(at + ": a rule needs both \"holds\" and \"fails\" wording");
    claims.push_back(std::move(claim));
  }
  return claims;
}

std::vector<ClaimResult> evaluate_claims(const std::vector<Claim>& claims, const json& run) {
  std::vector<ClaimResult> results;
  for (const Claim& c : claims) {
    try {
      ClaimValues values;
      for (const auto& [name, selector] : c.values)
        if (std::optional<json> v = select(run, selector)) values[name] = std::move(*v);
      // A derived name may use another: JSON objects keep no order, so evaluate in passes until
      // one sets nothing new (what is left names a value this run did not measure).
      std::vector<const std::pair<std::string, std::string>*> pending;
      for (const auto& d : c.derived) pending.push_back(&d);
      for (size_t before = pending.size() + 1; pending.size() < before;) {
        before = pending.size();
        std::erase_if(pending, [&](const std::pair<std::string, std::string>* d) {
          const std::optional<double> v = evaluate_if_set(d->second, values);
          if (v) values[d->first] = *v;
          return v.has_value();
        });
      }
      const auto usable = std::find_if(c.measured.begin(), c.measured.end(),
                                       [&](const std::string& t) { return fillable(t, values); });
      if (usable == c.measured.end()) continue;
      ClaimResult r{c.id, c.claim, fill(*usable, values), c.verdict, std::nullopt};
      if (!c.holds_if.empty()) {
        const std::optional<double> outcome = evaluate_if_set(c.holds_if, values);
        if (!outcome) continue;
        r.held = *outcome != 0.0;
        r.verdict = fill(*r.held ? c.holds : c.fails, values);
      }
      results.push_back(std::move(r));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("claim " + std::to_string(c.id) + ": " + e.what());
    }
  }
  return results;
}

std::vector<ClaimResult> evaluate_claims(std::string_view claims_file, std::string_view where,
                                         const json& run) {
  const json file = json::parse(claims_file, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded()) throw std::invalid_argument(std::string(where) + " is not valid JSON");
  return evaluate_claims(parse_claims(file, where), run);
}

const report::TypedColumns<ClaimResult>& claim_columns() {
  using report::Unit;
  using C = ClaimResult;
  static const report::TypedColumns<ClaimResult> columns = {
      {{"id", "#", Unit::integer}, [](const C& c) { return c.id; }},
      {{"claim", "claim"}, [](const C& c) { return c.claim; }},
      {{"measured", "measured here"}, [](const C& c) { return c.measured; }},
      {{"verdict", "verdict"}, [](const C& c) { return c.verdict; }},
  };
  return columns;
}

}  // namespace vramlab::workbook
