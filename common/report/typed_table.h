/// \file
/// \brief A table whose columns know what they hold: a JSON key, a header and a unit. One table
/// renders to the terminal (each unit formats its cells: bytes as "1.50 GiB", a fraction as
/// "12.5%"), to Markdown, and to JSON (the raw values under the keys). A lesson describes a row
/// once, as a list of TypedColumn<Row>, and gets its `--json` objects and its text table from it.
///
/// Example:
/// \code
/// const report::TypedColumns<Run> columns = {
///     {{"name", "optimizer"}, [](const Run& r) { return r.name; }},
///     {{"state_bytes", "states", Unit::bytes}, [](const Run& r) { return r.state_bytes; }},
///     {{"seconds", "", Unit::seconds}, [](const Run& r) { return r.seconds; }},  // JSON only
/// };
/// report::TypedTable table = report::table_of(columns, runs);
/// std::fputs(table.render(colour).c_str(), stdout);  // two columns
/// nlohmann::json j = table.json();                     // [{"name", "state_bytes", "seconds"}]
/// \endcode
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/table.h"

namespace vramlab::report {

/// How a column's values read on the terminal and in Markdown. JSON always holds the raw value.
enum class Unit {
  text,            ///< as given; a bool reads "yes" / "no".
  integer,         ///< 1234567
  count,           ///< 1,234,567
  bytes,           ///< binary units, "1.50 GiB"; 0 reads "0 B".
  bytes_decimal,   ///< decimal units, "56.00 GB".
  fixed,           ///< `decimals` digits after the point.
  general,         ///< printf's %g: learning rates, 0.001 and 3e-05.
  percent,         ///< a fraction as a percentage, `decimals` digits: 0.125 reads "12.5%".
  signed_percent,  ///< the same with a sign: "+4.2%", "-0.3%".
  seconds,         ///< `decimals` digits and " s".
  ratio,           ///< `decimals` digits and "x".
  per_param,       ///< bytes per parameter: two digits, four below 0.1 (Adafactor's 0.0021).
};

/// \param name a unit's name as spelled in the enum above ("bytes", "signed_percent", ...).
/// \return the unit. \throws vramlab::UsageError naming \p name and the choices.
Unit parse_unit(std::string_view name);

/// One cell: nothing (reads "-", JSON null), a bool, an integer, a real number or text. A
/// non-finite number is null in JSON (as nlohmann::json dumps NaN) and "-" on the terminal.
class Value {
 public:
  /// Nothing: "-" on the terminal, null in JSON.
  Value() = default;
  /// \param value a bool: "yes" / "no" as text.
  Value(bool value) : v_(value) {}  // NOLINT(google-explicit-constructor): cells read as values
  /// \param value any integer but bool, kept as 64 bits.
  template <std::integral T>
  requires(!std::same_as<T, bool>) Value(T value)
      : v_(static_cast<int64_t>(value)) {}  // NOLINT(google-explicit-constructor)
  /// \param value a float or double, kept as a double.
  template <std::floating_point T>
  Value(T value) : v_(static_cast<double>(value)) {}  // NOLINT(google-explicit-constructor)
  /// \param value text, shown as is whatever the unit (right-aligned in a number column).
  Value(std::string value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  /// \param value text.
  Value(const char* value) : v_(std::string(value)) {}  // NOLINT(google-explicit-constructor)
  /// \param value text.
  Value(std::string_view value)  // NOLINT(google-explicit-constructor)
      : v_(std::string(value)) {}

  /// \return the value in JSON: null, a boolean, a number or a string.
  [[nodiscard]] nlohmann::json json() const;
  /// \param unit how it reads. \param decimals digits for the units that take them.
  /// \return the text of its cell.
  [[nodiscard]] std::string format(Unit unit, int decimals) const;
  /// \return whether it holds nothing.
  [[nodiscard]] bool empty() const { return std::holds_alternative<std::monostate>(v_); }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string> v_;
};

/// What a column is. A column with no key appears on the terminal and in Markdown only; one with
/// no header appears in JSON only.
struct Field {
  std::string key;         ///< its JSON key ("" = not in JSON).
  std::string header;      ///< its header ("" = not in the text table).
  Unit unit = Unit::text;  ///< how its cells read; text is left-aligned, every other unit right.
  /// Digits after the point for fixed, percent, signed_percent, seconds and ratio; -1: the
  /// unit's own (one for a percentage, two for the others).
  int decimals = -1;
};

/// A table of typed values. Rows hold one Value per field.
class TypedTable {
 public:
  /// \param fields left to right, at least one. \throws std::invalid_argument when empty.
  explicit TypedTable(std::vector<Field> fields);

