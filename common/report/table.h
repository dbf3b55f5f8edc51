/// \file
/// \brief An aligned text table, the human output of every vramlab command and lesson.
///
/// Columns are left or right aligned, the header is underlined by a rule, rows may be styled
/// (bold totals, red failures) when colour is enabled. Widths count what a terminal shows: ANSI
/// escape sequences take no room, UTF-8 characters take one column (East Asian wide ones two).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::report {

/// Number of terminal columns \p text occupies: UTF-8 aware, ANSI escape sequences (ESC [ ... final
/// byte) count zero, combining marks zero, East Asian wide and emoji characters two.
size_t display_width(std::string_view text);

/// Horizontal alignment of a table column.
enum class Align {
  kLeft,   ///< text columns (names, categories).
  kRight,  ///< number columns (bytes, counts, percentages).
};

/// Emphasis of a whole table row, applied only when rendering with colour.
enum class RowStyle {
  kNormal,  ///< no styling.
  kBold,    ///< totals and headline rows.
  kDim,     ///< secondary rows (details, skipped items).
  kGreen,   ///< passing / within budget.
  kRed,     ///< failing / over budget.
  kYellow,  ///< warnings / close to the budget.
};

/// One column of a Table.
struct Column {
  std::string header;          ///< header text.
  Align align = Align::kLeft;  ///< alignment of the header and the cells.
};

/// An aligned text table.
///
/// Example:
/// \code
/// Table table({{"category"}, {"bytes", Align::kRight}});
/// table.add_row({"parameter", format_bytes(497'759'232)});
/// std::fputs(table.render(use_colour(stdout)).c_str(), stdout);
/// \endcode
class Table {
 public:
  /// \p columns left to right, at least one.
  /// \throws std::invalid_argument if \p columns is empty.
  explicit Table(std::vector<Column> columns);

  /// Appends a row of one cell per column; \p row_style applies only when rendering with colour.
  /// \throws std::invalid_argument if the number of cells differs from the number of columns.
  void add_row(std::vector<std::string> cells, RowStyle row_style = RowStyle::kNormal);

  /// Appends a horizontal rule (e.g. before a total row).
  void add_rule();

  /// Data rows only; rules are not counted.
  [[nodiscard]] size_t row_count() const;

  /// Renders the table: header, rule, rows; columns separated by two spaces, no trailing spaces,
  /// every line ending in '\\n'.
  /// \param colour emit ANSI codes (bold header, row styles); pass use_colour(stream).
  /// \param indent spaces before every line.
  [[nodiscard]] std::string render(bool colour = false, size_t indent = 0) const;

 private:
  struct Row {
    std::vector<std::string> cells;  // empty = a rule
    RowStyle style;
  };
  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

}  // namespace vramlab::report
