/// \file
/// \brief A self-contained HTML page (inline CSS and JavaScript, no network) that draws Chrome
/// trace-event JSON — what torch.profiler's export_chrome_trace() and vramlab's
/// profile::chrome_trace() write, and what Perfetto and chrome://tracing open — for when those
/// tools are out of reach (Perfetto's UI loads itself from the network).
///
/// The page shows one lane per thread with its spans nested by time (complete "X" events and
/// "B"/"E" pairs, coloured by category: phase, module and kernel in fixed colours, others by a hash
/// of the name; the name inside a span when it fits; category, times and args on hover), instant
/// events ("i"/"I") as markers, counter tracks ("C") as stacked areas, on a shared axis in
/// milliseconds since the first event, zoomed by dragging across a range or with the mouse wheel,
/// and reset with a button. Metadata ("M") names processes and threads and orders them. Other
/// phases (flows, async and object events, samples) are counted in a note and not drawn.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace vramlab::report {

/// Renders \p chrome_trace as a standalone HTML page.
/// \param chrome_trace either the JSON Object Format ({"traceEvents": [...], ...}) or the JSON
///        Array Format (a bare array of events). The events are embedded as JSON with '<', '>'
///        and '&' escaped, so no string in the trace can end the script element; events of phases
///        the page does not draw are left out of the page (and counted).
/// \param title the page title and heading (HTML-escaped here).
/// \throws vramlab::UsageError naming the JSON type when \p chrome_trace is neither an array nor
///         an object whose "traceEvents" is an array.
std::string render_trace_html(const nlohmann::json& chrome_trace, const std::string& title);

}  // namespace vramlab::report
