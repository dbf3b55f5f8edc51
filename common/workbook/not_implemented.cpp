// The NOT IMPLEMENTED error of the exercise stubs.
#include "common/workbook/not_implemented.h"

#include <utility>

#include "common/platform/build_info.h"

namespace vramlab::workbook {

NotImplementedError::NotImplementedError(std::string exercise_id, std::string file, long line)
    : std::logic_error(not_implemented_message(exercise_id, file, line)),
      exercise_id_(std::move(exercise_id)),
      file_(std::move(file)),
      line_(line) {}

std::string not_implemented_message(std::string_view exercise_id, std::string_view file,
                                    long line) {
  std::string message(kNotImplementedMarker);
  message += exercise_id;
  message += " (";
  message += file;
  message += ':';
  message += std::to_string(line);
  message += ") \u2014 edit this file; vramlab hint ";
  message += exercise_id;
  return message;
}

std::string repository_relative_path(std::string_view file) {
  std::string root = build_info::kSourceDir;
  if (!root.empty() && root.back() != '/') root += '/';
  if (!root.empty() && file.substr(0, root.size()) == root)
    return std::string(file.substr(root.size()));
  // A compiler launched from a build directory inside the repository with relative paths (ccache's
  // base_dir does this) writes "../exercises/..." into __FILE__: relative to build/, not to us.
  while (file.substr(0, 3) == "../") file.remove_prefix(3);
  return std::string(file);
}

void throw_not_implemented(std::string_view exercise_id, const char* file, long line) {
  throw NotImplementedError(std::string(exercise_id), repository_relative_path(file), line);
}

}  // namespace vramlab::workbook
