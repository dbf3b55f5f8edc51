/// \file
/// \brief A number as an error message names it.
#pragma once

#include <sstream>
#include <string>

namespace vramlab {

/// \return \p value as a stream prints it by default, six significant digits ("0.1", "3e-05",
/// "1e+20", "nan", "inf"): short enough for a message and exact for the values people type.
inline std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace vramlab
