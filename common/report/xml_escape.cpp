// One escaping for every markup vramlab writes: SVG figures and the HTML report pages (an HTML
// title or attribute accepts the same entities, and U+FFFD for a control character).
#include "common/report/xml_escape.h"

namespace vramlab::report {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "\xEF\xBF\xBD";  // U+FFFD: XML 1.0 forbids other control characters
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace vramlab::report
