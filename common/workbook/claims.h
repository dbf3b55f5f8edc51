/// \file
/// \brief Claims as data. A lesson lists the published claims it measures in one file,
/// `lessons/NN-name/claims.json`; one evaluator reads each claim's numbers out of the lesson's
/// `--json`, fills in what was measured and computes the verdict, and one list of columns prints
/// them in the terminal, in JSON and in Markdown.
///
/// The file: `{"lesson": "09", "claims": [CLAIM, ...]}`, each CLAIM an object with
/// - `id` (the claim's number in the project's list of the source texts' claims) and `claim` (what
///   it says, short);
/// - `values`: names for selectors into the lesson's JSON (claim_values.h); a selector that
///   reaches nothing leaves its name unset;
/// - `derived` (optional): names for expressions over the values and over each other;
/// - `measured`: a template, or a list of templates of which the first whose names are all set
///   is used;
/// - either `holds_if` (an expression: non-zero means the claim holds), `holds` and `fails` (the
///   verdict's wording for each outcome, templates too), or a fixed `verdict` for a claim the run
///   illustrates but cannot judge (e.g. where a cost is, not how large).
///
/// A claim whose template or rule names an unset value was not measured by this run (a lesson run
/// without its large models, say) and is left out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/typed_table.h"

namespace vramlab::workbook {

/// One claim, as its file states it.
struct Claim {
  int id = 0;                                                ///< its number.
  std::string claim;                                         ///< what it says.
  std::vector<std::pair<std::string, std::string>> values;   ///< name, selector.
  std::vector<std::pair<std::string, std::string>> derived;  ///< name, expression.
  std::vector<std::string> measured;                         ///< templates, first usable wins.
  std::string holds_if;  ///< the rule ("" with a fixed verdict).
  std::string holds;     ///< the verdict when the rule holds.
  std::string fails;     ///< the verdict when it does not.
  std::string verdict;   ///< a fixed verdict ("" with a rule).
};

/// One claim against one run.
struct ClaimResult {
  int id = 0;                ///< the claim's number.
  std::string claim;         ///< what it says.
  std::string measured;      ///< the filled template.
  std::string verdict;       ///< holds / fails wording, or the fixed verdict.
  std::optional<bool> held;  ///< the rule's outcome; nothing for a fixed verdict.
};

/// \param file a claims file's JSON. \param where its name, for errors.
/// \return its claims, in order. \throws std::invalid_argument naming \p where and the claim for
/// a missing or mistyped field, a duplicate id, or both or neither of a rule and a fixed verdict.
std::vector<Claim> parse_claims(const nlohmann::json& file, std::string_view where);

/// \param claims a lesson's claims. \param run the lesson's --json. \return the claims this run
/// measured, in order. \throws std::invalid_argument for a malformed selector, expression or
/// template (naming the claim).
std::vector<ClaimResult> evaluate_claims(const std::vector<Claim>& claims,
                                         const nlohmann::json& run);

/// A lesson's claims file as its binary embeds it (vramlab_embed_files), against one run.
/// \param claims_file the file's text. \param where its name, for errors. \param run the
/// lesson's --json. \return the claims this run measured, in order. \throws std::invalid_argument
/// as parse_claims() and evaluate_claims() do, and for text that is not JSON.
std::vector<ClaimResult> evaluate_claims(std::string_view claims_file, std::string_view where,
                                         const nlohmann::json& run);

/// \return the columns of a claims table: "#" (id), "claim", "measured here" (measured),
/// "verdict", each under the same key in JSON.
const report::TypedColumns<ClaimResult>& claim_columns();

}  // namespace vramlab::workbook
