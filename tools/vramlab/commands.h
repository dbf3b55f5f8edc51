/// \file
/// \brief The `vramlab` subcommands: each file in tools/vramlab/commands/ adds one to the CLI11
/// app.
///
/// A command's callback throws vramlab::UsageError for bad input (exit 2) and returns its exit code
/// through the `exit_code` slot it is given.
#pragma once

#include <CLI/CLI.hpp>

namespace vramlab::cli {

/// Adds `vramlab doctor`: what this machine can run (toolchain, GPU, MPI, BLAS, lessons).
void add_doctor_command(CLI::App& app, int& exit_code);
/// Adds `vramlab formats`: the number formats' bit layouts and limits.
void add_formats_command(CLI::App& app, int& exit_code);
/// Adds `vramlab alloc`: the allocator playground that replays an allocation trace.
void add_alloc_command(CLI::App& app, int& exit_code);

/// Adds `vramlab estimate`: the analytic memory estimator and planner (ZeRO, Korthikanti et al.).
void add_estimate_command(CLI::App& app, int& exit_code);

/// Adds `vramlab train`: trains a model on a chosen device on a learnable synthetic token stream.
void add_train_command(CLI::App& app, int& exit_code);

/// Adds `vramlab diagnose`: an out-of-memory error explained, with the fixes and their flags.
void add_diagnose_command(CLI::App& app, int& exit_code);
/// Adds `vramlab maxbatch`: the largest micro-batch that fits a device, found by running steps.
void add_maxbatch_command(CLI::App& app, int& exit_code);
/// Adds `vramlab plan`: the cheapest plan that fits a machine, why, and its run on meta devices.
void add_plan_command(CLI::App& app, int& exit_code);
/// Adds `vramlab profile`: summarises a memory snapshot (the peak, its owners, what was live there)
/// or compares two (what grew).
void add_profile_command(CLI::App& app, int& exit_code);

/// Adds `vramlab claims`: every checkable claim of the tutorials the lessons measure, our verdict,
/// and what the lessons' last runs measured.
void add_claims_command(CLI::App& app, int& exit_code);

/// Adds the workbook commands: list, check, hint, solution, reset, watch, run and verify.
void add_workbook_commands(CLI::App& app, int& exit_code);

}  // namespace vramlab::cli
