// The memory timeline page: common/report/timeline/timeline.html with timeline.css and
// timeline.js put in place of its @@STYLE@@ and @@SCRIPT@@, all compiled in at build time (no
// network access when the page is opened). The script's data functions (buildTimeline,
// SegmentReplay) do not touch the DOM and are exported under node, so
// tests/report/check_timeline_script.js can verify them; drawing happens only in a browser.
#include "common/report/detail/memory_timeline_page.h"

#include <string>

#include "common/report/detail/html_page.h"

#include "common/report/timeline_files.h"

namespace vramlab::report::detail {
std::string_view memory_timeline_page_template() {
  static const std::string kPage =
      put_in_place(put_in_place(std::string(timeline_files::timeline_html()), "@@STYLE@@",
                                timeline_files::timeline_css()),
                   "@@SCRIPT@@", timeline_files::timeline_js());
  return kPage;
}

}  // namespace vramlab::report::detail
