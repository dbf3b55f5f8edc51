// vramlab: the command-line front door of the workbook.
//
//   build/bin/vramlab --help            every subcommand
//   build/bin/vramlab doctor            what this machine can run
//
// Exit codes: 0 success, 1 a run-time failure (e.g. an out-of-memory during a replay), 2 bad input.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"
#include "common/workbook/lesson_binary.h"
#include "tools/vramlab/commands.h"

namespace {

// Option groups are subcommands without a name.
const auto kNamed = [](const CLI::App* sub) { return !sub->get_name().empty(); };

// One line for an error: CLI11's and ours may end in a newline, and a value the user typed may hold
// control characters that must not reach the terminal raw.
std::string one_line(std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.remove_suffix(1);
  return vramlab::platform::printable(message);
}

// The word in the command's place when it names no command ("" otherwise). CLI11 would report it
// as "A subcommand is required" or an unexpected argument, which does not say what was wrong.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const std::string word = argv[1];
  if (word.empty() || word.front() == '-') return "";
  for (const CLI::App* sub : app.get_subcommands(kNamed))
    if (sub->check_name(word)) return "";
  return word;
}

// A run-time failure may span lines (PyTorch's out-of-memory message does); only its other control
// characters are escaped.
std::string lines_of(std::string_view message) {
  while (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  std::string out;
  for (size_t start = 0; start <= message.size();) {
    const size_t end = std::min(message.find('\n', start), message.size());
    if (start > 0) out += '\n';
    out += vramlab::platform::printable(message.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// CLI11 checks for a missing required argument before it checks for words it could not place, so
// `vramlab alloc -x` (or a value such as -inf where the trace goes) would be told "trace is
// required" without a word about the -x it typed. The first such word of the command run, and
// whether that command passes such words on (`run` gives them to the lesson); "" when none.
struct UnplacedWord {
  std::string word;
  bool passed_on = false;
};

UnplacedWord unplaced_word(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (!sub->remaining().empty()) return {sub->remaining().front(), sub->get_allow_extras()};
  return {app.remaining().empty() ? "" : app.remaining().front(), false};
}

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands(kNamed))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// `vramlab run NN -- FLAGS`: the `--` is optional, and CLI11 would hand what follows it to vramlab
// itself as positionals instead of to the lesson; `run` passes every flag it does not know on.
std::vector<char*> without_run_separator(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 2 && std::string_view(args[1]) == "run")
    for (auto it = args.begin() + 2; it != args.end(); ++it)
      if (std::string_view(*it) == "--") {
        args.erase(it);
        break;
      }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  vramlab::platform::select_blas_core_or_reexec(argc, argv);

  CLI::App app{
      "vramlab: learn why deep-learning training runs out of GPU memory, and how to fix it.",
      "vramlab"};
  app.set_version_flag("--version", std::string("vramlab ") + vramlab::build_info::kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  int exit_code = 0;
  vramlab::cli::add_doctor_command(app, exit_code);
  vramlab::cli::add_formats_command(app, exit_code);
  vramlab::cli::add_alloc_command(app, exit_code);
  vramlab::cli::add_estimate_command(app, exit_code);
  vramlab::cli::add_train_command(app, exit_code);
  vramlab::cli::add_maxbatch_command(app, exit_code);
  vramlab::cli::add_plan_command(app, exit_code);
  vramlab::cli::add_diagnose_command(app, exit_code);
  vramlab::cli::add_profile_command(app, exit_code);
  vramlab::cli::add_workbook_commands(app, exit_code);
  vramlab::cli::add_claims_command(app, exit_code);

  if (const std::string word = unknown_command(app, argc, argv); !word.empty()) {
    std::fprintf(stderr, "vramlab: error: unknown command '%s' (commands: %s)\n",
                 vramlab::platform::printable(word).c_str(), command_names(app).c_str());
    return vramlab::kExitUsage;
  }
  try {
    vramlab::workbook::reject_out_of_range_integers(app);
    std::vector<char*> args = without_run_separator(argc, argv);
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const CLI::RequiredError& e) {
    const UnplacedWord unplaced = unplaced_word(app);
    const std::string word = vramlab::platform::printable(unplaced.word);
    if (unplaced.word.empty())
      std::fprintf(stderr, "vramlab: error: %s (usage: vramlab --help)\n",
                   one_line(e.what()).c_str());
    else if (unplaced.passed_on)
      std::fprintf(stderr,
                   "vramlab: error: %s: '%s' and what follows it go on to the lesson, after the "
                   "lesson id (usage: vramlab --help)\n",
                   one_line(e.what()).c_str(), word.c_str());
    else
      std::fprintf(stderr,
                   "vramlab: error: unexpected argument '%s' (an option this command does not "
                   "have; a value starting with '-' goes after --) (usage: vramlab --help)\n",
                   word.c_str());
    return vramlab::kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "vramlab: error: %s (usage: vramlab --help)\n",
                 one_line(e.what()).c_str());
    return vramlab::kExitUsage;
  } catch (const vramlab::UsageError& e) {
    std::fprintf(stderr, "vramlab: error: %s\n", one_line(e.what()).c_str());
    return vramlab::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramlab: %s\n", lines_of(e.what()).c_str());
    return vramlab::kExitFailure;
  }
  return exit_code;
}
