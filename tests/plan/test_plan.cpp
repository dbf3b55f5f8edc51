// The plan value (common/plan/plan.h) and its flags (plan_flags.h): every field and every enum
// value survives a JSON round trip, a missing key keeps the reader's default, a key the plan does
// not have, a wrong type or a bad value is refused naming the key, a plan file is read bare or
// wrapped in a command's output, and the flags layer over a plan file.
#include "common/plan/plan.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/plan/plan_flags.h"
#include "common/platform/errors.h"

namespace vramlab::plan {
namespace {

using nlohmann::json;

// A plan with every field drawn at random from its whole range of kinds: each enum value, each
// recompute form, optional loss scale present or not, lists of several lengths. Only plans
// validate() accepts (parameter offload and prefetch with stage 3).
Plan random_plan(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  auto coin = [&] { return pick(2) == 1; };
  auto real = [&](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  };
  Plan p;
  p.amp.precision = kAllPrecisions[pick(4)];
  p.amp.fp32_grads = coin();
  p.amp.stochastic_rounding = coin();
  switch (pick(4)) {
    case 0:
      p.amp.loss_scale.reset();
      break;
    case 1:
      p.amp.loss_scale = LossScaleSpec{LossScaleKind::dynamic, 65536.0};
      break;
    case 2:
      p.amp.loss_scale = LossScaleSpec{LossScaleKind::none, 1.0};
      break;
    default:
      // An odd scale that is not a power of two: the text must carry every digit.
      p.amp.loss_scale =
          LossScaleSpec{LossScaleKind::fixed, std::ldexp(real(1.0f, 2.0f), pick(30))};
  }
  using Kind = RecomputeSpec::Kind;
  switch (pick(6)) {
    case 0:
      p.recompute = {Kind::none, 0, 0};
      break;
    case 1:
      p.recompute = {Kind::full, 0, 0};
      break;
    case 2:
      p.recompute = {Kind::every, 1 + pick(40), 0};
      break;
    case 3:
      p.recompute = {Kind::sqrt, 0, 0};
      break;
    case 4:
      p.recompute = {Kind::selective, 0, 0};
      break;
    default:
      // Both a budget a binary unit divides and one it does not (printed in plain bytes).
      p.recompute = {Kind::budget, 0,
                     coin() ? (int64_t{1} + pick(1000)) << (10 * (1 + pick(3)))
                            : int64_t{1} + static_cast<int64_t>(rng() % (int64_t{1} << 50))};
  }
  p.activations.compression = static_cast<ActivationCompression>(pick(3));
  p.activations.offload = p.activations.compression == ActivationCompression::none && coin();
  p.attention = static_cast<AttentionKind>(pick(2));
  p.optimizer.name = static_cast<Optimizer>(pick(7));
  p.optimizer.learning_rate = real(1e-7f, 1.0f);
  p.optimizer.weight_decay = coin() ? 0.0f : real(0.0f, 0.3f);
  p.optimizer.max_grad_norm = coin() ? 0.0f : real(0.0f, 10.0f);
  p.optimizer.eight_bit.block_size = 1 + pick(4096);
  p.optimizer.eight_bit.min_8bit_size = pick(100000);
  p.optimizer.eight_bit.fp32_embeddings = coin();
  p.batch.grad_accum = 1 + pick(64);
  p.batch.micro_batch_sizes.clear();
  for (int i = pick(5); i > 0; --i) p.batch.micro_batch_sizes.push_back(1 + pick(9));
  p.parallel.data_parallel = 1 + pick(1024);
  p.parallel.zero = static_cast<ZeroStage>(pick(4));
  p.parallel.tensor_parallel = 1 + pick(8);
  p.parallel.sequence_parallel = coin();
  p.parallel.prefetch = p.parallel.zero == ZeroStage::parameters && coin();
  p.offload.optimizer = coin();
  p.offload.parameters = p.parallel.zero == ZeroStage::parameters && coin();
  p.offload.overlap = !p.offload.optimizer || coin();
  p.offload.delay_update_from = p.offload.optimizer && coin() ? 1 + pick(100) : 0;
  p.offload.tiled_copy_back = p.offload.optimizer && coin();
  const bool elementwise =
      p.optimizer.name == Optimizer::sgd || p.optimizer.name == Optimizer::sgd_momentum ||
      p.optimizer.name == Optimizer::adamw || p.optimizer.name == Optimizer::lion;
  p.offload.optimizer_device =
      p.offload.optimizer && p.parallel.zero == ZeroStage::parameters && elementwise && coin()
          ? OffloadDevice::nvme
          : OffloadDevice::cpu;
  p.offload.param_device =
      p.offload.parameters && p.offload.optimizer_device == OffloadDevice::nvme && coin()
          ? OffloadDevice::nvme
          : OffloadDevice::cpu;
  p.offload.pin_memory = !p.offload.optimizer || coin();
  p.dropout.p = coin() ? 0.0f : real(0.0f, 0.99f);
  p.dropout.preserve_rng_state = coin();
  return p;
}

TEST(PlanJson, RandomPlansRoundTripThroughTheirText) {
  std::mt19937_64 rng(20261129);
  for (int i = 0; i < 500; ++i) {
    const Plan plan = random_plan(rng);
    // Through the text, as a file carries it: every float must come back to the same bits.
    const json back = json::parse(to_json(plan).dump());
    EXPECT_EQ(plan_from_json(back), plan) << back.dump();
  }
}

TEST(PlanJson, EveryEnumValueRoundTrips) {
  for (const Precision value : kAllPrecisions) {
    Plan p;
    p.amp.precision = value;
    EXPECT_EQ(plan_from_json(to_json(p)).amp.precision, value);
  }
  for (int v = 0; v < 7; ++v) {
    Plan p;
    p.optimizer.name = static_cast<Optimizer>(v);
    EXPECT_EQ(plan_from_json(to_json(p)).optimizer.name, p.optimizer.name);
  }
  for (int v = 0; v < 3; ++v) {
    Plan p;
    p.activations.compression = static_cast<ActivationCompression>(v);
    EXPECT_EQ(plan_from_json(to_json(p)).activations.compression, p.activations.compression);
  }
  for (int v = 0; v < 2; ++v) {
    Plan p;
    p.attention = static_cast<AttentionKind>(v);
    EXPECT_EQ(plan_from_json(to_json(p)).attention, p.attention);
  }
  for (int v = 0; v < 4; ++v) {
    Plan p;
    p.parallel.zero = static_cast<ZeroStage>(v);
    EXPECT_EQ(plan_from_json(to_json(p)).parallel.zero, p.parallel.zero);
  }
}

TEST(PlanJson, FloatsPrintAsTheirShortestDecimal) {
  Plan p;
  p.optimizer.learning_rate = 0.001f;
  p.dropout.p = 0.1f;
  const json j = to_json(p);
  EXPECT_EQ(j["optimizer"]["learning_rate"].dump(), "0.001");
  EXPECT_EQ(j["dropout"]["p"].dump(), "0.1");
}

TEST(PlanJson, AMissingKeyKeepsTheReadersDefault) {
  Plan defaults;
  defaults.amp.precision = Precision::mixed_bf16;
  defaults.optimizer.learning_rate = 0.25f;
  const Plan p = plan_from_json(json::parse(R"({"optimizer": {"name": "lion"}})"), defaults);
  EXPECT_EQ(p.amp.precision, Precision::mixed_bf16);
  EXPECT_EQ(p.optimizer.learning_rate, 0.25f);
  EXPECT_EQ(p.optimizer.name, Optimizer::lion);
  EXPECT_EQ(plan_from_json(json::object(), defaults), defaults);
}

// \p text must be refused with a message holding each of \p parts.
void expect_refused(const std::string& text, const std::vector<std::string>& parts) {
  try {
    (void)plan_from_json(json::parse(text));
    ADD_FAILURE() << "accepted " << text;
  } catch (const UsageError& e) {
    const std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << text << " -> " << message;
  }
}

TEST(PlanJson, RefusesUnknownKeysWrongTypesAndBadValuesNamingTheKey) {
  expect_refused(R"({"amp": {"precison": "fp32"}})", {"\"precison\"", "plan.amp", "precision"});
  expect_refused(R"({"optimiser": {}})", {"\"optimiser\"", "optimizer"});
  expect_refused(R"([1, 2])", {"plan", "object"});
  expect_refused(R"({"amp": {"precision": "fp64"}})", {"plan.amp.precision", "'fp64'"});
  expect_refused(R"({"amp": {"precision": 32}})", {"plan.amp.precision", "a string", "32"});
  expect_refused(R"({"amp": {"fp32_grads": "yes"}})", {"plan.amp.fp32_grads", "\"yes\""});
  expect_refused(R"({"amp": {"loss_scale": "static:0"}})", {"plan.amp.loss_scale", "static:0"});
  expect_refused(R"({"recompute": "every:0"})", {"plan.recompute", "every:0"});
  expect_refused(R"({"optimizer": {"learning_rate": -1}})", {"--lr", "-1"});
  expect_refused(R"({"optimizer": {"learning_rate": 1e300}})", {"learning_rate", "1e+300"});
  expect_refused(R"({"optimizer": {"eight_bit": {"block_size": 2.5}}})",
                 {"plan.optimizer.eight_bit.block_size", "an integer", "2.5"});
  expect_refused(R"({"optimizer": {"eight_bit": {"block_size": 0}}})", {"block size", "0"});
  expect_refused(R"({"batch": {"grad_accum": 18446744073709551615}})",
                 {"plan.batch.grad_accum", "18446744073709551615"});
  expect_refused(R"({"batch": {"micro_batch_sizes": [2, "x"]}})",
                 {"plan.batch.micro_batch_sizes[1]", "\"x\""});
  expect_refused(R"({"batch": {"micro_batch_sizes": [2, 0]}})", {"micro-batch", "0"});
  expect_refused(R"({"parallel": {"zero": "zero4"}})", {"plan.parallel.zero", "'zero4'", "zero3"});
  expect_refused(R"({"parallel": {"tensor_parallel": 0}})", {"--tp", "0"});
  expect_refused(R"({"parallel": {"prefetch": true}})", {"--prefetch", "--zero 3"});
  expect_refused(R"({"offload": {"parameters": true}})", {"offload", "stage 3"});
  expect_refused(R"({"offload": {"overlap": false}})", {"--offload-overlap off", "optimizer"});
  expect_refused(R"({"offload": {"delay_update_from": 3}})", {"--offload-dpu 3", "optimizer"});
  expect_refused(R"({"offload": {"tiled_copy_back": true}})",
                 {"--offload-copy-back tiled", "optimizer"});
  expect_refused(R"({"offload": {"pin_memory": false}})",
                 {"--offload-pin-memory off", "--offload optimizer"});
  expect_refused(R"({"offload": {"optimizer_device": "nvme"}})",
                 {"--offload-optimizer-device nvme", "--offload optimizer"});
  expect_refused(
      R"({"parallel": {"zero": "zero2"}, "offload": {"optimizer": true, "optimizer_device": "nvme"}})",
      {"--offload-optimizer-device nvme", "--zero 3", "stage 2"});
  expect_refused(
      R"({"parallel": {"zero": "zero3"}, "offload": {"optimizer": true, "optimizer_device": "nvme", "param_device": "nvme"}})",
      {"--offload-param-device nvme", "--offload both", "--offload optimizer"});
  expect_refused(
      R"({"parallel": {"zero": "zero3"}, "offload": {"optimizer": true, "parameters": true, "param_device": "nvme"}})",
      {"--offload-param-device nvme", "--offload-optimizer-device nvme"});
  expect_refused(R"({"offload": {"optimizer": true, "optimizer_device": "disk"}})",
                 {"offload device", "disk"});
  expect_refused(R"({"offload": {"optimizer": true, "delay_update_from": -2}})",
                 {"--offload-dpu", "-2"});
  expect_refused(R"({"dropout": {"p": 1}})", {"--dropout", "1"});
}

class PlanFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("plan_file_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(PlanFile, ReadsABarePlanOrTheOneACommandPrinted) {
  std::mt19937_64 rng(7);
  const Plan plan = random_plan(rng);
  EXPECT_EQ(read_plan_file(write("bare.json", to_json(plan).dump())), plan);
  const json summary{{"summary", true}, {"loss", 3.5}, {"plan", to_json(plan)}};
  EXPECT_EQ(read_plan_file(write("summary.json", summary.dump(2))), plan);
}

TEST_F(PlanFile, NamesThePathOfAMissingOrBadFile) {
  const std::string missing = (dir_ / "missing.json").string();
  EXPECT_THROW(
      {
        try {
          (void)read_plan_file(missing);
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
          throw;
        }
      },
      UsageError);
  const std::string broken = write("broken.json", "{\"amp\": ");
  EXPECT_THROW((void)read_plan_file(broken), UsageError);
  // A directory opens as a stream and fails only when read: refused before, by name.
  try {
    (void)read_plan_file(dir_.string());
    ADD_FAILURE() << "read a directory as a plan";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(dir_.string() + "': is a directory"), std::string::npos)
        << e.what();
  }
  const std::string typo = write("typo.json", R"({"plan": {"attention": "flesh"}})");
  try {
    (void)read_plan_file(typo);
    ADD_FAILURE() << "accepted a typo";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(typo), std::string::npos) << message;
    EXPECT_NE(message.find("'flesh'"), std::string::npos) << message;
  }
}

