// Known-wrong variant of exercise 07.3 (kept for `vramlab verify`, never linked into a lesson):
// counts every block, inactive ones included, so the allocator's cache, which grows as freed
// blocks stay reserved, shows up as a leak of an owner without a name.
// The exercise's tests must fail for it.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "common/platform/errors.h"
#include "lessons/07-profiling/api/leak_finder.h"

namespace vramlab::lesson07 {

namespace {

using nlohmann::json;
using OwnerKey = std::tuple<std::string, std::string, std::string>;  // module, phase, tensor

std::string text_at(const json& entry, const char* key) {
  return entry.contains(key) && entry.at(key).is_string() ? entry.at(key).get<std::string>() : "";
}

struct Held {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};

// What the program holds, per owner: active_allocated blocks only (not the cache, not blocks
// whose free is pending), by requested size.
std::map<OwnerKey, Held> held_by_owner(const json& snapshot, const char* which) {
  if (!snapshot.is_object() || !snapshot.contains("segments") ||
      !snapshot.at("segments").is_array())
    throw UsageError(std::string("the ") + which + " snapshot has no \"segments\" array");
  std::map<OwnerKey, Held> held;
  for (const json& segment : snapshot.at("segments")) {
    if (!segment.contains("blocks") || !segment.at("blocks").is_array())
      throw UsageError(std::string("a segment of the ") + which + " snapshot has no \"blocks\"");
    for (const json& block : segment.at("blocks")) {
      if (!block.contains("requested_size") || !block.at("requested_size").is_number_integer())
        throw UsageError("a block without a numeric \"requested_size\": " + block.dump());
      Held& h = held[{text_at(block, "module"), text_at(block, "phase"), text_at(block, "tensor")}];
      ++h.count;
      h.bytes += block.at("requested_size").get<std::int64_t>();
    }
  }
  return held;
}

}  // namespace

std::vector<OwnerGrowth> leaked_owners(const json& before, const json& after,
                                       std::int64_t steps_between) {
  if (steps_between < 1)
    throw UsageError("steps_between must be >= 1, got " + std::to_string(steps_between));
  const std::map<OwnerKey, Held> first = held_by_owner(before, "first");
  const std::map<OwnerKey, Held> second = held_by_owner(after, "second");
  std::vector<OwnerGrowth> grown;
  for (const auto& [key, now] : second) {
    const auto it = first.find(key);
    const Held was = it == first.end() ? Held{} : it->second;
    if (now.bytes <= was.bytes && now.count <= was.count) continue;
    OwnerGrowth g;
    std::tie(g.module, g.phase, g.tensor) = key;
    g.count_before = was.count;
    g.count_after = now.count;
    g.bytes_before = was.bytes;
    g.bytes_after = now.bytes;
    g.bytes_per_step =
        static_cast<double>(now.bytes - was.bytes) / static_cast<double>(steps_between);
    grown.push_back(std::move(g));
  }
  std::sort(grown.begin(), grown.end(), [](const OwnerGrowth& x, const OwnerGrowth& y) {
    const std::int64_t dx = x.bytes_after - x.bytes_before, dy = y.bytes_after - y.bytes_before;
    if (dx != dy) return dx > dy;
    const std::int64_t cx = x.count_after - x.count_before, cy = y.count_after - y.count_before;
    if (cx != cy) return cx > cy;
    return std::tie(x.module, x.phase, x.tensor) < std::tie(y.module, y.phase, y.tensor);
  });
  return grown;
}

}  // namespace vramlab::lesson07
