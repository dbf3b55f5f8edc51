// The technique vocabulary (common/plan/techniques.h): each enum's names round-trip, are distinct,
// keep the spellings the flags and JSON outputs have always used, and a bad spelling is refused
// with a message that names it and lists the choices.
#include "common/plan/techniques.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/platform/errors.h"

namespace vramlab::plan {
namespace {

// Every value of an enum whose values are 0..count-1.
template <typename Enum>
std::vector<Enum> all_values(int count) {
  std::vector<Enum> out;
  for (int i = 0; i < count; ++i) out.push_back(static_cast<Enum>(i));
  return out;
}

// \p parse(\p text) must throw a UsageError whose message quotes the text and names \p choice.
template <typename Parse>
void expect_refused(Parse parse, const std::string& text, const std::string& choice) {
  try {
    (void)parse(text);
    ADD_FAILURE() << "accepted '" << text << "'";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'" + text + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(choice), std::string::npos) << message;
  }
}

// Round trip, distinct names, the expected spellings in order, and refusals of near misses.
template <typename Enum, typename Name, typename Parse>
void check_vocabulary(const std::vector<Enum>& values, Name name, Parse parse,
                      const std::vector<std::string>& spellings) {
  ASSERT_EQ(values.size(), spellings.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string text(name(values[i]));
    EXPECT_EQ(text, spellings[i]);
    EXPECT_EQ(parse(text), values[i]) << text;
    EXPECT_TRUE(seen.insert(text).second) << "two values are called " << text;
    std::string upper = text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    expect_refused(parse, upper, spellings.back());  // names are case-sensitive
    expect_refused(parse, text + " ", spellings.front());
  }
  expect_refused(parse, "", spellings.front());
}

TEST(Techniques, PrecisionNamesRoundTripInTheLessonsOrder) {
  check_vocabulary(all_values<Precision>(4), precision_name, parse_precision,
                   {"fp32", "bf16", "mixed-fp16", "mixed-bf16"});
  expect_refused(parse_precision, "fp16", "mixed-fp16");
  ASSERT_EQ(std::size(kAllPrecisions), 4u);
  std::set<Precision> listed(std::begin(kAllPrecisions), std::end(kAllPrecisions));
  EXPECT_EQ(listed.size(), 4u) << "kAllPrecisions lists every precision once";
  for (const Precision p : kAllPrecisions)
    EXPECT_EQ(is_mixed(p), p == Precision::mixed_fp16 || p == Precision::mixed_bf16);
}

TEST(Techniques, OptimizerNamesRoundTrip) {
  check_vocabulary(
      all_values<Optimizer>(7), optimizer_name, parse_optimizer,
      {"sgd", "sgd-momentum", "adamw", "adamw-8bit", "lion", "adam-mini", "adafactor"});
  expect_refused(parse_optimizer, "adagrad", "adamw-8bit");
}

TEST(Techniques, AttentionAndCompressionNamesRoundTrip) {
  check_vocabulary(all_values<AttentionKind>(2), attention_kind_name, parse_attention_kind,
                   {"naive", "flash"});
  check_vocabulary(all_values<ActivationCompression>(3), compression_name, parse_compression,
                   {"none", "int8", "int8-block"});
  expect_refused(parse_compression, "int4", "int8-block");
}

TEST(Techniques, ZeroStagesAreZeroToThreeAndNamedAfterDeepSpeed) {
  const std::vector<std::string> names = {"ddp", "zero1", "zero2", "zero3"};
  for (int64_t stage = 0; stage <= 3; ++stage) {
    const ZeroStage z = zero_stage_from_int(stage);
    EXPECT_EQ(static_cast<int64_t>(z), stage);
    EXPECT_EQ(zero_stage_name(z), names[static_cast<size_t>(stage)]);
  }
  for (const int64_t bad : {int64_t{-1}, int64_t{4}, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max()}) {
    try {
      (void)zero_stage_from_int(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
}

TEST(Techniques, AValueOutsideAnEnumIsAnInternalErrorNotAName) {
  EXPECT_THROW((void)precision_name(static_cast<Precision>(9)), std::logic_error);
  EXPECT_THROW((void)optimizer_name(static_cast<Optimizer>(-1)), std::logic_error);
  EXPECT_THROW((void)attention_kind_name(static_cast<AttentionKind>(2)), std::logic_error);
  EXPECT_THROW((void)compression_name(static_cast<ActivationCompression>(3)), std::logic_error);
  EXPECT_THROW((void)zero_stage_name(static_cast<ZeroStage>(4)), std::logic_error);
}

TEST(Techniques, LossScaleParsesTheThreeKindsAndRefusesTheRest) {
  EXPECT_EQ(parse_loss_scale("dynamic").kind, LossScaleKind::dynamic);
  EXPECT_EQ(parse_loss_scale("dynamic").value, 65536.0) << "GradScaler's init_scale, 2^16";
  EXPECT_EQ(parse_loss_scale("none").kind, LossScaleKind::none);
  const LossScaleSpec s = parse_loss_scale("static:128.5");
  EXPECT_EQ(s.kind, LossScaleKind::fixed);
  EXPECT_EQ(s.value, 128.5);
  for (const char* text : {"dynamic", "none", "static:1024", "static:0.5", "static:65536"})
    EXPECT_EQ(loss_scale_name(parse_loss_scale(text)), text);
  const double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(parse_loss_scale(loss_scale_name({LossScaleKind::fixed, tiny})).value, tiny)
      << "the printed scale parses back to the same double";
  for (const char* bad : {"", "Dynamic", "static:", "static:0", "static:-4", "static:inf",
                          "static:nan", "static:12x", "1024"}) {
    try {
      (void)parse_loss_scale(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Techniques, EightBitDefaultsAreBitsandbytesAndBadSettingsAreRefusedByValue) {
  const EightBitOptions defaults;
  EXPECT_EQ(defaults.block_size, 256) << "bitsandbytes' block size since its PR #1365";
  EXPECT_EQ(defaults.min_8bit_size, 4096) << "bitsandbytes' min_8bit_size";
  EXPECT_FALSE(defaults.fp32_embeddings);
  EXPECT_NO_THROW(defaults.validate());
  EXPECT_NO_THROW((EightBitOptions{1, 0, true}.validate())) << "the smallest legal settings";
  for (const EightBitOptions bad : {EightBitOptions{0, 4096, false}, EightBitOptions{-7, 4096, false},
                                    EightBitOptions{256, -1, false}}) {
    try {
      bad.validate();
      ADD_FAILURE() << "accepted block " << bad.block_size << ", min " << bad.min_8bit_size;
    } catch (const UsageError& e) {
      const int64_t value = bad.block_size < 1 ? bad.block_size : bad.min_8bit_size;
      EXPECT_NE(std::string(e.what()).find("got " + std::to_string(value)), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::plan
