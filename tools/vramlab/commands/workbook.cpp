// The workbook commands: `vramlab list`, `check`, `hint`, `solution`, `reset` and `run` (watch and
// verify live in workbook_watch.cpp and workbook_verify.cpp). Every command takes --json and
// --build-dir; exercises/README.md describes the workbook loop.
//
//   build/bin/vramlab list                 every exercise: DONE / PENDING / NEEDS-GPU
//   build/bin/vramlab check 01.1           build and run your code's tests for exercise 01.1
//   build/bin/vramlab hint 01.1 --level 2  the second hint
//   build/bin/vramlab run 01 --mine -- …   lesson 01's binary built with your exercise code
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/platform/errors.h"
#include "common/platform/gpu_probe.h"
#include "common/platform/printable.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "common/workbook/process.h"
#include "tools/vramlab/commands.h"
#include "tools/vramlab/commands/function_bodies.h"
#include "tools/vramlab/commands/workbook_cli.h"

namespace vramlab::cli {

namespace {

using namespace workbook_cli;
using nlohmann::json;
namespace style = report::style;

bool gpu_available() {
  return platform::probe_gpus().status == platform::GpuStatus::available;
}

std::string status_of(const Context& ctx, const workbook::Exercise& ex, bool have_gpu) {
  if (ctx.state.is_done(ex.id)) return "DONE";
  if (ex.needs_gpu() && !have_gpu) return "NEEDS-GPU";
  return "PENDING";
}

void add_list(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<CommonOptions>();
  auto* cmd =
      app.add_subcommand("list", "every exercise: DONE / PENDING / NEEDS-GPU, with its file");
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    const Context ctx = load_context(*options);
    const bool have_gpu = gpu_available();
    const std::string current = ctx.state.current.empty() ? first_pending(ctx) : ctx.state.current;
    if (ctx.json) {
      json lessons = json::array();
      for (const auto& lesson : ctx.book.lessons) {
        json exercises = json::array();
        size_t done = 0;
        for (const auto& ex : lesson.exercises) {
          done += ctx.state.is_done(ex.id);
          exercises.push_back({{"id", ex.id},
                               {"title", ex.title},
                               {"status", status_of(ctx, ex, have_gpu)},
                               {"file", ex.stub},
                               {"current", ex.id == current}});
        }
        lessons.push_back({{"id", lesson.id},
                           {"title", lesson.title},
                           {"done", done},
                           {"total", lesson.exercises.size()},
                           {"exercises", exercises}});
      }
      print_json({{"lessons", lessons}, {"current", current}});
      exit_code = 0;
      return;
    }
    report::Table table({{""}, {"exercise"}, {"status"}, {"title"}, {"your file"}});
    for (const auto& lesson : ctx.book.lessons)
      for (const auto& ex : lesson.exercises) {
        const std::string status = status_of(ctx, ex, have_gpu);
        const report::RowStyle row = status == "DONE"      ? report::RowStyle::kGreen
                                     : status == "PENDING" ? report::RowStyle::kNormal
                                                           : report::RowStyle::kDim;
        table.add_row({ex.id == current ? ">" : "", ex.id, status, ex.title, ex.stub}, row);
      }
    std::string out = table.render(ctx.colour);
    for (const auto& lesson : ctx.book.lessons) out += progress_line(ctx, lesson) + "\n";
    if (!current.empty())
      out += style::bold("Next: ", ctx.colour) + "edit " + ctx.book.exercise(current).stub +
             ", then `vramlab check " + current + "` (or `vramlab watch`).\n";
    std::fputs(out.c_str(), stdout);
    exit_code = 0;
  });
}

