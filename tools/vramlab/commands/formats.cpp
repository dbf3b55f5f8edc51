// `vramlab formats`: the number formats' bit layouts and limits, derived from the layouts
// (common/dtype/format_info.h), one row per format.
//
//   vramlab formats                  every floating-point format (f32, tf32, bf16, f16, fp8)
//   vramlab formats --dtype e4m3     one format (any dtype name or alias; integers show min/max)
//   vramlab formats --json           {"formats": [...]} for scripts
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/dtype/format_info.h"
#include "common/platform/errors.h"
#include "common/report/table.h"
#include "common/report/terminal.h"
#include "tools/vramlab/commands.h"

namespace vramlab::cli {

namespace {

using nlohmann::json;

// An integer dtype's range.
struct IntegerFormat {
  std::string name;
  int bits;
  int64_t min;
  uint64_t max;
};

template <class T>
IntegerFormat integer_format(DType dtype) {
  return {std::string(dtype_name(dtype)), static_cast<int>(8 * sizeof(T)),
          static_cast<int64_t>(std::numeric_limits<T>::min()),
          static_cast<uint64_t>(std::numeric_limits<T>::max())};
}

IntegerFormat describe_integer(DType dtype) {
  switch (dtype) {
    case DType::i8:
      return integer_format<int8_t>(dtype);
    case DType::u8:
      return integer_format<uint8_t>(dtype);
    case DType::i32:
      return integer_format<int32_t>(dtype);
    case DType::i64:
      return integer_format<int64_t>(dtype);
    default:
      throw std::logic_error("describe_integer: '" + std::string(dtype_name(dtype)) +
                             "' is not an integer dtype");
  }
}

// Integers below 10^7 print in full ("65504"); other values with 5 significant digits, and exact
// powers of two also as 2^k ("6.1035e-05 (2^-14)").
std::string format_value(double value) {
  char text[64];
  if (value == std::floor(value) && value < 1e7) {
    std::snprintf(text, sizeof(text), "%.0f", value);
    return text;
  }
  std::snprintf(text, sizeof(text), "%.5g", value);
  int exponent = 0;
  if (std::frexp(value, &exponent) == 0.5) {
    return std::string(text) + " (2^" + std::to_string(exponent - 1) + ")";
  }
  return text;
}

json float_json(const FloatFormatInfo& f) {
  return json{{"name", f.name},
              {"kind", "float"},
              {"total_bits", f.total_bits},
              {"exponent_bits", f.exponent_bits},
              {"mantissa_bits", f.mantissa_bits},
              {"bias", f.bias},
              {"max_finite", f.max_finite},
              {"max_exponent", f.max_exponent},
              {"min_normal", f.min_normal},
              {"min_normal_exponent", f.min_normal_exponent},
              {"min_subnormal", f.min_subnormal},
              {"min_subnormal_exponent", f.min_subnormal_exponent},
              {"epsilon", f.epsilon},
              {"has_infinity", f.has_infinity},
              {"infinity_pattern", f.has_infinity ? json(f.infinity_pattern) : json(nullptr)},
              {"nan_patterns", f.nan_patterns},
              {"nan_pattern_count", f.nan_pattern_count}};
}

json integer_json(const IntegerFormat& f) {
  return json{{"name", f.name},
              {"kind", "integer"},
              {"total_bits", f.bits},
              {"min", f.min},
              {"max", f.max}};
}

void print_float_table(const std::vector<const FloatFormatInfo*>& formats, bool colour) {
  using report::Align;
  report::Table table({{"format"},
                       {"bits", Align::kRight},
                       {"exp/man", Align::kRight},
                       {"bias", Align::kRight},
                       {"max", Align::kRight},
                       {"min normal", Align::kRight},
                       {"min subnormal", Align::kRight},
                       {"epsilon", Align::kRight},
                       {"inf"},
                       {"NaN patterns"}});
  for (const FloatFormatInfo* f : formats) {
    table.add_row({f->name, std::to_string(f->total_bits),
                   std::to_string(f->exponent_bits) + "/" + std::to_string(f->mantissa_bits),
                   std::to_string(f->bias), format_value(f->max_finite),
                   format_value(f->min_normal), format_value(f->min_subnormal),
                   format_value(f->epsilon), f->has_infinity ? "yes" : "no",
                   f->nan_patterns + " (" + std::to_string(f->nan_pattern_count) + ")"});
  }
  std::fputs(table.render(colour).c_str(), stdout);
  std::fputs(
      "\nAll values are derived from the bit layouts. tf32 is stored in 32 bits (Tensor Cores read "
      "19).\nfp8_e4m3 (OCP) has no infinity: conversions saturate to +-448 or give NaN.\n",
      stdout);
}

void print_integer_table(const IntegerFormat& f, bool colour) {
  using report::Align;
  report::Table table(
      {{"format"}, {"bits", Align::kRight}, {"min", Align::kRight}, {"max", Align::kRight}});
  table.add_row({f.name, std::to_string(f.bits), std::to_string(f.min), std::to_string(f.max)});
  std::fputs(table.render(colour).c_str(), stdout);
}

struct FormatsOptions {
  std::string dtype;
  bool json = false;
};

void run_formats(const FormatsOptions& options) {
  std::vector<const FloatFormatInfo*> floats;
  std::optional<IntegerFormat> integer;
  if (options.dtype.empty()) {
    for (const FloatFormatInfo& f : float_formats()) floats.push_back(&f);
  } else if (const FloatFormatInfo* f = find_float_format(options.dtype)) {
    floats.push_back(f);  // includes tf32, which is a format but not a storage dtype
  } else {
    const DType dtype = parse_dtype(options.dtype);
    if (dtype_is_floating(dtype)) {
      floats.push_back(&float_format_info(dtype));
    } else {
      integer = describe_integer(dtype);
    }
  }
  if (options.json) {
    json list = json::array();
    for (const FloatFormatInfo* f : floats) list.push_back(float_json(*f));
    if (integer) list.push_back(integer_json(*integer));
    std::printf("%s\n", json{{"formats", list}}.dump(2).c_str());
  } else if (integer) {
    print_integer_table(*integer, report::use_colour(stdout));
  } else {
    print_float_table(floats, report::use_colour(stdout));
  }
}

}  // namespace

void add_formats_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "formats",
      "Number formats (f32, tf32, bf16, f16, fp8): bit layouts, ranges, epsilon, NaN/inf");
  auto options = std::make_shared<FormatsOptions>();
  cmd->add_option("--dtype", options->dtype,
                  "Show one format: f32, tf32, bf16, f16, fp8_e4m3, fp8_e5m2, i8, u8, i32, i64 "
                  "(or an alias such as half, bfloat16, e4m3)");
  cmd->add_flag("--json", options->json, "Print one JSON object {\"formats\": [...]}");
  cmd->callback([options, &exit_code] {
    run_formats(*options);
    exit_code = 0;
  });
}

}  // namespace vramlab::cli
