// `vramlab claims`: every checkable claim of the five tutorial texts the lessons measure
// (lessons/claims-catalogue.json), with the verdict of our calculation, and, for a lesson that
// lists its claims as data (lessons/NN-name/claims.json), what its last run measured and the
// verdict computed from it (the run's JSON, saved by every lesson run as
// <build>/lesson-output/NN/lesson.json).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "common/report/terminal.h"
#include "common/report/text_wrap.h"
#include "common/report/typed_table.h"
#include "common/workbook/claims.h"
#include "common/workbook/lesson_main.h"
#include "tools/vramlab/commands.h"
#include "tools/vramlab/commands/workbook_cli.h"

namespace vramlab::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using report::Unit;

// One claim of the catalogue, with what the lessons say about it.
struct Row {
  int id = 0;
  std::string lesson, sources, claim, verdict, why;
  std::optional<std::string> measured_by;  // the command, or none: the lesson is still to come
  // measured | not_run | not_in_run | on_page | not_measured (the catalogue says why) | to_come
  std::string status;
  std::string measured;                    // what the run measured, or what to do to see it
  std::optional<workbook::ClaimResult> result;
};

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path.string());
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw UsageError(path.string() + " is not valid JSON: " + e.what());
  }
}

// The claims files of the workbook's lessons, by lesson id ("09").
std::map<std::string, std::vector<workbook::Claim>> lesson_claims(
    const workbook_cli::Context& ctx) {
  std::map<std::string, std::vector<workbook::Claim>> out;
  for (const workbook::Lesson& lesson : ctx.book.lessons) {
    const fs::path file = ctx.repo_root / lesson.dir / "claims.json";
    if (!fs::exists(file)) continue;
    try {
      out[lesson.id] = workbook::parse_claims(read_json(file), file.string());
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  return out;
}

const report::TypedColumns<Row>& row_columns() {
  static const report::TypedColumns<Row> columns = {
      {{"id", "#", Unit::integer}, [](const Row& r) { return r.id; }},
      {{"lesson", "lesson"}, [](const Row& r) { return r.lesson; }},
      {{"sources", "from"}, [](const Row& r) { return r.sources; }},
      {{"claim", "claim"}, [](const Row& r) { return r.claim; }},
      {{"verdict", "verdict"}, [](const Row& r) { return r.verdict; }},
      {{"why", ""}, [](const Row& r) { return r.why; }},
      {{"measured_by", ""},
       [](const Row& r) {
         return r.measured_by ? report::Value(*r.measured_by) : report::Value();
       }},
      {{"status", ""}, [](const Row& r) { return r.status; }},
      {{"measured", "measured here"}, [](const Row& r) { return r.measured; }},
      {{"run_verdict", "in the last run"},
       [](const Row& r) { return r.result ? report::Value(r.result->verdict) : report::Value(); }},
      {{"held", ""},
       [](const Row& r) {
         return r.result && r.result->held ? report::Value(*r.result->held) : report::Value();
       }},
  };
  return columns;
}

// The claims as a Markdown table: every lesson's for the docs page, or (without the lesson column)
// one lesson's for its own page, where tools/pages.py writes it from the lesson's run.
std::string markdown_table(const std::vector<Row>& rows, bool with_lesson) {
  std::vector<report::Field> fields = {{"", "#", Unit::integer}};
  if (with_lesson) fields.push_back({"", "lesson"});
  for (const char* header : {"from", "claim", "verdict", "why", "measured here", "in the run"})
    fields.push_back({"", header});
  report::TypedTable table(fields);
  for (const Row& r : rows) {
    std::vector<report::Value> cells = {r.id};
    if (with_lesson) cells.emplace_back(r.lesson);
    for (const std::string* text : {&r.sources, &r.claim, &r.verdict, &r.why, &r.measured})
      cells.emplace_back(*text);
    cells.push_back(r.result ? report::Value(r.result->verdict) : report::Value());
    table.add_row(cells);
  }
  return table.markdown();
}

// The docs page: docs/pages/claims.md is this, from lesson runs on meta (tests/cli/claims_page.py).
std::string markdown_page(const std::vector<Row>& rows, const json& sources,
                          const std::map<std::string, int>& counts) {
  std::string page =
      "# What the tutorials claim, measured\n\n"
      "Five widely read tutorials and course notes on training memory make " +
      std::to_string(rows.size()) +
      " claims that a calculation or a measurement can check. This page lists every one, with "
      "the verdict of a first-principles calculation (*correct*, *wrong*, *ambiguous*: right or "
      "wrong depending on an unstated assumption, *depends*: right only for some sizes), and "
      "the lesson that measures it. For a lesson that keeps its claims as data "
      "(`lessons/NN-name/claims.json`), *measured here* is what its run measured and *in the "
      "run* the verdict computed from that run's numbers. The texts are labelled by letter "
      "rather than named:\n\n";
  for (const auto& [letter, what] : sources.items())
    page += "- **" + letter + "**: " + what.get<std::string>() + "\n";
  page +=
      "\nThe same table, from your own runs: `build/bin/vramlab claims` (`--json` for "
      "scripts, `--lesson 09` for one lesson). This page comes from one-step runs, on the "
      "meta device where a lesson's claims allow it (`python3 tests/cli/claims_page.py --write . "
      "build/bin` regenerates it).\n\n";
  page += markdown_table(rows, /*with_lesson=*/true);
  const auto count = [&](const char* key) {
    const auto it = counts.find(key);
    return std::to_string(it == counts.end() ? 0 : it->second);
  };
  page += "\n" + count("measured") + " claims measured by a run, " + count("on_page") +
          " on a lesson's page, " + count("not_measured") + " that no run here can measure, " +
          count("to_come") + " for lessons to come.\n";
  return page;
}

struct Options {
  workbook_cli::CommonOptions common;
  bool markdown = false;   // the docs page instead of the terminal table
  std::string lesson;      // "" = every lesson
  std::string output_dir;  // "" = <build>/lesson-output
};

int run_claims(const Options& o) {
  const workbook_cli::Context ctx = workbook_cli::load_context(o.common);
  const json catalogue = read_json(ctx.repo_root / "lessons" / "claims-catalogue.json");
  const auto claims_files = lesson_claims(ctx);
  const fs::path outputs =
      o.output_dir.empty() ? ctx.build_dir / "lesson-output" : fs::path(o.output_dir);
  if (!o.lesson.empty()) {
    bool known = false;
    for (const json& c : catalogue.at("claims")) known = known || c.at("lesson") == o.lesson;
    if (!known) throw UsageError("--lesson: no claim belongs to lesson '" + o.lesson + "'");
  }

  // Each lesson's claims against its last run, by claim id.
  std::map<int, workbook::ClaimResult> measured;
  std::map<std::string, bool> has_run;
  for (const auto& [lesson, claims] : claims_files) {
    // With --lesson, --lesson-output may also be that lesson's own output folder (its --out-dir).
    const bool own_folder = o.lesson == lesson && fs::exists(outputs / workbook::kLessonRunFile);
    const fs::path run = own_folder ? outputs / workbook::kLessonRunFile
                                    : outputs / lesson / workbook::kLessonRunFile;
    has_run[lesson] = fs::exists(run);
    if (!has_run[lesson]) continue;
    try {
      for (workbook::ClaimResult& r : workbook::evaluate_claims(claims, read_json(run)))
        measured.emplace(r.id, std::move(r));
    } catch (const std::invalid_argument& e) {
      throw UsageError("lesson " + lesson + "'s claims: " + e.what());
    }
  }

  std::vector<Row> rows;
  std::map<std::string, int> counts;
  for (const json& c : catalogue.at("claims")) {
    Row r;
    r.id = c.at("id").get<int>();
    r.lesson = c.at("lesson").get<std::string>();
    if (!o.lesson.empty() && r.lesson != o.lesson) continue;
    for (const json& s : c.at("sources"))
      r.sources += (r.sources.empty() ? "" : ",") + s.get<std::string>();
    r.claim = c.at("claim").get<std::string>();
    r.verdict = c.at("verdict").get<std::string>();
    r.why = c.at("why").get<std::string>();
    if (c.at("measured_by").is_string()) r.measured_by = c["measured_by"].get<std::string>();
    const auto file = claims_files.find(r.lesson);
    bool listed = false;
    if (file != claims_files.end())
      for (const workbook::Claim& claim : file->second) listed = listed || claim.id == r.id;
    if (const auto m = measured.find(r.id); m != measured.end()) {
      r.status = "measured";
      r.measured = m->second.measured;
      r.result = m->second;
    } else if (listed) {
      r.status = has_run[r.lesson] ? "not_in_run" : "not_run";
      r.measured = (has_run[r.lesson] ? "not in the last run: " : "not run yet: ") +
                   r.measured_by.value_or("vramlab run " + r.lesson);
    } else if (c.contains("not_measured")) {
      r.status = "not_measured";
      r.measured = "not measured: " + c["not_measured"].get<std::string>();
    } else if (r.measured_by) {
      r.status = "on_page";
      r.measured = "on lesson " + r.lesson + "'s page";
    } else {
      r.status = "to_come";
      r.measured = "lesson " + r.lesson + ", to come";
    }
    ++counts[r.status];
    rows.push_back(std::move(r));
  }

  if (o.common.json) {
    json j;
    j["sources"] = catalogue.at("sources");
    j["claims"] = report::table_of(row_columns(), rows).json();
    j["counts"] = counts;
    std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return 0;
  }
  std::string sources;
  for (const auto& [letter, what] : catalogue.at("sources").items())
    sources += (sources.empty() ? "" : "; ") + letter + ": " + what.get<std::string>();
  if (o.markdown) {
    std::fputs((o.lesson.empty() ? markdown_page(rows, catalogue.at("sources"), counts)
                                 : markdown_table(rows, /*with_lesson=*/false))
                   .c_str(),
               stdout);
    return 0;
  }
  const bool colour = report::use_colour(stdout);
  std::string out = report::style::bold("What the tutorials claim, measured", colour) + "\n\n";
  out += report::wrap_note(
      std::to_string(rows.size()) + " claims of five widely read texts on training memory (" +
      sources +
      "). verdict: our first-principles calculation. measured here: what the lesson's last run "
      "measured, and the verdict computed from it (`vramlab run NN` saves the run).");
  out += "\n" + report::table_of(row_columns(), rows).render(colour);
  out += "\n" + std::to_string(counts["measured"]) + " measured by a saved run, " +
         std::to_string(counts["not_run"] + counts["not_in_run"]) + " waiting for a run, " +
         std::to_string(counts["on_page"]) + " on a lesson's page, " +
         std::to_string(counts["not_measured"]) + " that no run here can measure, " +
         std::to_string(counts["to_come"]) + " for lessons to come.\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void add_claims_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "claims",
      "Every checkable claim of the tutorials the lessons measure: our verdict, and what the "
      "lessons' last runs measured");
  workbook_cli::add_common_options(cmd, options->common);
  cmd->add_option("--lesson", options->lesson, "Only this lesson's claims (e.g. 09)");
  cmd->add_flag("--markdown", options->markdown,
                "The docs page (docs/pages/claims.md) instead; with --lesson, that lesson's "
                "table for its page");
  cmd->add_option("--lesson-output", options->output_dir,
                  "Where the lessons' output folders are (default: lesson-output in the build "
                  "directory); with --lesson, also that lesson's own output folder");
  cmd->callback([options, &exit_code] { exit_code = run_claims(*options); });
}

}  // namespace vramlab::cli