void add_check(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string selector;
    bool all = false;
    bool reference = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check",
                                 "build and run an exercise's tests (ID like 01.1, a lesson like "
                                 "01, or --all; default: the current one)");
  cmd->add_option("target", options->selector, "exercise id (01.1) or lesson (01)");
  cmd->add_flag("--all", options->all, "every exercise");
  cmd->add_flag("--reference", options->reference,
                "check the reference solution instead of your code");
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    Context ctx = load_context(*options);
    if (options->all && !options->selector.empty())
      throw UsageError("give an exercise/lesson or --all, not both ('" + options->selector + "')");
    std::vector<const workbook::Exercise*> chosen;
    if (options->all) {
      chosen = ctx.book.all_exercises();
    } else if (!options->selector.empty()) {
      chosen = ctx.book.select(options->selector);
    } else {
      const std::string current =
          ctx.state.current.empty() ? first_pending(ctx) : ctx.state.current;
      if (current.empty())
        throw UsageError("every exercise is done; name one to re-check, e.g. `vramlab check 01.1`");
      chosen = {&ctx.book.exercise(current)};
    }
    require_configured_build(ctx);
    const bool have_gpu = gpu_available();
    json results = json::array();
    bool all_passed = true;
    std::vector<std::string> lessons_seen;
    for (const auto* ex : chosen) {
      if (ex->needs_gpu() && !have_gpu) {
        all_passed = false;
        if (ctx.json) {
          results.push_back({{"id", ex->id}, {"skipped", "needs a CUDA GPU"}, {"passed", false}});
        } else {
          std::printf(
              "%s  %s\n    NEEDS-GPU: this exercise needs a CUDA GPU and none is available here "
              "(skipped, not passed).\n",
              ex->id.c_str(), ex->title.c_str());
        }
        continue;
      }
      if (!ctx.json)
        std::fprintf(
            stderr, "building and running %s ...\n",
            (options->reference ? ex->reference_test_target() : ex->mine_test_target()).c_str());
      const CheckResult result = check_exercise(ctx, *ex, options->reference);
      record_check(ctx, result);
      all_passed = all_passed && result.passed;
      if (ctx.json) {
        results.push_back(check_json(result));
      } else {
        print_check(ctx, result);
      }
      if (std::find(lessons_seen.begin(), lessons_seen.end(), ex->lesson_id) == lessons_seen.end())
        lessons_seen.push_back(ex->lesson_id);
    }
    if (ctx.json) {
      json progress = json::object();
      for (const auto& id : lessons_seen) {
        const auto& lesson = ctx.book.lesson(id);
        size_t done = 0;
        for (const auto& ex : lesson.exercises) done += ctx.state.is_done(ex.id);
        progress[id] = {{"done", done}, {"total", lesson.exercises.size()}};
      }
      print_json({{"code", options->reference ? "reference" : "mine"},
                  {"passed", all_passed},
                  {"exercises", results},
                  {"progress", progress}});
    } else {
      for (const auto& id : lessons_seen)
        std::printf("%s\n", progress_line(ctx, ctx.book.lesson(id)).c_str());
    }
    exit_code = all_passed ? 0 : kExitFailure;
  });
}

