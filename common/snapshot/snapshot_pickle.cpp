// A protocol-2 pickle writer for JSON values (PyTorch memory snapshots), and a reader of plain-data
// pickles of protocols 2 to 5 (what torch.cuda.memory._dump_snapshot() writes).
// Opcodes and their encodings are those documented in CPython's Lib/pickletools.py.
#include "common/snapshot/snapshot_pickle.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"

namespace vramlab::snapshot {
namespace {

namespace opcode {
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kNone = 'N';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kBinInt = 'J';      // 4-byte signed little-endian
constexpr char kBinInt1 = 'K';     // 1-byte unsigned
constexpr char kBinInt2 = 'M';     // 2-byte unsigned little-endian
constexpr char kLong1 = '\x8a';    // 1-byte length + little-endian two's complement bytes
constexpr char kBinFloat = 'G';    // 8-byte big-endian IEEE 754 double
constexpr char kBinUnicode = 'X';  // 4-byte little-endian length + UTF-8 bytes
constexpr char kEmptyDict = '}';
constexpr char kEmptyList = ']';
constexpr char kEmptyTuple = ')';
constexpr char kMark = '(';
constexpr char kSetItems = 'u';
constexpr char kAppends = 'e';
constexpr char kTuple = 't';
constexpr char kTuple1 = '\x85';
constexpr char kTuple2 = '\x86';
constexpr char kTuple3 = '\x87';
// Read, never written.
constexpr char kFrame = '\x95';            // 8-byte length of the frame that follows
constexpr char kMemoize = '\x94';          // memo[len(memo)] = top of stack
constexpr char kBinPut = 'q';              // 1-byte memo index
constexpr char kLongBinPut = 'r';          // 4-byte memo index
constexpr char kBinGet = 'h';              // 1-byte memo index
constexpr char kLongBinGet = 'j';          // 4-byte memo index
constexpr char kSetItem = 's';             // dict[key] = value
constexpr char kAppend = 'a';              // list.append(value)
constexpr char kShortBinUnicode = '\x8c';  // 1-byte length + UTF-8 bytes
constexpr char kBinUnicode8 = '\x8d';      // 8-byte length + UTF-8 bytes
}  // namespace opcode

// Python's pickler batches SETITEMS/APPENDS every 1000 items; unpicklers accept any batch, the
// batching only bounds the unpickler's stack.
constexpr size_t kBatchSize = 1000;

void put_le(std::string& out, uint64_t value, size_t byte_count) {
  for (size_t i = 0; i < byte_count; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFFu);
}

void put_int(std::string& out, int64_t value) {
  if (value >= 0 && value <= 0xFF) {
    out += opcode::kBinInt1;
    put_le(out, static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value <= 0xFFFF) {
    out += opcode::kBinInt2;
    put_le(out, static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out += opcode::kBinInt;
    put_le(out, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(value))), 4);
  } else {
    // Smallest two's complement width that holds the value: drop redundant sign bytes.
    const auto bits = static_cast<uint64_t>(value);
    size_t byte_count = 8;
    while (byte_count > 1) {
      const auto top = static_cast<uint8_t>(bits >> (8 * (byte_count - 1)));
      const auto next_sign = static_cast<uint8_t>((bits >> (8 * (byte_count - 2))) & 0x80u);
      if ((top == 0x00 && next_sign == 0) || (top == 0xFF && next_sign != 0)) {
        --byte_count;
      } else {
        break;
      }
    }
    out += opcode::kLong1;
    out += static_cast<char>(byte_count);
    put_le(out, bits, byte_count);
  }
}

void put_unsigned(std::string& out, uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) {
    put_int(out, static_cast<int64_t>(value));
    return;
  }
  // Above 2^63 - 1: eight value bytes plus a zero byte so Python reads it as positive.
  out += opcode::kLong1;
  out += static_cast<char>(9);
  put_le(out, value, 8);
  out += '\0';
}

void put_float(std::string& out, double value) {
  out += opcode::kBinFloat;
  const auto bits = std::bit_cast<uint64_t>(value);
  for (size_t byte = 0; byte < 8; ++byte)
    out += static_cast<char>((bits >> (56 - 8 * byte)) & 0xFFu);
}

// Length of the valid UTF-8 sequence starting at text[at], or 0 if it is not valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t valid_utf8_length(std::string_view text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code_point = 0;
  uint32_t minimum = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code_point = lead & 0x1Fu;
    minimum = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code_point = lead & 0x0Fu;
    minimum = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code_point = lead & 0x07u;
    minimum = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[at + i]);
    if ((next & 0xC0u) != 0x80u) return 0;
    code_point = (code_point << 6) | (next & 0x3Fu);
  }
  if (code_point < minimum || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF))
    return 0;
  return length;
}

