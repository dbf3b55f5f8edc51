/// \file
/// \brief Escaping text for XML and HTML character data and attribute values.
#pragma once

#include <string>
#include <string_view>

namespace vramlab::report {

/// Escapes text for XML (SVG) or HTML character data and attribute values (&, <, >, ", ').
/// Control characters other than tab/newline/CR (not allowed in XML 1.0) become U+FFFD.
std::string xml_escape(std::string_view text);

}  // namespace vramlab::report
