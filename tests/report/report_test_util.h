/// \file
/// \brief Helpers shared by the report tests: the parts of a generated HTML page, counting a
/// substring, writing a file, and bytes from integer literals.
#pragma once

#include <cstddef>
#include <fstream>
#include <initializer_list>
#include <string>

namespace vramlab::report::testing {

/// \return the JSON a page embeds in its `<script type="application/json" id="vramlab-data">`,
/// or "" when the page has none.
inline std::string embedded_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"vramlab-data\">";
  const size_t begin = page.find(open);
  const size_t end = page.find("</script>", begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  return page.substr(begin + open.size(), end - begin - open.size());
}

/// \return the body of the first plain `<script>` after the embedded data, or "".
inline std::string main_script(const std::string& page) {
  const size_t data_end = page.find("</script>", page.find("id=\"vramlab-data\""));
  const size_t begin = page.find("<script>", data_end);
  const size_t end = page.find("</script>", begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  return page.substr(begin + 8, end - begin - 8);
}

/// \return how many times \p needle occurs in \p text, overlapping occurrences included.
inline size_t count_of(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

/// Writes \p text to \p path as it is (binary mode).
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
}

/// \return the bytes \p values, each 0..255, as a string (pickle opcodes written by hand).
inline std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (const int v : values) out += static_cast<char>(v);
  return out;
}

}  // namespace vramlab::report::testing