bool is_valid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = valid_utf8_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

// Copy of `text` with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view text) {
  std::string repaired;
  repaired.reserve(text.size() + 8);
  for (size_t at = 0; at < text.size();) {
    const size_t length = valid_utf8_length(text, at);
    if (length == 0) {
      repaired += "\xEF\xBF\xBD";
      ++at;
    } else {
      repaired.append(text.substr(at, length));
      at += length;
    }
  }
  return repaired;
}

void put_string(std::string& out, std::string_view text) {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = repair_utf8(text);
    text = repaired;
  }
  if (text.size() > UINT32_MAX) {
    throw std::invalid_argument("pickle protocol 2 cannot hold a string of " +
                                std::to_string(text.size()) + " bytes (limit 4 GiB)");
  }
  out += opcode::kBinUnicode;
  put_le(out, text.size(), 4);
  out.append(text);
}

void put_value(std::string& out, const nlohmann::json& value, bool as_tuple);

void put_array(std::string& out, const nlohmann::json& array, bool as_tuple) {
  if (as_tuple) {
    const size_t size = array.size();
    if (size == 0) {
      out += opcode::kEmptyTuple;
      return;
    }
    if (size > 3) out += opcode::kMark;
    for (const nlohmann::json& item : array) put_value(out, item, false);
    out += size == 1   ? opcode::kTuple1
           : size == 2 ? opcode::kTuple2
           : size == 3 ? opcode::kTuple3
                       : opcode::kTuple;
    return;
  }
  out += opcode::kEmptyList;
  size_t in_batch = 0;
  for (const nlohmann::json& item : array) {
    if (in_batch == 0) out += opcode::kMark;
    put_value(out, item, false);
    if (++in_batch == kBatchSize) {
      out += opcode::kAppends;
      in_batch = 0;
    }
  }
  if (in_batch > 0) out += opcode::kAppends;
}

void put_object(std::string& out, const nlohmann::json& object) {
  out += opcode::kEmptyDict;
  size_t in_batch = 0;
  for (const auto& [key, item] : object.items()) {
    if (in_batch == 0) out += opcode::kMark;
    put_string(out, key);
    put_value(out, item, key == "segment_pool_id" && item.is_array());
    if (++in_batch == kBatchSize) {
      out += opcode::kSetItems;
      in_batch = 0;
    }
  }
  if (in_batch > 0) out += opcode::kSetItems;
}

void put_value(std::string& out, const nlohmann::json& value, bool as_tuple) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::null:
      out += opcode::kNone;
      return;
    case Type::boolean:
      out += value.get<bool>() ? opcode::kNewTrue : opcode::kNewFalse;
      return;
    case Type::number_integer:
      put_int(out, value.get<int64_t>());
      return;
    case Type::number_unsigned:
      put_unsigned(out, value.get<uint64_t>());
      return;
    case Type::number_float:
      put_float(out, value.get<double>());
      return;
    case Type::string:
      put_string(out, value.get_ref<const std::string&>());
      return;
    case Type::array:
      put_array(out, value, as_tuple);
      return;
    case Type::object:
      put_object(out, value);
      return;
    case Type::binary:
      throw std::invalid_argument("cannot pickle a JSON binary value (" +
                                  std::to_string(value.get_binary().size()) +
                                  " bytes): snapshots hold no binary data");
    case Type::discarded:
      throw std::invalid_argument("cannot pickle a discarded JSON value (a failed parse result)");
  }
  throw std::invalid_argument("cannot pickle JSON value of unknown type");
}

}  // namespace

std::string encode_pickle(const nlohmann::json& value) {
  std::string out;
  out += opcode::kProto;
  out += '\x02';
  put_value(out, value, false);
  out += opcode::kStop;
  return out;
}

void write_snapshot_pickle(const nlohmann::json& snapshot, const std::string& path) {
  const std::string bytes = encode_pickle(snapshot);
  // Written beside the target and renamed over it: a full disk or a failed write leaves whatever
  // was at `path` as it was, and no partial file.
  const std::string partial = path + ".partial-" + std::to_string(::getpid());
  std::ofstream file(partial, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot open snapshot file '" + path + "' for writing");
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file || std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw std::runtime_error("cannot write snapshot file '" + path + "' (a full disk?)");
  }
}

