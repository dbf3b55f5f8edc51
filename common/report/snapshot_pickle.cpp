// A protocol-2 pickle writer for JSON values (PyTorch memory snapshots).
// Opcodes and their encodings are those documented in CPython's Lib/pickletools.py.
#include "common/report/snapshot_pickle.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace vramlab::report {
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
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot open snapshot file '" + path + "' for writing");
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) throw std::runtime_error("cannot write snapshot file '" + path + "'");
}

}  // namespace vramlab::report
