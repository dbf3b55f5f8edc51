/// \file
/// \brief Everything `vramlab train --profile DIR` and the lessons write for one recording.
#pragma once

#include <string>

#include "common/profile/recording.h"

namespace vramlab::profile {

/// The files write_profile() wrote.
struct ProfileFiles {
  std::string snapshot_pickle;  ///< snapshot.pickle: for pytorch.org/memory_viz and _memory_viz
  std::string snapshot_json;    ///< snapshot.json: the same dictionary, for scripts
  std::string trace_json;       ///< trace.json: Chrome trace events (chrome_trace.h)
  std::string ops_table;        ///< ops.txt: the per-op and per-module tables (op_table.h)
  std::string ops_json;         ///< ops.json: {"by_op": [...], "by_module": [...]}
  std::string timeline_html;    ///< timeline.html: the self-contained memory timeline
};

/// Writes the files into \p directory (created if missing).
/// \param recording from Profiler::stop().
/// \param directory where the files go.
/// \param title the timeline page's title.
/// \throws vramlab::UsageError naming \p directory when it cannot be created or written.
ProfileFiles write_profile(const Recording& recording, const std::string& directory,
                           const std::string& title);

}  // namespace vramlab::profile