namespace {

// The unpickler: a stack machine, as CPython's Lib/pickle.py runs it, restricted to plain data.
// Containers live in an arena and values name them by index, because the memo shares a container
// between the stack and later references (a dict is memoized empty and filled afterwards) and a
// hostile pickle can make a container hold itself; both become finite trees (or an error) only
// when the result is converted to JSON, with the depth and size limits applied there.
class Unpickler {
 public:
  explicit Unpickler(std::string_view bytes) : bytes_(bytes) {
    // Every output node costs at least one unit; real snapshots share frame lists and strings
    // through the memo, so the output may be much larger than the input, but not unboundedly.
    const uint64_t scaled = 256 * static_cast<uint64_t>(bytes.size());
    budget_ = std::min<uint64_t>(kMaxItems, std::max<uint64_t>(uint64_t{1} << 20, scaled));
  }

  nlohmann::json run() {
    for (;;) {
      opcode_offset_ = at_;
      const char op = take(1)[0];
      if (op == opcode::kStop) break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      fail("STOP with " + std::to_string(stack_.size()) + " values and " +
           std::to_string(marks_.size()) + " marks on the stack (expected one value, no mark)");
    if (at_ != bytes_.size())
      fail_at(at_, std::to_string(bytes_.size() - at_) + " bytes after STOP");
    return to_json(stack_.back(), 1);
  }

 private:
  static constexpr uint64_t kMaxItems = uint64_t{1} << 31;
  static constexpr size_t kMaxDepth = 1000;

  enum class Kind : unsigned char { list, tuple, dict };
  struct Value {
    nlohmann::json scalar;   // when container < 0
    int64_t container = -1;  // index in containers_
  };
  struct Container {
    Kind kind = Kind::list;
    size_t offset = 0;                                   // byte offset of the opcode that made it
    std::vector<Value> items;                            // list and tuple
    std::vector<std::pair<std::string, Value>> entries;  // dict, in insertion order
  };

  [[noreturn]] void fail_at(size_t offset, const std::string& what) const {
    throw UsageError("pickle: " + what + " at byte " + std::to_string(offset));
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(opcode_offset_, what); }

  std::string_view take(uint64_t count) {
    if (count > bytes_.size() - at_)
      fail("truncated: " + std::to_string(count) + " bytes needed, " +
           std::to_string(bytes_.size() - at_) + " left");
    const std::string_view out = bytes_.substr(at_, static_cast<size_t>(count));
    at_ += static_cast<size_t>(count);
    return out;
  }
  uint64_t take_le(size_t count) {
    const std::string_view raw = take(count);
    uint64_t value = 0;
    for (size_t i = 0; i < count; ++i)
      value |= static_cast<uint64_t>(static_cast<unsigned char>(raw[i])) << (8 * i);
    return value;
  }

  void push_scalar(nlohmann::json value) { stack_.push_back({std::move(value), -1}); }
  void push_container(Kind kind) {
    containers_.push_back({kind, opcode_offset_, {}, {}});
    stack_.push_back({nullptr, static_cast<int64_t>(containers_.size() - 1)});
  }
  Value pop() {
    if (stack_.size() <= stack_floor())
      fail(marks_.empty() ? "stack underflow" : "stack underflow (a value taken across a MARK)");
    Value value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  // Values at or below the innermost mark belong to an enclosing MARK ... group.
  size_t stack_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values pushed since the innermost MARK, which is removed.
  std::vector<Value> pop_mark() {
    if (marks_.empty()) fail("no MARK to close");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(mark)),
                             std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }
  Container& top_container(Kind kind, const char* what) {
    if (stack_.size() <= stack_floor()) fail(std::string(what) + " with nothing to add to");
    const Value& target = stack_.back();
    if (target.container < 0 || containers_[static_cast<size_t>(target.container)].kind != kind)
      fail(std::string(what) +
           (kind == Kind::dict ? " on something not a dict" : " on something not a list"));
    return containers_[static_cast<size_t>(target.container)];
  }
  void add_items(Container& list, std::vector<Value> items) {
    if (items.size() > kMaxItems - list.items.size()) fail("a list of more than 2^31 items");
    for (Value& item : items) list.items.push_back(std::move(item));
  }
  std::string key_text(Value key) {
    if (key.container >= 0 || !(key.scalar.is_string() || key.scalar.is_number_integer()))
      fail("a dict key that is neither str nor int (" +
           std::string(key.container >= 0 ? "a container" : key.scalar.type_name()) + ")");
    return key.scalar.is_string() ? key.scalar.get<std::string>() : key.scalar.dump();
  }
  void add_entries(Container& dict, std::vector<Value> items) {
    if (items.size() % 2 != 0)
      fail("SETITEMS with an odd number of values (" + std::to_string(items.size()) + ")");
    if (items.size() / 2 > kMaxItems - dict.entries.size()) fail("a dict of more than 2^31 items");
    for (size_t i = 0; i < items.size(); i += 2)
      dict.entries.emplace_back(key_text(std::move(items[i])), std::move(items[i + 1]));
  }
  void memo_put(uint64_t index) {
    if (stack_.size() <= stack_floor()) fail("memo store with an empty stack");
    memo_[index] = stack_.back();
  }
  void memo_get(uint64_t index) {
    const auto found = memo_.find(index);
    if (found == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    stack_.push_back(found->second);
  }
  void push_string(uint64_t length) {
    const std::string_view text = take(length);
    push_scalar(is_valid_utf8(text) ? std::string(text) : repair_utf8(text));
  }
  // LONG1: little-endian two's complement of any width; JSON holds up to 64 bits.
  void push_long(size_t width) {
    const std::string_view raw = take(width);
    if (width == 0) return push_scalar(0);
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(raw[i]); };
    const bool negative = (byte(width - 1) & 0x80u) != 0;
    for (size_t i = 8; i < width; ++i)
      if (byte(i) != (negative ? 0xFFu : 0x00u)) fail("an integer wider than 64 bits");
    uint64_t bits = negative ? ~uint64_t{0} : 0;
    for (size_t i = 0; i < std::min<size_t>(width, 8); ++i) {
      bits &= ~(uint64_t{0xFF} << (8 * i));
      bits |= static_cast<uint64_t>(byte(i)) << (8 * i);
    }
    const bool top_bit = (bits >> 63) != 0;
    if (negative && !top_bit) fail("an integer wider than 64 bits");
    if (!negative && top_bit) return push_scalar(bits);  // 2^63 .. 2^64 - 1
    push_scalar(static_cast<int64_t>(bits));
  }

  void step(char op) {
    switch (op) {
      case opcode::kProto: {
        const auto version = static_cast<unsigned char>(take(1)[0]);
        if (version < 2 || version > 5)
          fail("pickle protocol " + std::to_string(version) + " (expected 2 to 5)");
        return;
      }
      case opcode::kFrame: {
        // Framing only groups opcodes for buffered reads; the frame must fit in what is left.
        const uint64_t length = take_le(8);
        if (length > bytes_.size() - at_)
          fail("truncated: a frame of " + std::to_string(length) + " bytes with " +
               std::to_string(bytes_.size() - at_) + " left");
        return;
      }
      case opcode::kMemoize:
        return memo_put(memo_.size());
      case opcode::kBinPut:
        return memo_put(take_le(1));
      case opcode::kLongBinPut:
        return memo_put(take_le(4));
      case opcode::kBinGet:
        return memo_get(take_le(1));
      case opcode::kLongBinGet:
        return memo_get(take_le(4));
      case opcode::kEmptyDict:
        return push_container(Kind::dict);
      case opcode::kEmptyList:
        return push_container(Kind::list);
      case opcode::kEmptyTuple:
        return push_container(Kind::tuple);
      case opcode::kMark:
        marks_.push_back(stack_.size());
        return;
      case opcode::kSetItem: {
        Value value = pop();
        Value key = pop();
        std::vector<Value> pair;
        pair.push_back(std::move(key));
        pair.push_back(std::move(value));
        return add_entries(top_container(Kind::dict, "SETITEM"), std::move(pair));
      }
      case opcode::kSetItems: {
        std::vector<Value> items = pop_mark();
        return add_entries(top_container(Kind::dict, "SETITEMS"), std::move(items));
      }
      case opcode::kAppend: {
        std::vector<Value> one;
        one.push_back(pop());
        return add_items(top_container(Kind::list, "APPEND"), std::move(one));
      }
      case opcode::kAppends: {
        std::vector<Value> items = pop_mark();
        return add_items(top_container(Kind::list, "APPENDS"), std::move(items));
      }
      case opcode::kTuple1:
      case opcode::kTuple2:
      case opcode::kTuple3: {
        const size_t count = static_cast<size_t>(op - opcode::kTuple1) + 1;
        if (stack_.size() < stack_floor() + count)
          fail("stack underflow: TUPLE" + std::to_string(count) + " needs " +
               std::to_string(count) + " values");
        std::vector<Value> items(
            std::make_move_iterator(stack_.end() - static_cast<ptrdiff_t>(count)),
            std::make_move_iterator(stack_.end()));
        stack_.resize(stack_.size() - count);
        push_container(Kind::tuple);
        containers_.back().items = std::move(items);
        return;
      }
      case opcode::kTuple: {
        std::vector<Value> items = pop_mark();
        push_container(Kind::tuple);
        containers_.back().items = std::move(items);
        return;
      }
      case opcode::kBinInt:
        return push_scalar(static_cast<int64_t>(static_cast<int32_t>(take_le(4))));
      case opcode::kBinInt1:
        return push_scalar(static_cast<int64_t>(take_le(1)));
      case opcode::kBinInt2:
        return push_scalar(static_cast<int64_t>(take_le(2)));
      case opcode::kLong1:
        return push_long(static_cast<size_t>(take_le(1)));
      case opcode::kBinFloat: {
        const std::string_view raw = take(8);
        uint64_t bits = 0;
        for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(raw[i]);
        return push_scalar(std::bit_cast<double>(bits));
      }
      case opcode::kShortBinUnicode:
        return push_string(take_le(1));
      case opcode::kBinUnicode:
        return push_string(take_le(4));
      case opcode::kBinUnicode8:
        return push_string(take_le(8));
      case opcode::kNewTrue:
        return push_scalar(true);
      case opcode::kNewFalse:
        return push_scalar(false);
      case opcode::kNone:
        return push_scalar(nullptr);
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x",
                      static_cast<unsigned>(static_cast<unsigned char>(op)));
        fail(
            std::string("opcode ") + hex +
            " is not plain data (only dict, list, tuple, str, int, float, bool and None are read)");
      }
    }
  }