void add_hint(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string id;
    std::optional<int> level;  // unset: the next hint not seen yet
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "hint", "the next hint for an exercise (three levels, gentle to explicit)");
  cmd->add_option("id", options->id, "exercise id, e.g. 01.1")->required();
  cmd->add_option("--level", options->level,
                  "hint level 1, 2 or 3 (default: the next one you have not seen)");
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    Context ctx = load_context(*options);
    const workbook::Exercise& ex = ctx.book.exercise(options->id);
    const int levels = static_cast<int>(ex.hints.size());
    if (levels == 0) throw UsageError("exercise " + ex.id + " has no hints");
    const int seen = ctx.state.hints_seen.count(ex.id) ? ctx.state.hints_seen.at(ex.id) : 0;
    const int level = options->level.value_or(std::min(levels, seen + 1));
    if (level < 1 || level > levels)
      throw UsageError("--level " + std::to_string(level) + " is out of range: exercise " + ex.id +
                       " has hint levels 1 to " + std::to_string(levels));
    ctx.state.hints_seen[ex.id] = std::max(seen, level);
    workbook::save_state(ctx.state_file, ctx.state);
    const std::string& text = ex.hints[static_cast<size_t>(level - 1)];
    if (ctx.json) {
      print_json({{"id", ex.id}, {"level", level}, {"levels", levels}, {"hint", text}});
    } else {
      std::string out = style::bold("Hint " + std::to_string(level) + "/" + std::to_string(levels) +
                                        " for " + ex.id + " (" + ex.title + "):",
                                    ctx.colour) +
                        "\n  " + text + "\n";
      if (level < levels)
        out += style::dim("More: vramlab hint " + ex.id + " --level " + std::to_string(level + 1),
                          ctx.colour) +
               "\n";
      else
        out +=
            style::dim("That was the last hint. After your code passes: vramlab solution " + ex.id,
                       ctx.colour) +
            "\n";
      std::fputs(out.c_str(), stdout);
    }
    exit_code = 0;
  });
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `diff -u` of two texts, labelled.
std::string diff_texts(const std::string& mine, const std::string& reference,
                       const std::string& mine_label, const std::string& reference_label) {
  const fs::path dir =
      fs::temp_directory_path() / ("vramlab-solution-diff-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "mine") << mine;
  std::ofstream(dir / "reference") << reference;
  workbook::run_process({"diff", "-u", "--label", mine_label, "--label", reference_label,
                         (dir / "mine").string(), (dir / "reference").string()},
                        dir / "out", 30.0);
  std::string text = read_text(dir / "out");
  fs::remove_all(dir);
  return text;
}

// The learner edits the bodies of the stub's functions, so those are what is compared, one
// function at a time; the reference's other functions (its helpers) are named, not diffed.
std::string function_diff(const Context& ctx, const workbook::Exercise& ex) {
  const auto mine = function_definitions(read_text(ctx.repo_root / ex.stub));
  const auto reference = function_definitions(read_text(ctx.repo_root / ex.reference));
  const auto find = [](const std::vector<FunctionDefinition>& in, const std::string& name) {
    return std::find_if(in.begin(), in.end(),
                        [&](const FunctionDefinition& f) { return f.name == name; });
  };
  std::string out;
  std::vector<std::string> only_mine, only_reference;
  for (const auto& f : mine) {
    const auto ref = find(reference, f.name);
    if (ref == reference.end()) {
      only_mine.push_back(f.name + "()");
      continue;
    }
    if (f.body == ref->body) {
      out += f.name + "(): the same as the reference\n";
      continue;
    }
    out += diff_texts(f.body, ref->body, "yours: " + ex.stub + ": " + f.name + "() body",
                      "reference: " + ex.reference + ": " + f.name + "() body");
  }
  for (const auto& f : reference)
    if (find(mine, f.name) == mine.end()) only_reference.push_back(f.name + "()");
  const auto join = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  if (!only_reference.empty())
    out += "The reference also defines " + join(only_reference) + " (helpers; `vramlab solution " +
           ex.id + "` shows the whole file).\n";
  if (!only_mine.empty()) out += "Your file also defines " + join(only_mine) + ".\n";
  return out;
}

// A known mistake of the exercise: its header, then the diff from the reference (a patch's own
// diff; a whole-file variant diffed here). 'list' names every mistake with its one line.
void show_mistake(const Context& ctx, const workbook::Exercise& ex, const std::string& name) {
  if (name == "list") {
    if (ctx.json) {
      json mistakes = json::array();
      for (const auto& w : ex.wrong)
        mistakes.push_back({{"name", w.name}, {"mistake", w.mistake}, {"caught_by", w.caught_by}});
      print_json({{"id", ex.id}, {"mistakes", mistakes}});
      return;
    }
    std::string out =
        style::bold("Known mistakes of " + ex.id + " (" + ex.title + "):", ctx.colour) + "\n";
    for (const auto& w : ex.wrong) out += "  " + w.name + ": " + w.mistake + "\n";
    out +=
        style::dim("One of them: vramlab solution " + ex.id + " --mistake NAME", ctx.colour) + "\n";
    std::fputs(out.c_str(), stdout);
    return;
  }
  const auto it = std::find_if(ex.wrong.begin(), ex.wrong.end(),
                               [&](const workbook::WrongVariant& w) { return w.name == name; });
  if (it == ex.wrong.end()) {
    std::string known;
    for (const auto& w : ex.wrong) known += (known.empty() ? "" : ", ") + w.name;
    throw UsageError("--mistake: exercise " + ex.id + " has no known mistake '" +
                     platform::printable(name) + "' (known: " + (known.empty() ? "none" : known) +
                     "; or 'list')");
  }
  const std::string text = read_text(ctx.repo_root / it->file);
  std::string diff;
  if (it->is_patch()) {
    const size_t start = text.starts_with("--- ") ? 0 : text.find("\n--- ");
    diff = start == std::string::npos ? "" : text.substr(start == 0 ? 0 : start + 1);
  } else {
    diff = diff_texts(read_text(ctx.repo_root / ex.reference), text, "reference: " + ex.reference,
                      "mistake " + it->name + ": " + it->file);
  }
  if (ctx.json) {
    print_json({{"id", ex.id},
                {"shown", true},
                {"mistake", it->name},
                {"what", it->mistake},
                {"caught_by", it->caught_by},
                {"file", it->file},
                {"diff", diff}});
    return;
  }
  std::string out =
      style::bold("Mistake " + it->name + " of " + ex.id + ":", ctx.colour) + " " + it->mistake +
      "\n" + "Caught by: " + it->caught_by + "\n" +
      style::dim("How its code differs from the reference (- reference, + mistake):", ctx.colour) +
      "\n" + diff;
  std::fputs(out.c_str(), stdout);
}

void add_solution(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string id;
    bool diff = false;
    bool reveal = false;
    std::string mistake;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "solution", "the reference solution, once your code passes (or with --reveal)");
  cmd->add_option("id", options->id, "exercise id, e.g. 01.1")->required();
  cmd->add_flag("--diff", options->diff,
                "show how the bodies of the functions you edit differ from the reference's");
  cmd->add_option("--mistake", options->mistake,
                  "show one known mistake (a name, or 'list' for all): what it is, the test "
                  "that catches it, and how its code differs from the reference");
  cmd->add_flag("--reveal", options->reveal, "show it even though your code does not pass yet");
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    const Context ctx = load_context(*options);
    const workbook::Exercise& ex = ctx.book.exercise(options->id);
    if (!ctx.state.is_done(ex.id) && !options->reveal) {
      const std::string message =
          "exercise " + ex.id + " is not done yet: the reference is shown once `vramlab check " +
          ex.id + "` passes. To see it anyway: vramlab solution " + ex.id + " --reveal";
      if (ctx.json)
        print_json({{"id", ex.id}, {"shown", false}, {"reason", message}});
      else
        std::printf("%s\n", message.c_str());
      exit_code = kExitFailure;
      return;
    }
    if (!options->mistake.empty()) {
      show_mistake(ctx, ex, options->mistake);
      exit_code = 0;
      return;
    }
    std::string text;
    if (options->diff) {
      text = function_diff(ctx, ex);
    } else {
      text = read_text(ctx.repo_root / ex.reference);
    }
    if (ctx.json) {
      print_json({{"id", ex.id},
                  {"shown", true},
                  {"file", ex.reference},
                  {options->diff ? "diff" : "text", text}});
    } else {
      std::printf(
          "%s\n%s",
          style::bold("Reference for " + ex.id + " (" + ex.reference + "):", ctx.colour).c_str(),
          text.c_str());
    }
    exit_code = 0;
  });
}

