// Parsing of the allocator configuration string (PyTorch's PYTORCH_CUDA_ALLOC_CONF keys and rules).
#include "common/memory/alloc_config.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <vector>

#include "common/platform/errors.h"

namespace vramlab::memory {
namespace {

constexpr std::size_t kMiB = 1ULL << 20;
constexpr std::size_t kMinSplitSizeMb = 20;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

UsageError bad_value(std::string_view key, std::string_view value, std::string_view why) {
  return UsageError("invalid value '" + std::string(value) + "' for allocator option '" +
                    std::string(key) + "': " + std::string(why));
}

std::uint64_t parse_unsigned(std::string_view key, std::string_view value) {
  std::uint64_t result = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
    throw bad_value(key, value, "expected a non-negative integer");
  }
  return result;
}

bool parse_bool(std::string_view key, std::string_view value) {
  if (value == "True" || value == "true") return true;
  if (value == "False" || value == "false") return false;
  throw bad_value(key, value, "expected True or False");
}

void parse_roundup_power2_divisions(std::string_view value, AllocatorConfig& config) {
  constexpr std::string_view key = "roundup_power2_divisions";
  auto& divisions = config.roundup_power2_divisions;
  auto check_divisions = [&](std::uint64_t d) {
    if (d != 0 && !std::has_single_bit(d)) {
      throw bad_value(key, value, "divisions must be 0 or a power of 2, got " + std::to_string(d));
    }
  };
  if (value.empty() || value.front() != '[') {
    const std::uint64_t d = parse_unsigned(key, value);
    check_divisions(d);
    divisions.fill(d);
    return;
  }
  if (value.back() != ']') throw bad_value(key, value, "missing ']'");
  std::string_view list = value.substr(1, value.size() - 2);
  std::size_t last_index = 0;
  bool first = true;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view entry = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      throw bad_value(key, value, "entry '" + std::string(entry) + "' is not SIZE_MB:DIVISIONS");
    }
    const std::string_view interval = trim(entry.substr(0, colon));
    const std::uint64_t d = parse_unsigned(key, trim(entry.substr(colon + 1)));
    check_divisions(d);
    if (interval == ">") {
      // Everything above the last interval named. (Older PyTorch filled from the last interval
      // itself, overwriting it; the upstream test expects [..,1024:4,>:1] to keep 1024 MiB at 4.)
      const std::size_t start = first ? 0 : last_index + 1;
      std::fill(divisions.begin() + static_cast<std::ptrdiff_t>(start), divisions.end(), d);
    } else {
      const std::uint64_t interval_mb = parse_unsigned(key, interval);
      if (!std::has_single_bit(interval_mb)) {
        throw bad_value(key, value,
                        "interval " + std::string(interval) + " MiB is not a power of 2");
      }
      const std::size_t index =
          std::min<std::size_t>(std::bit_width(interval_mb) - 1, kRoundupPower2Intervals - 1);
      if (first) {
        std::fill(divisions.begin(), divisions.begin() + static_cast<std::ptrdiff_t>(index), d);
      }
      divisions[index] = d;
      last_index = index;
    }
    first = false;
  }
}

}  // namespace

AllocatorConfig parse_alloc_conf(std::string_view text, const AllocatorConfig& base) {
  AllocatorConfig config = base;
  config.text = std::string(text);
  std::string_view rest = text;
  while (!rest.empty()) {
    // Entries are separated by commas, except inside a [...] list.
    std::size_t end = 0;
    int depth = 0;
    while (end < rest.size() && (rest[end] != ',' || depth > 0)) {
      if (rest[end] == '[') ++depth;
      if (rest[end] == ']') --depth;
      ++end;
    }
    const std::string_view entry = trim(rest.substr(0, end));
    rest = end < rest.size() ? rest.substr(end + 1) : std::string_view{};
    if (entry.empty()) continue;
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      throw UsageError("invalid allocator option '" + std::string(entry) + "': expected KEY:VALUE");
    }
    const std::string_view key = trim(entry.substr(0, colon));
    const std::string_view value = trim(entry.substr(colon + 1));
    if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
      const std::uint64_t mb = parse_unsigned(key, value);
      if (mb < kMinSplitSizeMb) throw bad_value(key, value, "must be at least 20 (MiB)");
      if (mb > (std::numeric_limits<std::size_t>::max() / kMiB)) {
        throw bad_value(key, value, "too large");
      }
      (key == "max_split_size_mb" ? config.max_split_size_bytes
                                  : config.max_non_split_rounding_bytes) = mb * kMiB;
    } else if (key == "roundup_power2_divisions") {
      parse_roundup_power2_divisions(value, config);
    } else if (key == "garbage_collection_threshold") {
      double threshold = 0.0;
      auto [ptr, error] = std::from_chars(value.data(), value.data() + value.size(), threshold);
      if (value.empty() || error != std::errc() || ptr != value.data() + value.size()) {
        throw bad_value(key, value, "expected a number between 0 and 1");
      }
      if (!(threshold > 0.0 && threshold < 1.0)) {
        throw bad_value(key, value, "must be greater than 0 and less than 1");
      }
      config.garbage_collection_threshold = threshold;
    } else if (key == "expandable_segments") {
      config.expandable_segments = parse_bool(key, value);
    } else if (key == "backend") {
      if (value != "native") {
        throw bad_value(key, value,
                        value == "cudaMallocAsync" ? "only the native caching allocator is modelled"
                                                   : "expected native or cudaMallocAsync");
      }
    } else if (key == "release_lock_on_cudamalloc") {
      config.release_lock_on_cudamalloc = parse_bool(key, value);
    } else if (key == "pinned_use_cuda_host_register") {
      config.pinned_use_cuda_host_register = parse_bool(key, value);
    } else if (key == "pinned_use_background_threads") {
      config.pinned_use_background_threads = parse_bool(key, value);
    } else if (key == "pinned_num_register_threads") {
      const std::uint64_t threads = parse_unsigned(key, value);
      if (threads == 0 || threads > 128 || !std::has_single_bit(threads)) {
        throw bad_value(key, value, "must be a power of 2 between 1 and 128");
      }
      config.pinned_num_register_threads = threads;
    } else {
      throw UsageError("unknown allocator option '" + std::string(key) + "'");
    }
  }
  return config;
}

AllocatorConfig alloc_conf_from_environment() {
  for (const char* name : {"VRAMLAB_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    if (const char* value = std::getenv(name)) {
      try {
        return parse_alloc_conf(value);
      } catch (const UsageError& error) {
        throw UsageError(std::string(name) + ": " + error.what());
      }
    }
  }
  return AllocatorConfig{};
}

}  // namespace vramlab::memory
