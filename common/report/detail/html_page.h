// Internal: what the self-contained report pages (memory timeline, trace) share when they put a
// title and a JSON model into their compiled-in template.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace vramlab::report::detail {

// `value` as JSON that is safe inside a script element: '<', '>' and '&' only occur inside JSON
// strings, where \u003c, \u003e and \u0026 mean the same characters, so no string in the data can
// end the element or open a comment. Invalid UTF-8 is replaced, not thrown.
std::string script_safe_json(const nlohmann::json& value);

// `page` with @@TITLE@@ replaced by `title_html` and @@DATA@@ by `data_json`, in one pass over the
// template, so a title or data string that contains a placeholder is never substituted again.
std::string fill_template(std::string_view page, std::string_view title_html,
                          std::string_view data_json);

// Replaces the first occurrence of `marker` in `text` by `content` (the template's @@STYLE@@ and
// @@SCRIPT@@ when a page is assembled from its files).
std::string put_in_place(std::string text, std::string_view marker, std::string_view content);

}  // namespace vramlab::report::detail
