/// \file
/// \brief What every lesson binary (lessons/NN-name/main.cpp) shares: where its figures go by
/// default, the command that runs it again, its progress lines, and its command-line error
/// contract (help on stdout and exit 0; a bad flag or value in one line naming it and exit 2;
/// anything else in one line and exit 1).
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/workbook/lesson_runs_mine.h"  // lesson_runs_mine(), beside lesson_command()

namespace vramlab::workbook {

/// \return this binary's folder (build/bin), or "" when /proc does not say.
std::filesystem::path own_folder();

/// \param lesson_id e.g. "02". \return the build directory's lesson-output/ID folder (ID =
/// \p lesson_id): beside the build's binaries, inside the build directory that git ignores.
std::filesystem::path lesson_output_dir(std::string_view lesson_id);

/// Makes the folder a lesson's figures go to before the lesson runs, so an --out-dir that cannot
/// be a folder is bad input reported in one line before any work or progress output, not an error
/// after minutes of measuring. A path may hold any byte but NUL (a tab, an escape), so none is
/// refused; show it to a terminal through out_dir_shown().
/// \param out_dir the --out-dir value as given ("" = lesson_output_dir(\p lesson_id)).
/// \param lesson_id e.g. "02". \return the folder, absolute.
/// \throws vramlab::UsageError naming the value (escaped) when the folder cannot be made.
std::filesystem::path prepare_out_dir(const std::string& out_dir, std::string_view lesson_id);

/// \param folder a folder from prepare_out_dir(). \return its path as a terminal may show it: its
/// control characters as `\xNN` (platform::printable), so an --out-dir holding an escape sequence
/// cannot drive the terminal when the lesson says where its figures went.
std::string out_dir_shown(const std::filesystem::path& folder);

/// \param lesson_id e.g. "02". \param mine whether the binary runs the learner's exercise code.
/// \param flags the lesson's flags. \return "vramlab run ID [--mine] FLAGS".
std::string lesson_command(std::string_view lesson_id, bool mine, std::string_view flags);

/// Prints "  ... " and \p line on stderr: a long lesson's progress, kept off stdout (the tables, or
/// the JSON).
void print_progress(const std::string& line);

/// Makes every integer option of \p app and its subcommands (type INT or UINT) reject a number
/// outside the 64-bit range as a parse error naming the text as typed: CLI11 would saturate it
/// to the type's limit, and the error (if any) would then name a value the user never typed. A
/// negative number for a UINT option is out of range too (CLI11 would wrap -1 to 2^64 - 1), and
/// an empty value for a number option (INT, UINT or FLOAT) is an error rather than the default, as
/// is a FLOAT beyond a 32-bit float's range (CLI11 would store 1e308 in a float as inf). An empty
/// text value is left to each option (`--model ""` means no preset).
/// run_lesson_main and `vramlab` call it before parsing, so an option added later is covered.
/// \param app the options, complete (options added afterwards are not covered).
void reject_out_of_range_integers(CLI::App& app);

/// Parses \p argv into \p app (after reject_out_of_range_integers), then calls \p run, turning what
/// can go wrong into the lesson binaries' exit codes: CLI11's --help (stdout, 0), a parse error or
/// a vramlab::UsageError (one line "PROGRAM: error: ..." on stderr with control characters escaped,
/// 2), any other exception ("PROGRAM: ...", 1). \param app the binary's options. \param argc as
/// main's. \param argv as main's. \param program the binary's name for the messages. \param run the
/// lesson, after parsing. \return the exit code.
int run_lesson_main(CLI::App& app, int argc, char** argv, std::string_view program,
                    const std::function<int()>& run);

}  // namespace vramlab::workbook