void add_reset(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string selector;
    bool all = false;
    bool yes = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "reset", "restore the pristine stub of an exercise (ID), a lesson, or --all");
  cmd->add_option("target", options->selector, "exercise id (01.1) or lesson (01)");
  cmd->add_flag("--all", options->all, "every exercise");
  cmd->add_flag("--yes,-y", options->yes, "do not ask for confirmation");
  add_common_options(cmd, *options);
  cmd->callback([options, &exit_code] {
    Context ctx = load_context(*options);
    if (options->all == !options->selector.empty())
      throw UsageError("reset needs one exercise (01.1), one lesson (01) or --all");
    const auto chosen =
        options->all ? ctx.book.all_exercises() : ctx.book.select(options->selector);
    if (!options->yes) {
      if (!isatty(STDIN_FILENO))
        throw UsageError(
            "reset discards your code and needs confirmation: run it in a terminal, or add --yes");
      std::printf("This restores the original stub of:\n");
      for (const auto* ex : chosen) std::printf("  %s  %s\n", ex->id.c_str(), ex->stub.c_str());
      std::printf("Your changes to these files will be lost. Continue? [y/N] ");
      std::fflush(stdout);
      std::string answer;
      std::getline(std::cin, answer);
      if (answer != "y" && answer != "Y" && answer != "yes") {
        std::printf("Nothing was changed.\n");
        exit_code = kExitFailure;
        return;
      }
    }
    json reset = json::array();
    for (const auto* ex : chosen) {
      const fs::path out =
          fs::temp_directory_path() / ("vramlab-reset-" + std::to_string(getpid()) + ".cpp");
      const auto result = workbook::run_process(
          {"git", "-C", ctx.repo_root.string(), "show", "HEAD:" + ex->stub}, out, 60.0);
      if (!result.succeeded()) {
        fs::remove(out);
        throw std::runtime_error("cannot read the pristine " + ex->stub + " from git (" +
                                 result.describe() + ")");
      }
      fs::copy_file(out, ctx.repo_root / ex->stub, fs::copy_options::overwrite_existing);
      fs::remove(out);
      ctx.state.done.erase(ex->id);
      reset.push_back(ex->id);
      if (!ctx.json) std::printf("reset %s (%s)\n", ex->id.c_str(), ex->stub.c_str());
    }
    ctx.state.current = first_pending(ctx);
    workbook::save_state(ctx.state_file, ctx.state);
    if (ctx.json) print_json({{"reset", reset}});
    exit_code = 0;
  });
}

