// Trace page: picks the events out of a Chrome trace (object or array format), drops the phases
// the page does not draw, and embeds the rest into common/report/trace/trace.{html,css,js}.
// Nesting, B/E matching and counter stacking happen in the page's script, where
// tests/report/check_trace_script.js checks them under node.
#include "common/report/trace_html.h"

#include <map>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "common/report/category_colours.h"
#include "common/report/detail/html_page.h"
#include "common/report/trace_files.h"
#include "common/report/xml_escape.h"

namespace vramlab::report {
namespace {

using nlohmann::json;

std::string_view trace_page_template() {
  static const std::string kPage =
      detail::put_in_place(detail::put_in_place(std::string(detail::trace_files::trace_html()),
                                                "@@STYLE@@", detail::trace_files::trace_css()),
                           "@@SCRIPT@@", detail::trace_files::trace_js());
  return kPage;
}

bool drawn_phase(std::string_view ph) {
  return ph == "X" || ph == "B" || ph == "E" || ph == "i" || ph == "I" || ph == "C" || ph == "M";
}

}  // namespace

std::string render_trace_html(const nlohmann::json& chrome_trace, const std::string& title) {
  const json* events = nullptr;
  if (chrome_trace.is_array()) {
    events = &chrome_trace;
  } else if (chrome_trace.is_object()) {
    const auto it = chrome_trace.find("traceEvents");
    if (it == chrome_trace.end() || !it->is_array()) {
      throw UsageError(
          "a Chrome trace object needs a \"traceEvents\" array, got " +
          (it == chrome_trace.end() ? std::string("no such key") : std::string(it->type_name())));
    }
    events = &*it;
  } else {
    throw UsageError(
        std::string("a Chrome trace is a JSON array of events or an object with \"traceEvents\", "
                    "got ") +
        chrome_trace.type_name());
  }
  json kept = json::array();
  std::map<std::string, size_t> skipped;
  for (const json& event : *events) {
    // Non-objects and events without a phase go to the page, which counts them as invalid.
    const auto ph = event.is_object() ? event.find("ph") : event.end();
    if (event.is_object() && ph != event.end() && ph->is_string() &&
        !drawn_phase(ph->get_ref<const std::string&>())) {
      ++skipped[ph->get<std::string>()];
      continue;
    }
    kept.push_back(event);
  }
  json series_colours = json::object();
  for (const std::string& category : category_order())
    series_colours[category] = category_colour(category);
  const json data = {{"title", title},
                     {"events", std::move(kept)},
                     {"skipped", skipped},
                     {"series_colours", series_colours}};
  return detail::fill_template(trace_page_template(), xml_escape(title),
                               detail::script_safe_json(data));
}

}  // namespace vramlab::report
