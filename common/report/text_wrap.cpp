// Notes under a table, wrapped (see text_wrap.h).
#include "common/report/text_wrap.h"

namespace vramlab::report {

std::string wrap_note(const std::string& text) {
  constexpr size_t kWidth = 86;  // 88 columns with the indent
  std::string out;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > kWidth) {
      out += "  " + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += "  " + line + "\n";
  return out;
}

}  // namespace vramlab::report
