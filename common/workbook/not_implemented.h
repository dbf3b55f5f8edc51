/// \file
/// \brief The one error an exercise stub throws: `NOT IMPLEMENTED YET: exercise 01.1
/// (exercises/01-memory-breakdown/bytes_per_param.cpp:42) — edit this file; vramlab hint 01.1`.
///
/// A stub calls `VRAMLAB_NOT_IMPLEMENTED("01.1");` where the learner's code goes. The macro
/// captures the file and line, so the message points at the exact place to edit. `vramlab verify`
/// checks that every test of every stub fails with this message (see exercises/README.md).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace vramlab::workbook {

/// The text every NOT IMPLEMENTED message starts with (what verify and check look for).
inline constexpr std::string_view kNotImplementedMarker = "NOT IMPLEMENTED YET: exercise ";

/// Thrown by an exercise stub that the learner has not filled in yet.
class NotImplementedError : public std::logic_error {
 public:
  /// \param exercise_id the exercise, e.g. "01.1".
  /// \param file the stub's path relative to the repository root.
  /// \param line the line of the VRAMLAB_NOT_IMPLEMENTED call.
  NotImplementedError(std::string exercise_id, std::string file, long line);
  /// \return the exercise id, e.g. "01.1".
  [[nodiscard]] const std::string& exercise_id() const { return exercise_id_; }
  /// \return the stub's path relative to the repository root.
  [[nodiscard]] const std::string& file() const { return file_; }
  /// \return the line to edit.
  [[nodiscard]] long line() const { return line_; }

 private:
  std::string exercise_id_;
  std::string file_;
  long line_;
};

/// The message of a NotImplementedError.
/// \param exercise_id e.g. "01.1". \param file path relative to the repository root.
/// \param line the line to edit.
/// \return "NOT IMPLEMENTED YET: exercise 01.1 (FILE:LINE) — edit this file; vramlab hint 01.1".
std::string not_implemented_message(std::string_view exercise_id, std::string_view file, long line);

/// Makes \p file relative to the repository root when it lies inside it (compilers pass absolute
/// paths in __FILE__); other paths are returned unchanged.
/// \param file a path, absolute or relative.
/// \return e.g. "exercises/01-memory-breakdown/bytes_per_param.cpp".
std::string repository_relative_path(std::string_view file);

/// Throws NotImplementedError for \p exercise_id at \p file : \p line (use the macro).
/// \param exercise_id e.g. "01.1". \param file usually __FILE__. \param line usually __LINE__.
/// \throws NotImplementedError always.
[[noreturn]] void throw_not_implemented(std::string_view exercise_id, const char* file, long line);

}  // namespace vramlab::workbook

/// Marks the place a learner fills in: throws vramlab::workbook::NotImplementedError naming the
/// exercise \p exercise_id, this file and this line.
#define VRAMLAB_NOT_IMPLEMENTED(exercise_id) \
  ::vramlab::workbook::throw_not_implemented((exercise_id), __FILE__, __LINE__)
