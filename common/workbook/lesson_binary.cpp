// What every lesson binary shares (see lesson_binary.h).
#include "common/workbook/lesson_binary.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include <cstdio>
#include <exception>
#include <system_error>

#include "common/platform/build_info.h"
#include "common/platform/errors.h"
#include "common/platform/printable.h"

namespace vramlab::workbook {

namespace fs = std::filesystem;

fs::path own_folder() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self.parent_path();
}

fs::path lesson_output_dir(std::string_view lesson_id) {
  const fs::path bin = own_folder();
  const fs::path build = bin.empty() ? fs::path(build_info::kBinaryDir) : bin.parent_path();
  return build / "lesson-output" / std::string(lesson_id);
}

fs::path prepare_out_dir(const std::string& out_dir, std::string_view lesson_id) {
  const fs::path folder =
      fs::absolute(out_dir.empty() ? lesson_output_dir(lesson_id) : fs::path(out_dir));
  std::error_code error;
  fs::create_directories(folder, error);
  // Another rank of the same run may have made it between the two calls: what counts is that it
  // is a folder now.
  if (!fs::is_directory(folder))
    throw UsageError(
        "--out-dir '" + platform::printable(out_dir.empty() ? folder.string() : out_dir) +
        "' cannot be made a folder: " + (error ? error.message() : std::string("it is a file")));
  return folder;
}

std::string out_dir_shown(const fs::path& folder) {
  return platform::printable(folder.string());
}

std::string lesson_command(std::string_view lesson_id, bool mine, std::string_view flags) {
  return "vramlab run " + std::string(lesson_id) + (mine ? " --mine" : "") + " " +
         std::string(flags);
}

void print_progress(const std::string& line) {
  std::fprintf(stderr, "  ... %s\n", line.c_str());
}

void reject_out_of_range_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_unsigned = type.rfind("UINT", 0) == 0;
    const bool is_integer = is_unsigned || type.rfind("INT", 0) == 0;
    if (!is_integer && type.rfind("FLOAT", 0) != 0) continue;
    // No description: the option's --help stays as it was.
    option->check(CLI::Validator(
        [is_unsigned, is_integer](std::string& text) -> std::string {
          // CLI11 would take an empty value as the option's default (or as 0), which the user
          // did not ask for: `--batch "$B"` with B unset.
          if (text.empty()) return "an empty value is not a number";
          if (!is_integer) {
            // A float option would turn 1e308 into inf, and the error would then name a value
            // the user never typed. Every float option here (rates, probabilities, seconds) is
            // far inside a float's range, so a larger magnitude is refused as typed.
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            // inf and nan as typed are the option's own to judge; 1e999 overflows a double too.
            const bool spelled_out = text.find_first_of("iInN") != std::string::npos;
            const bool too_large =
                std::isfinite(value)
                    ? std::fabs(value) > static_cast<double>(std::numeric_limits<float>::max())
                    : !spelled_out;
            if (end == text.c_str() + text.size() && too_large)
              return "'" + text + "' is too large for this option (its magnitude is above 3.4e+38)";
            return "";
          }
          // strtoull, under CLI11, wraps -1 to 2^64 - 1: a seed the user never typed.
          if (is_unsigned && text.front() == '-')
            return "'" + text + "' is negative: this option takes a number >= 0";
          const char* first = text.data();
          const char* last = text.data() + text.size();
          std::from_chars_result parsed{};
          if (is_unsigned) {
            uint64_t value = 0;
            parsed = std::from_chars(first, last, value);
          } else {
            int64_t value = 0;
            parsed = std::from_chars(first, last, value);
          }
          if (parsed.ec == std::errc::result_out_of_range)
            return "'" + text + "' is outside the range of a 64-bit integer";
          return "";  // anything else is CLI11's to judge, as before
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    reject_out_of_range_integers(*sub);
}

int run_lesson_main(CLI::App& app, int argc, char** argv, std::string_view program,
                    const std::function<int()>& run) {
  const std::string name(program);
  try {
    reject_out_of_range_integers(app);
    app.parse(argc, argv);
    return run();
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), platform::printable(e.what()).c_str());
    return kExitUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), platform::printable(e.what()).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), platform::printable(e.what()).c_str());
    return kExitFailure;
  }
}

}  // namespace vramlab::workbook
