// Table: column widths measured in terminal columns, padding by alignment, optional row styles.
#include "common/report/table.h"

#include <algorithm>
#include <stdexcept>

#include "common/report/terminal.h"

namespace vramlab::report {
namespace {

// Decodes one UTF-8 sequence at text[at]; returns the code point and advances `at`.
// A malformed byte decodes as itself (one column) so width never stalls.
char32_t decode_utf8(std::string_view text, size_t& at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  size_t length = 1;
  char32_t code_point = lead;
  if (lead >= 0xF0 && lead < 0xF8) {
    length = 4;
    code_point = lead & 0x07u;
  } else if (lead >= 0xE0) {
    length = lead < 0xF0 ? 3 : 1;
    code_point = lead & 0x0Fu;
  } else if (lead >= 0xC0) {
    length = 2;
    code_point = lead & 0x1Fu;
  }
  if (length == 1 || at + length > text.size()) {
    ++at;
    return lead;
  }
  for (size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[at + i]);
    if ((next & 0xC0u) != 0x80u) {
      ++at;
      return lead;
    }
    code_point = (code_point << 6) | (next & 0x3Fu);
  }
  at += length;
  return code_point;
}

bool is_zero_width(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) ||
         (c >= 0xFE00 && c <= 0xFE0F);
}

bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
         (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
         (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

std::string styled(const std::string& text, RowStyle row_style, bool colour) {
  switch (row_style) {
    case RowStyle::kNormal:
      return text;
    case RowStyle::kBold:
      return style::bold(text, colour);
    case RowStyle::kDim:
      return style::dim(text, colour);
    case RowStyle::kGreen:
      return style::green(text, colour);
    case RowStyle::kRed:
      return style::red(text, colour);
    case RowStyle::kYellow:
      return style::yellow(text, colour);
  }
  return text;
}

}  // namespace

size_t display_width(std::string_view text) {
  size_t width = 0;
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == '\x1b' && at + 1 < text.size() && text[at + 1] == '[') {
      // CSI sequence: parameters and intermediates, then one final byte in 0x40..0x7E.
      at += 2;
      while (at < text.size() && !(text[at] >= 0x40 && text[at] <= 0x7E)) ++at;
      if (at < text.size()) ++at;
      continue;
    }
    const char32_t c = decode_utf8(text, at);
    if (is_zero_width(c)) continue;
    width += is_wide(c) ? 2 : 1;
  }
  return width;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {
  if (columns_.empty()) throw std::invalid_argument("Table needs at least one column, got 0");
}

void Table::add_row(std::vector<std::string> cells, RowStyle row_style) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument("Table row has " + std::to_string(cells.size()) +
                                " cells but the table has " + std::to_string(columns_.size()) +
                                " columns");
  }
  rows_.push_back(Row{std::move(cells), row_style});
}

void Table::add_rule() {
  rows_.push_back(Row{{}, RowStyle::kNormal});
}

size_t Table::row_count() const {
  return static_cast<size_t>(
      std::count_if(rows_.begin(), rows_.end(), [](const Row& row) { return !row.cells.empty(); }));
}

std::string Table::render(bool colour, size_t indent) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) widths[c] = display_width(columns_[c].header);
  for (const Row& row : rows_) {
    for (size_t c = 0; c < row.cells.size(); ++c)
      widths[c] = std::max(widths[c], display_width(row.cells[c]));
  }
  size_t total_width = 0;
  for (size_t c = 0; c < widths.size(); ++c) total_width += widths[c] + (c > 0 ? 2 : 0);

  const std::string margin(indent, ' ');
  const std::string rule = margin + std::string(total_width, '-') + "\n";
  // Pads every cell to its column width; the last left-aligned cell gets no trailing spaces.
  auto format_line = [&](const std::vector<std::string>& cells) {
    std::string line = margin;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) line += "  ";
      const size_t padding = widths[c] - display_width(cells[c]);
      const bool last = c + 1 == cells.size();
      if (columns_[c].align == Align::kRight) line.append(padding, ' ');
      line += cells[c];
      if (columns_[c].align == Align::kLeft && !last) line.append(padding, ' ');
    }
    while (line.size() > margin.size() && line.back() == ' ') line.pop_back();
    return line;
  };

  std::vector<std::string> headers;
  headers.reserve(columns_.size());
  for (const Column& column : columns_) headers.push_back(column.header);
  std::string out = styled(format_line(headers), RowStyle::kBold, colour);
  out += '\n';
  out += rule;
  for (const Row& row : rows_) {
    if (row.cells.empty()) {
      out += rule;
      continue;
    }
    out += styled(format_line(row.cells), row.style, colour);
    out += '\n';
  }
  return out;
}

}  // namespace vramlab::report
