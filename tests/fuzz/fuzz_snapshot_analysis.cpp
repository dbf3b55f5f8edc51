// libFuzzer target: the snapshot analysis of `vramlab profile` (snapshot::analyse_peak,
// live_allocations and compare_snapshots, common/snapshot/snapshot_analysis.h) on a snapshot given
// as a pickle (first byte 0x80) or JSON, as read_snapshot_file() reads it. Contract: each returns
// its report or a UsageError naming the field; the live set at the peak adds up to the peak; a
// snapshot compared with itself shows no growth.
//   build-fuzz/bin/fuzz_snapshot_analysis tests/fuzz/corpus/snapshot_analysis
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/snapshot/snapshot_analysis.h"
#include "common/snapshot/snapshot_pickle.h"
#include "tests/fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  nlohmann::json snapshot;
  if (size > 0 && data[0] == 0x80) {
    try {
      snapshot =
          snapshot::decode_pickle(std::string_view(reinterpret_cast<const char*>(data), size));
    } catch (const UsageError&) {
      return 0;  // fuzz_snapshot_pickle holds decode_pickle to its contract
    }
  } else {
    snapshot = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (snapshot.is_discarded()) return 0;
  }
  fuzz::expect_parsed_or_usage_error([&] {
    const snapshot::PeakReport peak = snapshot::analyse_peak(snapshot);
    std::int64_t live_bytes = 0;
    for (const snapshot::Allocation& allocation : peak.live_at_peak) live_bytes += allocation.bytes;
    if (live_bytes != peak.peak_bytes)
      fuzz::contract_broken("analyse_peak", "live at peak " + std::to_string(live_bytes) +
                                                " B, peak " + std::to_string(peak.peak_bytes) +
                                                " B");
  });
  fuzz::expect_parsed_or_usage_error([&] {
    (void)snapshot::live_allocations(snapshot);
    const auto growth = snapshot::compare_snapshots(snapshot, snapshot);
    if (!growth.empty())
      fuzz::contract_broken("compare_snapshots",
                            "a snapshot grew against itself: " + growth.front().module + " " +
                                std::to_string(growth.front().bytes_after));
  });
  return 0;
}
