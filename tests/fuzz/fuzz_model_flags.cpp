// libFuzzer target: the model flags of `vramlab train`, `vramlab estimate` and the lesson binaries
// (common/model/model_flags.h). The input is a command line, one argument per line. Contract:
// CLI11 parses it or reports a CLI::ParseError (exit 2 in every binary); ModelFlags::build() then
// gives a valid ModelConfig or a UsageError naming the flag; a built model's parameter counts are
// computed without overflow (checked arithmetic throws UsageError) and its parameter list, for a
// small model, adds up to the count.
//   build-fuzz/bin/fuzz_model_flags tests/fuzz/corpus/model_flags
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/model/model_flags.h"
#include "tests/fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  std::vector<std::string> arguments(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      arguments.emplace_back();
    } else {
      arguments.back() += static_cast<char>(data[i]);
    }
  }
  if (arguments.size() > 64) return 0;
  ModelFlags flags;
  std::optional<std::int64_t> seq;
  CLI::App app("fuzz");
  add_model_options(app, flags);
  app.add_option("--seq", seq);
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError&) {
    return 0;
  }
  fuzz::expect_parsed_or_usage_error([&] {
    const ModelConfig model = flags.build(seq);
    model.validate();
    const std::int64_t count = model.parameter_count();
    if (count < 1) fuzz::contract_broken("parameter_count", std::to_string(count));
    if (model.layers <= 4 && count <= (std::int64_t{1} << 24)) {
      std::int64_t sum = 0;
      for (const ParameterSpec& spec : model.parameters()) sum += spec.numel();
      if (sum != count)
        fuzz::contract_broken("parameters", std::to_string(sum) + " != " + std::to_string(count));
    }
  });
  return 0;
}
