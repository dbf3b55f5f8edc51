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

#include "common/profile/recording.h"

namespace vramlab::profile {

/// \return {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
nlohmann::json chrome_trace(const Recording& recording);

}  // namespace vramlab::profile
