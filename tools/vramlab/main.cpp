// vramlab: the command-line front door of the workbook.
//
//   build/bin/vramlab --help            every subcommand
//   build/bin/vramlab doctor            what this machine can run
//
// Exit codes: 0 success, 1 a run-time failure (e.g. an out-of-memory during a replay), 2 bad input.
#include <cstdio>
#include <exception>
#include <string>

#include "common/platform/blas.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "tools/vramlab/commands.h"

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
  vramlab::cli::add_workbook_commands(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "vramlab: error: %s\nRun 'vramlab --help' for usage.\n", e.what());
    return vramlab::kExitUsage;
  } catch (const vramlab::UsageError& e) {
    std::fprintf(stderr, "vramlab: error: %s\n", e.what());
    return vramlab::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vramlab: %s\n", e.what());
    return vramlab::kExitFailure;
  }
  return exit_code;
}
