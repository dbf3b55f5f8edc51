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
  /// \p exercise_id e.g. "01.1"; \p file relative to the repository root; \p line that of the
  /// VRAMLAB_NOT_IMPLEMENTED call. what() is not_implemented_message() of them.
  NotImplementedError(std::string exercise_id, std::string file, long line);
  /// The constructor's; what() carries the same three facts as text.
  [[nodiscard]] const std::string& exercise_id() const { return exercise_id_; }
  /// Relative to the repository root.
  [[nodiscard]] const std::string& file() const { return file_; }
  /// Of the VRAMLAB_NOT_IMPLEMENTED call: where the learner's code goes.
  [[nodiscard]] long line() const { return line_; }

 private:
  std::string exercise_id_;
  std::string file_;
  long line_;
};

/// The message of a NotImplementedError:
/// \return "NOT IMPLEMENTED YET: exercise 01.1 (FILE:LINE) — edit this file; vramlab hint 01.1".
std::string not_implemented_message(std::string_view exercise_id, std::string_view file, long line);

/// Makes \p file relative to the repository root when it lies inside it (compilers pass absolute
/// paths in __FILE__, or paths relative to a build directory inside the repository such as
/// "../exercises/x.cpp" when ccache rewrites them); other paths are returned unchanged.
/// \return e.g. "exercises/01-memory-breakdown/bytes_per_param.cpp".
std::string repository_relative_path(std::string_view file);

/// Throws NotImplementedError for \p exercise_id at \p file : \p line (use the macro).
/// \throws NotImplementedError always.
[[noreturn]] void throw_not_implemented(std::string_view exercise_id, const char* file, long line);

}  // namespace vramlab::workbook

/// Marks the place a learner fills in: throws vramlab::workbook::NotImplementedError naming the
/// exercise \p exercise_id, this file and this line.
#define VRAMLAB_NOT_IMPLEMENTED(exercise_id) \
  ::vramlab::workbook::throw_not_implemented((exercise_id), __FILE__, __LINE__)
