// The memory timeline page: common/report/timeline/timeline.html with timeline.css and
// timeline.js put in place of its @@STYLE@@ and @@SCRIPT@@, all compiled in at build time (no
// network access when the page is opened). The script's data functions (buildTimeline,
// SegmentReplay) do not touch the DOM and are exported under node, so
// tests/report/check_timeline_script.js can verify them; drawing happens only in a browser.
#include "common/report/detail/memory_timeline_page.h"

#include <string>

#include "common/report/timeline_files.h"

namespace vramlab::report::detail {
namespace {

// Replaces the one occurrence of `marker` in `text` by `content`.
std::string put_in_place(std::string text, std::string_view marker, std::string_view content) {
  const size_t at = text.find(marker);
  if (at == std::string::npos) return text;
  text.replace(at, marker.size(), content);
  return text;
}

}  // namespace

std::string_view memory_timeline_page_template() {
  static const std::string kPage =
      put_in_place(put_in_place(std::string(timeline_files::timeline_html()), "@@STYLE@@",
                                timeline_files::timeline_css()),
                   "@@SCRIPT@@", timeline_files::timeline_js());
  return kPage;
}

}  // namespace vramlab::report::detail
