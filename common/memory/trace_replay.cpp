// The `vramlab alloc` trace format: parsing and replay.
#include "common/memory/trace_replay.h"

#include "common/memory/make_caching_allocator.h"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <vector>

#include "common/platform/errors.h"
#include "common/platform/printable.h"

namespace vramlab::memory {
namespace {

// The first control character of a line other than the tab that separates words: a trace is text,
// and a name holding a NUL or an escape sequence would reach the terminal in every report.
std::string::size_type find_control(const std::string& line) {
  for (std::string::size_type i = 0; i < line.size(); ++i)
    if (platform::is_control_character(line[i]) && line[i] != '\t') return i;
  return std::string::npos;
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> words;
  std::string word;
  while (stream >> word) words.push_back(word);
  return words;
}

std::size_t parse_bytes(const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc() && end == text.data() + text.size()) return value;
  try {
    return parse_size_bytes(text);
  } catch (const UsageError&) {
    throw UsageError("invalid size '" + text + "' (expected bytes, e.g. 4096, or 5MiB, 1.5GB)");
  }
}

StreamId parse_stream(const std::string& text) {
  StreamId stream = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), stream);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || stream < 0) {
    throw UsageError("invalid stream '" + text + "' (expected a non-negative integer)");
  }
  return stream;
}

void expect_arguments(const std::vector<std::string>& words, std::size_t min_count,
                      std::size_t max_count, const char* usage) {
  if (words.size() < min_count + 1 || words.size() > max_count + 1) {
    throw UsageError("'" + words[0] + "' expects: " + usage);
  }
}

}  // namespace

std::unique_ptr<CachingAllocator> make_replay_allocator(const Device& device,
                                                        const AllocatorConfig& config) {
  if (device.kind == DeviceKind::cpu)
    throw UsageError("device '" + device.name() +
                     "' has no capacity to replay against (use sim, meta or cuda)");
  return make_caching_allocator(
      device, config,
      device.kind == DeviceKind::cuda ? SegmentMemory::real : SegmentMemory::addresses_only);
}

void TraceReplayer::execute(const std::string& line) {
  const std::vector<std::string> words = split_words(line);
  const std::string& op = words[0];
  if (op == "alloc") {
    expect_arguments(words, 2, 4, "alloc NAME BYTES [stream=S] [category=C]");
    const std::string& name = words[1];
    if (live_.count(name) != 0) throw UsageError("'" + name + "' is already allocated");
    const std::size_t bytes = parse_bytes(words[2]);
    StreamId stream = 0;
    MemoryCategory category = MemoryCategory::other;
    for (std::size_t i = 3; i < words.size(); ++i) {
      if (words[i].rfind("stream=", 0) == 0) {
        stream = parse_stream(words[i].substr(7));
      } else if (words[i].rfind("category=", 0) == 0) {
        category = parse_category(words[i].substr(9));
      } else {
        throw UsageError("unknown alloc option '" + words[i] +
                         "' (expected stream=S or category=C)");
      }
    }
    Block* block = allocator_.malloc(bytes, stream, category, name);
    live_.emplace(name, block);
  } else if (op == "free") {
    expect_arguments(words, 1, 1, "free NAME");
    auto it = live_.find(words[1]);
    if (it == live_.end()) throw UsageError("'" + words[1] + "' is not allocated");
    allocator_.free(it->second);
    live_.erase(it);
  } else if (op == "empty_cache") {
    expect_arguments(words, 0, 0, "empty_cache");
    allocator_.empty_cache();
  } else if (op == "record_stream") {
    expect_arguments(words, 2, 2, "record_stream NAME S");
    auto it = live_.find(words[1]);
    if (it == live_.end()) throw UsageError("'" + words[1] + "' is not allocated");
    if (it->second != nullptr) allocator_.record_stream(it->second, parse_stream(words[2]));
  } else if (op == "sync") {
    expect_arguments(words, 0, 1, "sync [S]");
    if (words.size() == 2) {
      allocator_.synchronize_stream(parse_stream(words[1]));
    } else {
      allocator_.synchronize();
    }
  } else if (op == "set_conf") {
    expect_arguments(words, 1, 1, "set_conf KEY:VAL,...");
    allocator_.set_config(parse_alloc_conf(words[1], allocator_.config()));
  } else if (op == "reset_peak") {
    expect_arguments(words, 0, 0, "reset_peak");
    allocator_.reset_peak_stats();
  } else {
    throw UsageError("unknown operation '" + op +
                     "' (expected alloc, free, empty_cache, record_stream, sync, set_conf, "
                     "reset_peak)");
  }
}

ReplayOutcome TraceReplayer::replay(std::istream& input, const std::string& file_name) {
  ReplayOutcome outcome;
  std::string line;
  std::size_t line_number = 0;
  while (std::getline(input, line)) {
    ++line_number;
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.back() == '\r') line.pop_back();
    if (const auto at = find_control(line); at != std::string::npos)
      throw UsageError(platform::printable(file_name) + ":" + std::to_string(line_number) +
                       ": control character " + platform::printable(line.substr(at, 1)) +
                       " at column " + std::to_string(at + 1) +
                       " (a trace holds printable text only): " + platform::printable(line));
    try {
      execute(line);
      ++outcome.operations;
    } catch (const OutOfMemoryError& error) {
      outcome.out_of_memory = true;
      outcome.line_number = line_number;
      outcome.line_text = line.substr(first);
      outcome.message = error.what();
      outcome.details = error.details();
      return outcome;
    } catch (const UsageError& error) {
      throw UsageError(platform::printable(file_name) + ":" + std::to_string(line_number) + ": " +
                       error.what());
    }
  }
  return outcome;
}

}  // namespace vramlab::memory
