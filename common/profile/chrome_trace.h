/// \file
/// \brief A recording as Chrome trace-event JSON, the format torch.profiler's
/// export_chrome_trace() writes and Perfetto (ui.perfetto.dev) and chrome://tracing open.
///
/// Events: one complete event ("ph": "X") per phase, module and kernel span (category "phase",
/// "module" or "kernel"; args: module, phase), on one track per recording thread; counter events
/// ("ph": "C") for allocated bytes per memory category and for reserved bytes, one sample per
/// allocator event that changes them; metadata events ("ph": "M") naming the process and threads.
/// Times are microseconds since the recording began (fractional, so ns survive).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "common/profile/recording.h"

namespace vramlab::profile {

/// \return {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
nlohmann::json chrome_trace(const Recording& recording);

/// The stream clock's spans as trace events: a process \p process_id named \p process_name, one
/// thread per stream ("stream ID: NAME"), one complete event ("ph": "X", category "stream") per
/// span, at (start − \p origin_seconds) in microseconds. chrome_trace() puts a recording's streams
/// in its trace with it; a lesson can lay two runs' steps side by side, each its own process.
/// \param spans the clock's spans (stream::Clock::spans()). \param stream_names indexed by
/// stream id. \param process_id the process. \param process_name its name.
/// \param origin_seconds the clock's time that becomes 0. \return the events, metadata first.
nlohmann::json stream_lanes(const std::vector<stream::Span>& spans,
                            const std::vector<std::string>& stream_names, int process_id,
                            const std::string& process_name, double origin_seconds = 0.0);

}  // namespace vramlab::profile
