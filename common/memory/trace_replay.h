/// \file
/// \brief Replays an allocation trace (the text format of `vramlab alloc`) on a caching allocator.
///
/// One operation per line; blank lines and lines starting with `#` are skipped:
///   alloc NAME BYTES [stream=S] [category=C]   BYTES is an integer or a size such as 5MiB, 1.5GB
///   free NAME
///   empty_cache
///   record_stream NAME S
///   sync [S]                                   all streams, or stream S
///   set_conf KEY:VAL,...                       PyTorch's allocator keys
///   reset_peak
#pragma once

#include <cstddef>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/memory/oom_error.h"

namespace vramlab::memory {

/// The caching allocator a replay runs on: make_caching_allocator() with addresses only for a sim
/// device, since a replay never touches the memory it allocates (no host RAM is mapped and the
/// host-memory budget never applies, so a 141 GiB trace replays on a laptop); a real GPU's memory
/// on cuda.
/// \param device a sim, meta or cuda device.  \param config the settings.
/// \throws vramlab::UsageError for a cpu device (no capacity to replay against) or an unusable
/// cuda device.
std::unique_ptr<CachingAllocator> make_replay_allocator(const Device& device,
                                                        const AllocatorConfig& config);

/// How a replay ended.
struct ReplayOutcome {
  bool out_of_memory = false;   ///< an allocation failed and the replay stopped there
  std::size_t line_number = 0;  ///< the failing line (when out_of_memory)
  std::string line_text;        ///< its text
  std::string message;          ///< the OutOfMemoryError's message
  OutOfMemoryDetails details;   ///< the allocator state at the failure (when out_of_memory)
  std::size_t operations = 0;   ///< operations executed
};

/// Replays a trace on an allocator, keeping the names of live allocations.
class TraceReplayer {
 public:
  /// \param allocator not owned; must outlive the replayer.
  explicit TraceReplayer(CachingAllocator& allocator) : allocator_(allocator) {}

  /// Replays every line of \p input.
  /// \param input the trace text.
  /// \param file_name used in error messages ("FILE:LINE: message").
  /// \return how the replay ended; an out-of-memory error stops it.
  /// \throws vramlab::UsageError "FILE:LINE: message" for a malformed line, an unknown name, a
  ///         duplicate live name or an invalid value.
  ReplayOutcome replay(std::istream& input, const std::string& file_name);

 private:
  void execute(const std::string& line);

  CachingAllocator& allocator_;
  std::unordered_map<std::string, Block*> live_;
};

}  // namespace vramlab::memory
