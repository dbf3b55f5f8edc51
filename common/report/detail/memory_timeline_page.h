// Internal: the HTML/CSS/JavaScript template of the memory timeline page (memory_timeline_html.cpp
// fills in @@TITLE@@ and @@DATA@@). The page itself is
// common/report/timeline/timeline.{html,css,js}, compiled in at build time, so it can be read,
// linted and tested as a web page.
#pragma once

#include <string_view>

namespace vramlab::report::detail {

// The page template with the placeholders @@TITLE@@ (HTML-escaped title) and @@DATA@@ (the model
// as script-safe JSON). Each placeholder occurs exactly once.
std::string_view memory_timeline_page_template();

}  // namespace vramlab::report::detail
