// Tests of common/report/terminal.h: byte/count formatting and the colour rules.
// Run: build/tests/bin/test_report --gtest_filter='FormatBytes.*' (one of its suites)
#include "common/report/terminal.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "common/platform/errors.h"

namespace vramlab::report {
namespace {

TEST(FormatBytes, ExactBelowOneKibibyte) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1), "1 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
}

TEST(FormatBytes, BinaryPrefixesWithTwoDecimals) {
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(2ull << 20), "2.00 MiB");
  EXPECT_EQ(format_bytes((13ull << 30) / 4), "3.25 GiB");
  EXPECT_EQ(format_bytes(1ull << 40), "1.00 TiB");
  EXPECT_EQ(format_bytes(1ull << 50), "1.00 PiB");
  EXPECT_EQ(format_bytes(std::numeric_limits<uint64_t>::max()), "16.00 EiB");
}

TEST(FormatBytes, RoundingNeverPrints1024OfAUnit) {
  EXPECT_EQ(format_bytes((1ull << 20) - 1), "1.00 MiB");
  EXPECT_EQ(format_bytes((1ull << 30) - 1), "1.00 GiB");
  // 1023.99 KiB rounds to 1023.99, which is still below the next unit.
  EXPECT_EQ(format_bytes(1023ull * 1024 + 1013), "1023.99 KiB");
}

TEST(FormatBytes, RandomValuesParseBackWithinHalfAHundredth) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint64_t bytes = rng() >> (rng() % 64);
    const std::string text = format_bytes(bytes);
    double number = 0;
    char unit[8] = {};
    ASSERT_EQ(std::sscanf(text.c_str(), "%lf %7s", &number, unit), 2) << text;
    const std::string unit_name(unit);
    const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double scale = 1;
    bool found = false;
    for (const char* name : names) {
      if (unit_name == name) {
        found = true;
        break;
      }
      scale *= 1024;
    }
    ASSERT_TRUE(found) << text;
    EXPECT_LT(number, 1024.0) << text;
    if (bytes >= 1024) {
      EXPECT_GE(number, 1.0) << text;
    }
    const double error = std::abs(number * scale - static_cast<double>(bytes));
    EXPECT_LE(error, 0.005 * scale + 1e-9 * static_cast<double>(bytes))
        << bytes << " printed as " << text << " (error " << error << " bytes)";
  }
}

TEST(FormatBytesDecimal, ThreeSignificantDigits) {
  EXPECT_EQ(format_bytes_decimal(999), "999 B");
  EXPECT_EQ(format_bytes_decimal(1500), "1.50 kB");
  EXPECT_EQ(format_bytes_decimal(31'400'000'000ull), "31.4 GB");
  EXPECT_EQ(format_bytes_decimal(140'000'000'000ull), "140 GB");
  EXPECT_EQ(format_bytes_decimal(999'600'000'000ull), "1.00 TB");
  EXPECT_EQ(format_bytes_decimal(1'200'000'000'000ull), "1.20 TB");
}

TEST(FormatBytesOrZero, NegativeCountsAreNoMemory) {
  EXPECT_EQ(format_bytes_or_zero(-1), "0 B");
  EXPECT_EQ(format_bytes_or_zero(std::numeric_limits<int64_t>::min()), "0 B");
  EXPECT_EQ(format_bytes_or_zero(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes_or_zero(std::numeric_limits<int64_t>::max()), "8.00 EiB");
}

TEST(FormatFixedAndPercent, DecimalsSignsAndRounding) {
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(2.5, 0), "2");  // printf rounds half to even
  EXPECT_EQ(format_fixed(-0.0001, 3), "-0.000");
  EXPECT_EQ(format_percent(0.1234), "12.3%");
  EXPECT_EQ(format_percent(0.1234, 2), "12.34%");
  EXPECT_EQ(format_percent(0.0, 1, true), "+0.0%");
  EXPECT_EQ(format_percent(0.125, 1, true), "+12.5%");
  EXPECT_EQ(format_percent(-0.047, 1, true), "-4.7%");
  EXPECT_EQ(format_percent(-0.047), "-4.7%");
}

TEST(FormatCount, ThousandsSeparators) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_count(-42), "-42");
  EXPECT_EQ(format_count(-1234), "-1,234");
  EXPECT_EQ(format_count(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
  EXPECT_EQ(format_count(std::numeric_limits<int64_t>::max()), "9,223,372,036,854,775,807");
}

TEST(FormatCountShort, ParameterCounts) {
  EXPECT_EQ(format_count_short(999), "999");
  EXPECT_EQ(format_count_short(124'000'000), "124M");
  EXPECT_EQ(format_count_short(6'738'415'616), "6.74B");
  EXPECT_EQ(format_count_short(70'000'000'000), "70.0B");
  EXPECT_EQ(format_count_short(999'999), "1.00M");
}

TEST(FormatDuration, PicksAReadableUnit) {
  EXPECT_EQ(format_duration_ms(0.85), "850 us");
  EXPECT_EQ(format_duration_ms(12.34), "12.3 ms");
  EXPECT_EQ(format_duration_ms(4560), "4.56 s");
  EXPECT_EQ(format_duration_ms(185'000), "3m 05s");
  EXPECT_EQ(format_duration_ms(3'720'000), "1h 02m");
  EXPECT_EQ(format_duration_ms(-1), "--");
  EXPECT_EQ(format_duration_ms(std::numeric_limits<double>::quiet_NaN()), "--");
  EXPECT_EQ(format_duration_ms(std::numeric_limits<double>::infinity()), "--");
}

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_old_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_old_ = false;
  std::string old_;
};

TEST(UseColour, ForcedByVramlabColor) {
  ScopedEnv no_colour("NO_COLOR", "1");
  {
    ScopedEnv forced("VRAMLAB_COLOR", "always");
    EXPECT_TRUE(use_colour(stdout));
  }
  {
    ScopedEnv forced("VRAMLAB_COLOR", "never");
    EXPECT_FALSE(use_colour(stdout));
  }
}

TEST(UseColour, NeverForAFileEvenWithTermSet) {
  ScopedEnv forced("VRAMLAB_COLOR", nullptr);
  ScopedEnv no_colour("NO_COLOR", nullptr);
  ScopedEnv term("TERM", "xterm-256color");
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_FALSE(use_colour(file));
  std::fclose(file);
  EXPECT_FALSE(use_colour(nullptr));
}

TEST(UseColour, RejectsAnUnknownForcingValue) {
  ScopedEnv forced("VRAMLAB_COLOR", "sometimes");
  try {
    use_colour(stdout);
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("sometimes"), std::string::npos) << error.what();
  }
}

TEST(Style, WrapsOnlyWhenEnabled) {
  EXPECT_EQ(style::red("oom", false), "oom");
  EXPECT_EQ(style::red("oom", true), "\x1b[31moom\x1b[0m");
  EXPECT_EQ(style::bold("x", true), "\x1b[1mx\x1b[0m");
  EXPECT_EQ(style::green("", false), "");
}

}  // namespace
}  // namespace vramlab::report