  void spend(uint64_t units, size_t offset) {
    if (units > budget_)
      fail_at(offset, "the value expands to more than " + std::to_string(budget_) +
                          " items through shared references");
    budget_ -= units;
  }

  // Depth-first; the depth limit bounds the recursion, and also ends a container that holds
  // itself.
  nlohmann::json to_json(const Value& value, size_t depth) {
    if (value.container < 0) {
      spend(1 + (value.scalar.is_string() ? value.scalar.get_ref<const std::string&>().size() / 8
                                          : 0),
            opcode_offset_);
      return value.scalar;
    }
    const Container& container = containers_[static_cast<size_t>(value.container)];
    if (depth > kMaxDepth)
      fail_at(container.offset, "nesting deeper than " + std::to_string(kMaxDepth) +
                                    " (or a container that holds itself)");
    spend(1, container.offset);
    if (container.kind == Kind::dict) {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& [key, item] : container.entries) {
        spend(1 + key.size() / 8, container.offset);
        object[key] = to_json(item, depth + 1);  // a repeated key keeps its last value, as dict
      }
      return object;
    }
    nlohmann::json array = nlohmann::json::array();
    array.get_ref<nlohmann::json::array_t&>().reserve(container.items.size());
    for (const Value& item : container.items) array.push_back(to_json(item, depth + 1));
    return array;
  }

  std::string_view bytes_;
  size_t at_ = 0;
  size_t opcode_offset_ = 0;
  uint64_t budget_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::deque<Container> containers_;
  std::unordered_map<uint64_t, Value> memo_;
};

}  // namespace

nlohmann::json decode_pickle(std::string_view bytes) {
  if (bytes.empty()) throw UsageError("pickle: empty input");
  return Unpickler(bytes).run();
}

nlohmann::json read_snapshot_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw UsageError("snapshot '" + path + "' is a directory (expected a .pickle or .json file)");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UsageError("cannot read snapshot '" + path + "' (no such file or not readable)");
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw UsageError("cannot read snapshot '" + path + "'");
  const std::string bytes = contents.str();
  if (bytes.empty()) throw UsageError("snapshot '" + path + "' is empty");
  if (static_cast<unsigned char>(bytes.front()) == 0x80) {
    try {
      return decode_pickle(bytes);
    } catch (const UsageError& e) {
      throw UsageError("snapshot '" + path + "': " + e.what());
    }
  }
  try {
    return nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError("snapshot '" + path + "' is neither a pickle nor JSON (" + e.what() + ")");
  }
}

}  // namespace vramlab::snapshot
