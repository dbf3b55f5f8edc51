// `vramlab verify`: what CI runs (.ci/run) to prove every exercise is real. It fails (exit 1)
// unless every reference passes its tests, every stub fails every one of its tests with the NOT
// IMPLEMENTED message, every known-wrong variant's patch still applies to its reference and the
// variant fails the test its header names (a crash or a timeout is a failure of verify), and
// every exercise has three hints, tests and its doc snippets; `--docs` also builds the Doxygen
// docs, whose warnings are errors.
//
// The test binaries run --jobs at a time (default: one per core); a wrong variant runs only the
// test meant to catch it.
//
//   build/bin/vramlab verify [ID|LESSON] [--docs] [--timeout 120] [--jobs N] [--json]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "common/platform/errors.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/workbook/verify_rules.h"
#include "tools/vramlab/commands/workbook_cli.h"

namespace vramlab::cli::workbook_cli {

namespace {

using nlohmann::json;
namespace style = report::style;

struct Finding {
  std::string exercise;
  std::string check;  // "files", "reference", "stub", "wrong:<name>", "docs", "build"
  std::vector<std::string> problems;
};

}  // namespace

void add_verify_command(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string selector;
    bool docs = false;
    double timeout_seconds = 120.0;
    int jobs = 0;  // 0: one per core
  };
  auto options = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("verify",
                         "CI: every reference passes, every stub fails with NOT IMPLEMENTED, every "
                         "known-wrong variant is caught, hints/tests/snippets exist");
  cmd->add_option("target", options->selector, "only this exercise (01.1) or lesson (01)");
  cmd->add_flag("--docs", options->docs,
                "also build the docs target (Doxygen, warnings are errors)");
  cmd->add_option("--timeout", options->timeout_seconds, "seconds each test binary may run")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", options->jobs, "test binaries run at once (default: one per core)")
      ->check(CLI::Range(1, 64));
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    const Context ctx = load_context(*options);
    const auto chosen =
        options->selector.empty() ? ctx.book.all_exercises() : ctx.book.select(options->selector);
    // A build directory that is no build is bad input: said in one line, before any progress.
    require_configured_build(ctx);
    std::vector<Finding> findings;

