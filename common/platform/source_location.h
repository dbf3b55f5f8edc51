/// \file
/// \brief vramlab::source_location: std::source_location, or a stand-in where the standard
/// library's cannot be compiled.
///
/// Clang 14 (the sanitizer and libFuzzer builds) cannot compile libstdc++ 12's
/// std::source_location (it needs __builtin_source_location, added in clang 15), so code that
/// records where it was called from (the checks of errors.h, the SIMT emulator's barriers) takes
/// this type. Header-only: the emulator includes it without linking the platform library.
#pragma once

#include <source_location>

namespace vramlab {

#if defined(__cpp_lib_source_location)
/// Where a check is written: std::source_location where the standard library has it.
using source_location = std::source_location;
#else
/// Where a check is written: the same compiler builtins std::source_location uses, as default
/// arguments.
class source_location {
 public:
  /// \return the location of the call (of the default argument's use).
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           unsigned line = __builtin_LINE()) noexcept {
    source_location here;
    here.file_ = file;
    here.line_ = line;
    return here;
  }
  /// \return the source file's name.
  constexpr const char* file_name() const noexcept { return file_; }
  /// \return the line.
  constexpr unsigned line() const noexcept { return line_; }

 private:
  const char* file_ = "";
  unsigned line_ = 0;
};
#endif

}  // namespace vramlab
