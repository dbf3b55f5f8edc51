// Placeholder until the train command lands; replaced by its real implementation.
#include "common/platform/errors.h"
#include "tools/vramlab/commands.h"

void vramlab::cli::add_train_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("train", "(not built yet)");
  cmd->callback([&exit_code] { exit_code = vramlab::kExitFailure; });
}