// Parses \p args as a command with every plan flag, over \p defaults.
Plan parse_flags(std::vector<std::string> args, const Plan& defaults = {}) {
  CLI::App app("test");
  PlanFlags flags(app, defaults, kAllPlanFlags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  app.parse(args);
  return flags.plan();
}

TEST(PlanFlagsTest, OffloadActivationsSetsItsFieldAndRefusesInt8BesideIt) {
  EXPECT_TRUE(parse_flags({"--offload-activations", "on"}).activations.offload);
  Plan on;
  on.activations.offload = true;
  EXPECT_FALSE(parse_flags({"--offload-activations", "off"}, on).activations.offload);
  EXPECT_THROW(parse_flags({"--offload-activations", "yes"}), CLI::ValidationError);
  try {
    (void)parse_flags({"--offload-activations", "on", "--compress-activations", "int8"});
    ADD_FAILURE() << "int8 compression beside activation offload was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--compress-activations int8"), std::string::npos)
        << e.what();
  }
}

TEST(PlanFlagsTest, EachFlagSetsItsField) {
  Plan expected;
  expected.amp = {Precision::mixed_fp16, true, true, LossScaleSpec{LossScaleKind::fixed, 1024.0}};
  expected.recompute = parse_recompute_spec("budget:64MiB");
  expected.activations.compression = ActivationCompression::int8_block;
  expected.attention = AttentionKind::flash;
  expected.optimizer = {Optimizer::adamw_8bit, 3e-4f, 0.0f, 1.5f, {128, 100, true}};
  expected.batch.grad_accum = 4;
  expected.parallel = {8, ZeroStage::parameters, 2, true, true};
  expected.offload = {true, true, false, 40, true};
  expected.dropout.p = 0.1f;
  const Plan got = parse_flags({"--precision",
                                "mixed-fp16",
                                "--fp32-grads",
                                "--stochastic-rounding",
                                "--loss-scale",
                                "static:1024",
                                "--recompute",
                                "budget:64MiB",
                                "--compress-activations",
                                "int8-block",
                                "--attention",
                                "flash",
                                "--optimizer",
                                "adamw-8bit",
                                "--lr",
                                "3e-4",
                                "--block-size",
                                "128",
                                "--min-8bit-size",
                                "100",
                                "--fp32-embeddings",
                                "--clip-grad-norm",
                                "1.5",
                                "--grad-accum",
                                "4",
                                "--zero",
                                "3",
                                "--dp",
                                "8",
                                "--tp",
                                "2",
                                "--sp",
                                "--prefetch",
                                "--offload",
                                "both",
                                "--offload-overlap",
                                "off",
                                "--offload-dpu",
                                "40",
                                "--offload-copy-back",
                                "tiled",
                                "--dropout",
                                "0.1"});
  EXPECT_EQ(got, expected) << to_json(got).dump() << "\n" << to_json(expected).dump();
}

