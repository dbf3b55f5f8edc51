// Shared by the self-contained report pages: JSON inside a script element and template filling
// (detail/html_page.h).
#include "common/report/detail/html_page.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace vramlab::report::detail {

std::string script_safe_json(const nlohmann::json& value) {
  const std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
    }
  }
  return out;
}

std::string fill_template(std::string_view page, std::string_view title_html,
                          std::string_view data_json) {
  std::string out;
  out.reserve(page.size() + title_html.size() + data_json.size());
  size_t at = 0;
  while (at < page.size()) {
    const size_t next = page.find("@@", at);
    if (next == std::string_view::npos) break;
    out.append(page.substr(at, next - at));
    if (page.substr(next).starts_with("@@TITLE@@")) {
      out.append(title_html);
      at = next + 9;
    } else if (page.substr(next).starts_with("@@DATA@@")) {
      out.append(data_json);
      at = next + 8;
    } else {
      out.append("@@");
      at = next + 2;
    }
  }
  out.append(page.substr(std::min(at, page.size())));
  return out;
}

std::string put_in_place(std::string text, std::string_view marker, std::string_view content) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) return text;
  text.replace(at, marker.size(), content);
  return text;
}

}  // namespace vramlab::report::detail
