// The model flags as the three commands that take them see them: `vramlab estimate`,
// `vramlab train` and `lesson01_memory_breakdown`, run as processes with the same flags, describe
// the same model (the same parameter count, and the lesson's and the estimator's JSON agree field
// by field), and reject the same bad value with the same message.
//
// Oracle: agreement between the three; the rules themselves are tested on ModelFlags directly
// (tests/estimate/test_model_flags.cpp). The parameter count depends on every shape, the context
// included (GPT-2's position table), so a command that built its model differently would differ.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/cli_run.h"

namespace {

using Result = vramlab::cli_test::CliResult;

Result run(const std::vector<std::string>& argv) {
  return vramlab::cli_test::run_command(argv, 120.0);
}

using nlohmann::json;

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// The lesson binary's --model defaults to gpt2-tiny: explicit shapes need `--model ""` there.
std::vector<std::string> lesson(std::vector<std::string> head,
                                const std::vector<std::string>& flags) {
  if (std::find(flags.begin(), flags.end(), "--model") == flags.end()) {
    head.emplace_back("--model");
    head.emplace_back("");
  }
  return with(std::move(head), flags);
}

// The JSON document that starts at the first line beginning with '{' (stderr may come first).
json document_of(const std::string& out) {
  const size_t start = !out.empty() && out.front() == '{' ? 0 : out.find("\n{") + 1;
  return json::parse(out.substr(start));
}

// The last line of train's JSON stream: the summary.
json train_summary(const std::string& out) {
  return vramlab::cli_test::last_json_line(out);
}

struct Described {
  json estimate, train, lesson;
};

Described run_all(const std::vector<std::string>& flags) {
  const std::string out_dir =
      (std::filesystem::temp_directory_path() / ("model_flags_cli_" + std::to_string(getpid())))
          .string();
  const Result e = run(with({VRAMLAB_CLI_PATH, "estimate", "--json"}, flags));
  const Result t = run(with(
      {VRAMLAB_CLI_PATH, "train", "--device", "meta", "--steps", "1", "--batch", "1", "--json"},
      flags));
  const Result l = run(
      lesson({LESSON01_BINARY, "--device", "meta", "--batch", "1", "--json", "--out-dir", out_dir},
             flags));
  std::filesystem::remove_all(out_dir);
  EXPECT_EQ(e.exit_code, 0) << e.out;
  EXPECT_EQ(t.exit_code, 0) << t.out;
  EXPECT_EQ(l.exit_code, 0) << l.out;
  if (e.exit_code != 0 || t.exit_code != 0 || l.exit_code != 0) return {};
  return {document_of(e.out), train_summary(t.out), document_of(l.out)};
}

class SameModelFromEveryCommand : public testing::TestWithParam<std::vector<std::string>> {};

TEST_P(SameModelFromEveryCommand, ParameterCountAndShapesAgree) {
  const Described d = run_all(GetParam());
  if (d.estimate.is_null()) return;
  const int64_t params = d.estimate.at("parameter_count").get<int64_t>();
  EXPECT_EQ(d.train.at("parameters").get<int64_t>(), params);
  EXPECT_EQ(d.lesson.at("parameter_count").get<int64_t>(), params);
  const json& in = d.estimate.at("inputs");
  const json& m = d.lesson.at("model");
  EXPECT_EQ(m.at("name"), in.at("model"));
  EXPECT_EQ(d.train.at("model"), in.at("model"));
  for (const char* field :
       {"family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab"})
    EXPECT_EQ(m.at(field), in.at(field)) << field;
  // The sequence each command ran: the same rule (--seq, else the context; train and the lesson
  // cap their default at 128).
  const int64_t seq = d.lesson.at("seq").get<int64_t>();
  EXPECT_EQ(d.train.at("seq").get<int64_t>(), seq);
  EXPECT_EQ(std::min<int64_t>(in.at("seq").get<int64_t>(), 128), seq);
}

INSTANTIATE_TEST_SUITE_P(
    Flags, SameModelFromEveryCommand,
    testing::Values(std::vector<std::string>{"--model", "gpt2-mini"},
                    std::vector<std::string>{"--model", "gpt2-mini", "--layers", "3", "--hidden",
                                             "96", "--heads", "6", "--seq", "24"},
                    std::vector<std::string>{"--model", "llama-tiny", "--kv-heads", "4",
                                             "--max-seq", "64", "--layers", "1", "--seq", "32"},
                    std::vector<std::string>{"--layers", "2", "--hidden", "64", "--heads", "4",
                                             "--vocab", "100", "--seq", "16"},
                    std::vector<std::string>{"--layers", "2", "--hidden", "64", "--heads", "4",
                                             "--kv-heads", "2", "--vocab", "100", "--seq", "16"},
                    std::vector<std::string>{"--layers", "2", "--hidden", "96", "--heads", "6",
                                             "--vocab", "77", "--seq", "24", "--max-seq", "40"},
                    std::vector<std::string>{"--layers", "1", "--hidden", "64", "--heads", "4",
                                             "--vocab", "50", "--ffn", "160", "--seq", "8"},
                    std::vector<std::string>{"--layers", "1", "--hidden", "32", "--heads", "2",
                                             "--vocab", "40"}));

TEST(ModelFlagsCli, EveryCommandRejectsTheSameBadValueWithTheSameMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--layers", "0", "--hidden", "64", "--heads", "4", "--vocab", "50"},
       "--layers must be >= 1, got 0"},
      {{"--model", "gpt2-mini", "--kv-heads", "-3"}, "--kv-heads must be >= 1, got -3"},
      {{"--hidden", "64", "--heads", "4", "--vocab", "50"}, "explicit shapes need --layers"},
      {{"--model", "gpt5"}, "unknown model 'gpt5'"},
      {{"--layers", "1", "--hidden", "64", "--heads", "4", "--vocab", "50", "--family", "bert"},
       "unknown family 'bert'"},
      {{"--model", "gpt2-mini", "--hidden", "100", "--heads", "3"},
       "heads (3) must divide hidden (100)"},
  };
  for (const auto& [flags, message] : cases) {
    const Result e = run(with({VRAMLAB_CLI_PATH, "estimate"}, flags));
    const Result t = run(with({VRAMLAB_CLI_PATH, "train", "--device", "meta"}, flags));
    const Result l = run(lesson({LESSON01_BINARY, "--device", "meta"}, flags));
    for (const Result* r : {&e, &t, &l}) {
      EXPECT_EQ(r->exit_code, 2) << message << ": " << r->out;
      EXPECT_NE(r->out.find(message), std::string::npos) << message << " not in: " << r->out;
    }
  }
}

}  // namespace