void add_run(CLI::App& app, int& exit_code) {
  struct Options : CommonOptions {
    std::string lesson;
    bool mine = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "run",
      "build and run a lesson's binary: vramlab run 01 [--mine] [the lesson's flags, e.g. --model "
      "gpt2-1.5b --device meta; `--` before them is optional]");
  cmd->add_option("lesson", options->lesson, "lesson id, e.g. 01")->required();
  cmd->add_flag("--mine", options->mine, "use your exercise code instead of the references");
  add_common_options(cmd, *options);
  // Every flag `run` does not know, with its value, belongs to the lesson binary, which checks
  // it (exit 2 there).
  cmd->allow_extras();
  cmd->callback([options, cmd, &exit_code] {
    const Context ctx = load_context(*options);
    const workbook::Lesson& lesson = ctx.book.lesson(options->lesson);
    if (lesson.binary.empty())
      throw UsageError("lesson " + lesson.id + " has no binary in its manifest");
    const std::string target = lesson.binary + (options->mine ? "_mine" : "");
    // A build directory that is no build is bad input: said in one line, before the progress line.
    require_configured_build(ctx);
    std::string errors;
    std::fprintf(stderr, "building %s ...\n", target.c_str());
    if (!build_targets(ctx, {target}, target, errors)) {
      const bool unknown = errors.find("unknown target") != std::string::npos ||
                           errors.find("No rule to make target") != std::string::npos;
      if (unknown) {
        std::fprintf(stderr,
                     "vramlab: lesson %s's binary (%s) is not part of this checkout's build yet "
                     "(no target '%s' in %s).\n",
                     lesson.id.c_str(), lesson.binary.c_str(), target.c_str(),
                     platform::printable(ctx.build_dir.string()).c_str());
      } else {
        std::fprintf(stderr, "vramlab: building %s failed:\n%s", target.c_str(), errors.c_str());
      }
      exit_code = kExitFailure;
      return;
    }
    // Whose code runs decides what the numbers mean: say it before the lesson's own header (on
    // stderr under --json, which keeps stdout one JSON object).
    std::string files;
    for (const auto& ex : lesson.exercises) files += (files.empty() ? "" : ", ") + ex.stub;
    const std::string whose =
        options->mine ? style::yellow("YOUR CODE", ctx.colour) + ": lesson " + lesson.id +
                            " runs with your exercise files " + files +
                            " (an exercise not done yet shows as NOT IMPLEMENTED in the report)"
                      : style::cyan("REFERENCE", ctx.colour) + ": lesson " + lesson.id +
                            " runs with the reference solutions; `vramlab run " + lesson.id +
                            " --mine` runs your " + files;
    std::fprintf(ctx.json ? stderr : stdout, "%s\n", whose.c_str());
    const fs::path binary = ctx.build_dir / "bin" / target;
    std::vector<std::string> args = {binary.string()};
    for (const std::string& extra : cmd->remaining())
      if (extra != "--") args.push_back(extra);
    if (ctx.json) args.push_back("--json");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execv(binary.c_str(), argv.data());
    throw std::runtime_error("cannot run " + binary.string() + ": " + std::strerror(errno));
  });
}

}  // namespace

void add_workbook_commands(CLI::App& app, int& exit_code) {
  add_list(app, exit_code);
  add_check(app, exit_code);
  add_hint(app, exit_code);
  add_solution(app, exit_code);
  add_reset(app, exit_code);
  workbook_cli::add_watch_command(app, exit_code);
  add_run(app, exit_code);
  workbook_cli::add_verify_command(app, exit_code);
}

}  // namespace vramlab::cli
