/// \file
/// \brief Exercise 01.5: design an allocation trace that runs out of memory while much of the
/// device holds no tensor: fragmentation in the caching allocator.
///
/// The one API shared by the stub (exercises/01-memory-breakdown/fragmentation_trace.cpp) and the
/// reference (solutions/01-memory-breakdown/fragmentation_trace.cpp). The tests replay the trace
/// on a simulated GPU of kFragmentationDeviceBytes with the default allocator settings, exactly as
/// `vramlab alloc TRACE --device sim:1GiB` does, and read the out-of-memory error's figures.
#pragma once

#include <cstdint>
#include <string>

namespace vramlab::lesson01 {

/// The simulated device the trace is replayed on: `sim:1GiB`.
inline constexpr const char* kFragmentationDevice = "sim:1GiB";
/// Its capacity.
inline constexpr int64_t kFragmentationDeviceBytes = int64_t{1} << 30;
/// The share of the device that must hold no tensor when the allocation fails (more than this).
inline constexpr double kMinimumUnusedShare = 0.30;
/// The longest trace accepted, in lines.
inline constexpr int64_t kMaxTraceLines = 20'000;

/// Exercise 01.5: an allocation trace that ends in an out-of-memory error on kFragmentationDevice
/// although, at that moment, more than kMinimumUnusedShare of the device holds no tensor: the
/// device's free memory plus the memory the allocator has reserved but not allocated. The
/// failing request must itself be smaller than that unused memory (a request larger than
/// everything unused is not fragmentation), and the trace must not change the allocator's
/// settings (no `set_conf`).
/// \return the trace in the text format of `vramlab alloc` (common/memory/trace_replay.h): one
/// operation per line, e.g. "alloc a 1536KiB" and "free a"; at most kMaxTraceLines lines.
std::string fragmentation_trace();

}  // namespace vramlab::lesson01
