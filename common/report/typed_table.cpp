// TypedTable: each unit formats its cells; the text form is a report::Table.
#include "common/report/typed_table.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/platform/enum_names.h"
#include "common/report/terminal.h"

namespace vramlab::report {

namespace {

constexpr platform::EnumName<Unit> kUnitNames[] = {
    {"text", Unit::text},
    {"integer", Unit::integer},
    {"count", Unit::count},
    {"bytes", Unit::bytes},
    {"bytes_decimal", Unit::bytes_decimal},
    {"fixed", Unit::fixed},
    {"general", Unit::general},
    {"percent", Unit::percent},
    {"signed_percent", Unit::signed_percent},
    {"seconds", Unit::seconds},
    {"ratio", Unit::ratio},
    {"per_param", Unit::per_param},
};

std::string format_number(double v, Unit unit, int decimals) {
  if (!std::isfinite(v)) return "-";
  if (decimals < 0) decimals = unit == Unit::percent || unit == Unit::signed_percent ? 1 : 2;
  switch (unit) {
    case Unit::fixed:
      return format_fixed(v, decimals);
    case Unit::general: {
      char text[32];
      std::snprintf(text, sizeof text, "%g", v);
      return text;
    }
    case Unit::percent:
      return format_percent(v, decimals);
    case Unit::signed_percent:
      return format_percent(v, decimals, true);
    case Unit::seconds:
      return format_fixed(v, decimals) + " s";
    case Unit::ratio:
      return format_fixed(v, decimals) + "x";
    case Unit::per_param:
      return format_per_param(v);
    case Unit::bytes:
    case Unit::bytes_decimal:
    case Unit::integer:
    case Unit::count:
      // Whole units of a real number: rounded to the nearest (a mean byte count, say).
      if (std::fabs(v) < 9.2e18) {
        const auto whole = static_cast<int64_t>(std::llround(v));
        if (unit == Unit::bytes) return format_bytes_or_zero(whole);
        if (unit == Unit::bytes_decimal)
          return whole < 0 ? "-" + format_bytes_decimal(static_cast<uint64_t>(-whole))
                           : format_bytes_decimal(static_cast<uint64_t>(whole));
        return unit == Unit::count ? format_count(whole) : std::to_string(whole);
      }
      return format_fixed(v, 0);
    case Unit::text:
      break;
  }
  return format_fixed(v, decimals);
}

}  // namespace

Unit parse_unit(std::string_view name) {
  return platform::parse_enum(name, kUnitNames, "unit", platform::ChoiceList::one_of);
}

nlohmann::json Value::json() const {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, double>) {
          return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
        } else {
          return v;
        }
      },
      v_);
}

std::string Value::format(Unit unit, int decimals) const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "-";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "yes" : "no";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, int64_t>) {
          switch (unit) {
            case Unit::text:
            case Unit::integer:
              return std::to_string(v);
            case Unit::count:
              return format_count(v);
            case Unit::bytes:
              return format_bytes_or_zero(v);
            default:
              return format_number(static_cast<double>(v), unit, decimals);
          }
        } else {
          return unit == Unit::text ? format_number(v, Unit::general, decimals)
                                    : format_number(v, unit, decimals);
        }
      },
      v_);
}

TypedTable::TypedTable(std::vector<Field> fields) : fields_(std::move(fields)) {
  if (fields_.empty()) throw std::invalid_argument("TypedTable: at least one field");
}

void TypedTable::add_row(std::vector<Value> values, RowStyle style) {
  if (values.size() != fields_.size())
    throw std::invalid_argument("TypedTable: " + std::to_string(values.size()) + " values for " +
                                std::to_string(fields_.size()) + " fields");
  rows_.push_back({std::move(values), style});
}

void TypedTable::add_rule() {
  rows_.push_back({{}, RowStyle::kNormal});
}

size_t TypedTable::row_count() const {
  size_t n = 0;
  for (const Row& r : rows_) n += !r.values.empty();
  return n;
}

std::string TypedTable::render(bool colour, size_t indent) const {
  std::vector<Column> columns;
  for (const Field& f : fields_)
    if (!f.header.empty())
      columns.push_back({f.header, f.unit == Unit::text ? Align::kLeft : Align::kRight});
  if (columns.empty()) return "";
  Table table(std::move(columns));
  for (const Row& r : rows_) {
    if (r.values.empty()) {
      table.add_rule();
      continue;
    }
    std::vector<std::string> cells;
    for (size_t i = 0; i < fields_.size(); ++i)
      if (!fields_[i].header.empty())
        cells.push_back(r.values[i].format(fields_[i].unit, fields_[i].decimals));
    table.add_row(std::move(cells), r.style);
  }
  return table.render(colour, indent);
}

std::string TypedTable::markdown() const {
  const auto escaped = [](const std::string& text) {
    std::string out;
    for (const char c : text) {
      if (c == '|') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
    return out;
  };
  std::string header = "|", rule = "|";
  for (const Field& f : fields_) {
    if (f.header.empty()) continue;
    header += " " + escaped(f.header) + " |";
    rule += f.unit == Unit::text ? "---|" : "---:|";
  }
  if (header == "|") return "";
  std::string out = header + "\n" + rule + "\n";
  for (const Row& r : rows_) {
    if (r.values.empty()) continue;
    out += "|";
    for (size_t i = 0; i < fields_.size(); ++i)
      if (!fields_[i].header.empty())
        out += " " + escaped(r.values[i].format(fields_[i].unit, fields_[i].decimals)) + " |";
    out += "\n";
  }
  return out;
}

nlohmann::json TypedTable::object_of(const Row& r) const {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < fields_.size(); ++i)
    if (!fields_[i].key.empty()) j[fields_[i].key] = r.values[i].json();
  return j;
}

nlohmann::json TypedTable::row_json(size_t row) const {
  size_t seen = 0;
  for (const Row& r : rows_)
    if (!r.values.empty() && seen++ == row) return object_of(r);
  throw std::out_of_range("TypedTable: row " + std::to_string(row) + " of " + std::to_string(seen));
}

nlohmann::json TypedTable::json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : rows_)
    if (!r.values.empty()) rows.push_back(object_of(r));
  return rows;
}

}  // namespace vramlab::report