    std::vector<std::string> targets;
    const fs::path work = ctx.build_dir / "workbook" / "verify";
    // A patch that no longer applies is its variant's finding; the variant is not built (its
    // build would fail, and with it every other target of the one build command).
    std::vector<std::pair<const workbook::Exercise*, const workbook::WrongVariant*>> unapplied;
    for (const auto* ex : chosen) {
      findings.push_back({ex->id, "files", workbook::exercise_file_problems(*ex, ctx.repo_root)});
      targets.push_back(ex->reference_test_target());
      targets.push_back(ex->mine_test_target());
      for (const auto& w : ex->wrong) {
        auto problems = workbook::wrong_patch_problems(*ex, w, ctx.repo_root, work);
        if (problems.empty()) {
          targets.push_back(ex->wrong_test_target(w.name));
        } else {
          findings.push_back({ex->id, "patch:" + w.name, std::move(problems)});
          unapplied.emplace_back(ex, &w);
        }
      }
    }
    if (!targets.empty()) {
      std::fprintf(stderr, "verify: building %zu test binaries ...\n", targets.size());
      std::string errors;
      if (!build_targets(ctx, targets, "verify", errors)) {
        findings.push_back(
            {"*", "build", {"building the exercise test binaries failed:\n" + errors}});
      } else {
        // One job per test binary; each writes its own finding, so the table keeps its order.
        struct Job {
          const workbook::Exercise* exercise;
          std::string check;  // "reference", "stub", "wrong:<name>"
          std::string target;
          const workbook::WrongVariant* variant = nullptr;
        };
        std::vector<Job> jobs;
        for (const auto* ex : chosen) {
          jobs.push_back({ex, "reference", ex->reference_test_target()});
          jobs.push_back({ex, "stub", ex->mine_test_target()});
          for (const auto& w : ex->wrong)
            if (std::find(unapplied.begin(), unapplied.end(), std::pair{ex, &w}) == unapplied.end())
              jobs.push_back({ex, "wrong:" + w.name, ex->wrong_test_target(w.name), &w});
        }
        std::vector<Finding> ran(jobs.size());
        std::atomic<size_t> next{0};
        std::mutex progress;
        size_t done = 0;
        const auto worker = [&] {
          for (size_t i = next++; i < jobs.size(); i = next++) {
            const Job& job = jobs[i];
            workbook::TestRun run;
            std::vector<std::string> problems;
            try {  // a thread must not let an exception out: it becomes this job's finding
              // GoogleTest's filter would read a ':' or '-' in the name as its own syntax.
              const bool named = job.variant != nullptr && !job.variant->caught_by.empty() &&
                                 job.variant->caught_by.find_first_of(":-") == std::string::npos;
              run = workbook::run_test_binary(test_binary(ctx, job.target),
                                              job.variant == nullptr
                                                  ? job.exercise->test_filter
                                                  : (named ? job.variant->caught_by : "-*"),
                                              work, options->timeout_seconds);
              problems =
                  job.variant != nullptr     ? workbook::wrong_variant_problems(run, *job.variant)
                  : job.check == "reference" ? workbook::reference_problems(run)
                                             : workbook::stub_problems(run, job.exercise->id);
            } catch (const std::exception& e) {
              problems = {job.target + " could not be run: " + e.what()};
            }
            ran[i] = {job.exercise->id, job.check, std::move(problems)};
            const std::lock_guard<std::mutex> lock(progress);
            std::fprintf(stderr, "verify: [%zu/%zu] %s %s (%.1f s)\n", ++done, jobs.size(),
                         job.exercise->id.c_str(), job.check.c_str(), run.seconds);
          }
        };
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        const size_t workers =
            std::min(jobs.size(), static_cast<size_t>(options->jobs > 0 ? options->jobs : cores));
        std::vector<std::thread> threads;
        try {
          for (size_t w = 1; w < workers; ++w) threads.emplace_back(worker);
        } catch (const std::system_error&) {
          // No more threads to be had: the ones started and this one share the jobs.
        }
        worker();
        for (auto& t : threads) t.join();
        // The table lists each exercise's files check, its test runs, then any patch of it that no
        // longer applies.
        std::vector<Finding> ordered;
        size_t j = 0;
        for (const auto& f : findings) {
          ordered.push_back(f);
          while (j < jobs.size() && jobs[j].exercise->id == f.exercise) ordered.push_back(ran[j++]);
        }
        findings = std::move(ordered);
      }
    }
    if (options->docs) {
      std::fprintf(stderr, "verify: building the docs ...\n");
      std::string errors;
      Finding docs{"*", "docs", {}};
      if (!build_targets(ctx, {"docs"}, "docs", errors))
        docs.problems.push_back("the docs build failed:\n" + errors);
      findings.push_back(docs);
    }

    size_t failed = 0;
    for (const auto& f : findings) failed += f.problems.empty() ? 0 : 1;
    if (ctx.json) {
      json checks = json::array();
      for (const auto& f : findings)
        checks.push_back({{"exercise", f.exercise},
                          {"check", f.check},
                          {"ok", f.problems.empty()},
                          {"problems", f.problems}});
      print_json({{"ok", failed == 0}, {"checks", checks}, {"exercises", chosen.size()}});
    } else {
      report::Table table({{"exercise"}, {"check"}, {"result"}, {"problem"}});
      for (const auto& f : findings) {
        if (f.problems.empty()) {
          table.add_row({f.exercise, f.check, "ok", ""}, report::RowStyle::kNormal);
        } else {
          for (size_t i = 0; i < f.problems.size(); ++i) {
            std::string first_line = f.problems[i].substr(0, f.problems[i].find('\n'));
            if (first_line.size() > 160) first_line = first_line.substr(0, 157) + "...";
            table.add_row({i == 0 ? f.exercise : "", i == 0 ? f.check : "", "FAIL", first_line},
                          report::RowStyle::kRed);
          }
        }
      }
      std::string out = table.render(ctx.colour);
      for (const auto& f : findings)
        for (const auto& p : f.problems)
          if (p.find('\n') != std::string::npos)
            out += "\n" + f.exercise + " " + f.check + ":\n" + p + "\n";
      out += failed == 0
                 ? style::green("verify: " + std::to_string(chosen.size()) + " exercises, " +
                                    std::to_string(findings.size()) + " checks, all hold",
                                ctx.colour)
                 : style::red("verify: " + std::to_string(failed) + " of " +
                                  std::to_string(findings.size()) + " checks failed",
                              ctx.colour);
      std::fputs((out + "\n").c_str(), stdout);
    }
    exit_code = failed == 0 ? 0 : kExitFailure;
  });
}

}  // namespace vramlab::cli::workbook_cli