TEST(PlanFlagsTest, NoFlagsGiveTheCommandsDefaults) {
  Plan defaults;
  defaults.amp.precision = Precision::mixed_bf16;
  defaults.optimizer.learning_rate = 0.5f;
  EXPECT_EQ(parse_flags({}, defaults), defaults);
}

TEST_F(PlanFile, FlagsChangeThePlanOfAFileAndOnlyWhatTheyName) {
  Plan in_file;
  in_file.amp.precision = Precision::bf16;
  in_file.recompute = parse_recompute_spec("every:3");
  in_file.optimizer.name = Optimizer::lion;
  in_file.optimizer.learning_rate = 2e-4f;
  const std::string path = write("plan.json", to_json(in_file).dump());
  EXPECT_EQ(parse_flags({"--plan", path}), in_file);
  Plan expected = in_file;
  expected.optimizer.learning_rate = 1e-5f;
  expected.attention = AttentionKind::flash;
  EXPECT_EQ(parse_flags({"--plan", path, "--lr", "1e-5", "--attention", "flash"}), expected);
}

TEST(PlanFlagsTest, RefusesBadValuesNamingThem) {
  const std::vector<std::vector<std::string>> bad = {{"--precision", "fp64"},
                                                     {"--optimizer", "adam"},
                                                     {"--attention", "sparse"},
                                                     {"--recompute", "every:0"},
                                                     {"--loss-scale", "big"},
                                                     {"--lr", "-1"},
                                                     {"--lr", "0"},
                                                     {"--block-size", "0"},
                                                     {"--min-8bit-size", "-1"},
                                                     {"--grad-accum", "0"},
                                                     {"--zero", "4"},
                                                     {"--tp", "0"},
                                                     {"--dp", "0"},
                                                     {"--dropout", "1"},
                                                     {"--dropout", "-0.5"},
                                                     {"--offload", "disk"},
                                                     {"--offload-overlap", "maybe"},
                                                     {"--offload-overlap", "off"},
                                                     {"--offload-dpu", "0"},
                                                     {"--offload-dpu", "on"},
                                                     {"--offload-dpu", "3"},
                                                     {"--offload-copy-back", "halves"},
                                                     {"--offload-copy-back", "tiled"},
                                                     {"--clip-grad-norm", "-2"},
                                                     {"--prefetch"}};
  for (const std::vector<std::string>& args : bad) {
    bool refused = false;
    std::string message;
    try {
      (void)parse_flags(args);
    } catch (const CLI::ParseError& e) {
      refused = true;
      message = e.what();
    } catch (const UsageError& e) {
      refused = true;
      message = e.what();
    }
    EXPECT_TRUE(refused) << args[0];
    // The message names the value (or, for a flag without one, the flag).
    EXPECT_NE(message.find(args.back()), std::string::npos) << args[0] << ": " << message;
  }
}

}  // namespace
}  // namespace vramlab::plan
