/// \file
/// \brief Writes a memory snapshot as a Python pickle, the format of PyTorch's
/// torch.cuda.memory._dump_snapshot(), so pytorch.org/memory_viz and
/// `python -m torch.cuda._memory_viz` open vramlab's snapshots directly.
///
/// The encoder is protocol 2 (viewers need protocol <= 4) and maps JSON to Python as
/// object -> dict, array -> list (tuple under the key "segment_pool_id", as PyTorch stores it),
/// string -> str, integer -> int (any 64-bit value), floating point -> float, bool -> bool,
/// null -> None. No memo entries are written (PyTorch's snapshots do not share objects either).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

namespace vramlab::snapshot {

/// Encodes \p value as a protocol-2 pickle.
/// Strings with invalid UTF-8 have each bad byte replaced by U+FFFD so Python can load them.
/// \param value any JSON value (typically a snapshot in the schema of PyTorch's
/// torch.cuda.memory._snapshot()).
/// \return the pickle bytes (PROTO 2 ... STOP).
/// \throws std::invalid_argument for JSON binary or discarded values, and for strings of 4 GiB or
/// more.
std::string encode_pickle(const nlohmann::json& value);

/// Writes encode_pickle(\p snapshot) to \p path (replacing it).
/// \p path conventionally ends in ".pickle" (what memory_viz expects).
/// \throws std::runtime_error naming \p path if it cannot be written;
///         std::invalid_argument as encode_pickle.
void write_snapshot_pickle(const nlohmann::json& snapshot, const std::string& path);

/// Decodes a pickle of plain Python data, such as torch.cuda.memory._dump_snapshot() writes
/// (protocols 2 to 5, memo included): dict -> object (keys must be str or int, ints written as
/// their decimal text), list and tuple -> array, str -> string, int (any size up to 64 bits) ->
/// integer, float -> number, bool, None -> null.
/// \param bytes the file's contents.
/// Objects the pickle shares through its memo (PyTorch shares one frames list between the entries
/// with the same stack) are copied into each place that refers to them; invalid UTF-8 in a str is
/// repaired as encode_pickle() does.
/// \throws vramlab::UsageError saying what is wrong and at which byte offset (truncated data, an
/// opcode outside that subset such as a class reference, nesting deeper than 1000 or a container
/// that holds itself, more than 2^31 items, or a result larger than max(2^20, 256 × the input's
/// bytes) items once shared objects are copied: the bound that stops a few bytes of nested
/// references from expanding into gigabytes).
nlohmann::json decode_pickle(std::string_view bytes);

/// Reads a snapshot file: a pickle (first byte 0x80) or JSON.
/// \throws vramlab::UsageError naming \p path when it cannot be read or decoded.
nlohmann::json read_snapshot_file(const std::string& path);

}  // namespace vramlab::snapshot
