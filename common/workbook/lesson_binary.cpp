// What every lesson binary shares (see lesson_binary.h).
#include "common/workbook/lesson_binary.h"

#include <cstdio>
#include <exception>
#include <system_error>

#include "common/memory/trace_replay.h"
#include "common/platform/build_info.h"
#include "common/platform/errors.h"

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

std::string lesson_command(std::string_view lesson_id, bool mine, std::string_view flags) {
  return "vramlab run " + std::string(lesson_id) + (mine ? " --mine" : "") + " " +
         std::string(flags);
}

void print_progress(const std::string& line) {
  std::fprintf(stderr, "  ... %s\n", line.c_str());
}

int run_lesson_main(CLI::App& app, int argc, char** argv, std::string_view program,
                    const std::function<int()>& run) {
  const std::string name(program);
  try {
    app.parse(argc, argv);
    return run();
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), memory::printable(e.what()).c_str());
    return kExitUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), memory::printable(e.what()).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return kExitFailure;
  }
}

}  // namespace vramlab::workbook