  /// Appends a row. \param values one per field. \param style applies on the terminal with colour.
  /// \throws std::invalid_argument if the number of values differs from the number of fields.
  void add_row(std::vector<Value> values, RowStyle style = RowStyle::kNormal);
  /// Appends a rule (e.g. before a total) to the text and Markdown forms.
  void add_rule();

  /// \return the rows, rules not counted.
  [[nodiscard]] size_t row_count() const;
  /// \param colour ANSI styles. \param indent spaces before each line. \return the text table of
  /// the fields with a header (Table::render).
  [[nodiscard]] std::string render(bool colour = false, size_t indent = 0) const;
  /// \return a GitHub-flavoured Markdown table of the fields with a header, numbers
  /// right-aligned, `|` in a cell escaped; a rule is left out.
  [[nodiscard]] std::string markdown() const;
  /// \param row a row index (rules not counted). \return that row as a JSON object of the keyed
  /// fields. \throws std::out_of_range for an index past the rows.
  [[nodiscard]] nlohmann::json row_json(size_t row) const;
  /// \return every row as row_json() does, in order.
  [[nodiscard]] nlohmann::json json() const;

 private:
  struct Row {
    std::vector<Value> values;  // empty = a rule
    RowStyle style;
  };
  [[nodiscard]] nlohmann::json object_of(const Row& row) const;

  std::vector<Field> fields_;
  std::vector<Row> rows_;
};

/// A column computed from a row of type Row.
template <class Row>
struct TypedColumn {
  Field field;                             ///< its key, header and unit.
  std::function<Value(const Row&)> value;  ///< its cell of one row.
};

/// The columns of one kind of row, left to right.
template <class Row>
using TypedColumns = std::vector<TypedColumn<Row>>;

/// \param columns the columns. \return an empty table with their fields.
template <class Row>
TypedTable table_of(const TypedColumns<Row>& columns) {
  std::vector<Field> fields;
  fields.reserve(columns.size());
  for (const TypedColumn<Row>& c : columns) fields.push_back(c.field);
  return TypedTable(std::move(fields));
}

/// Appends \p row to \p table, one cell per column. \param table a table from table_of(columns).
/// \param columns its columns. \param row the row. \param style on the terminal with colour.
template <class Row>
void add_row(TypedTable& table, const TypedColumns<Row>& columns, const Row& row,
             RowStyle style = RowStyle::kNormal) {
  std::vector<Value> values;
  values.reserve(columns.size());
  for (const TypedColumn<Row>& c : columns) values.push_back(c.value(row));
  table.add_row(std::move(values), style);
}

/// \param columns the columns. \param rows the rows, in order. \return their table.
template <class Row, class Rows>
TypedTable table_of(const TypedColumns<Row>& columns, const Rows& rows) {
  TypedTable table = table_of(columns);
  for (const Row& row : rows) add_row(table, columns, row);
  return table;
}

/// \param columns the columns. \param row one row. \return its JSON object of the keyed columns.
template <class Row>
nlohmann::json record_json(const TypedColumns<Row>& columns, const Row& row) {
  nlohmann::json j = nlohmann::json::object();
  for (const TypedColumn<Row>& c : columns)
    if (!c.field.key.empty()) j[c.field.key] = c.value(row).json();
  return j;
}

}  // namespace vramlab::report
