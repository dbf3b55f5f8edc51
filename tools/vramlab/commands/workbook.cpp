// Placeholder until the workbook commands land; replaced by their real implementation.
#include "common/platform/errors.h"
#include "tools/vramlab/commands.h"

void vramlab::cli::add_workbook_commands(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "(not built yet)");
  cmd->callback([&exit_code] { exit_code = vramlab::kExitFailure; });
}
