// ModelFlags, the model flags `vramlab train`, `vramlab estimate` and the lesson binaries share:
// every flag's bad values, explicit shapes, a named model with overrides, the context rule, the
// family inference and Llama's width formula, and the same results through CLI11 parsing.
//
// Oracles: the rules as documented in model_flags.h, and the built-in configurations for the
// values a flag does not replace. The width formula is recomputed here by counting up in steps of
// 64, independently of the implementation's arithmetic.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/model/model_flags.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

std::string error_of(const ModelFlags& flags, std::optional<int64_t> seq = std::nullopt) {
  try {
    (void)flags.build(seq);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

ModelFlags shapes(int64_t layers, int64_t hidden, int64_t heads, int64_t vocab) {
  ModelFlags f;
  f.layers = layers;
  f.hidden = hidden;
  f.heads = heads;
  f.vocab = vocab;
  return f;
}

ModelFlags named(const char* name) {
  ModelFlags f;
  f.name = name;
  return f;
}

// The smallest multiple of 64 that is at least floor(8C/3), by counting.
int64_t width_by_counting(int64_t hidden) {
  int64_t width = 0;
  while (3 * width < 8 * hidden - (8 * hidden) % 3) width += 64;
  return width;
}

TEST(ModelFlags, EveryFlagRejectsZeroAndNegativeValuesNamingTheFlag) {
  std::optional<int64_t> ModelFlags::*const members[] = {
      &ModelFlags::layers, &ModelFlags::hidden, &ModelFlags::heads,  &ModelFlags::kv_heads,
      &ModelFlags::ffn,    &ModelFlags::vocab,  &ModelFlags::max_seq};
  const char* const names[] = {"--layers", "--hidden", "--heads",  "--kv-heads",
                               "--ffn",    "--vocab",  "--max-seq"};
  for (const int64_t bad :
       {int64_t{0}, int64_t{-1}, int64_t{-4096}, std::numeric_limits<int64_t>::min()}) {
    for (size_t i = 0; i < std::size(members); ++i) {
      const std::string expected =
          std::string(names[i]) + " must be >= 1, got " + std::to_string(bad);
      ModelFlags explicit_shapes = shapes(2, 64, 4, 128);
      explicit_shapes.*members[i] = bad;
      EXPECT_EQ(error_of(explicit_shapes), expected);
      ModelFlags with_name = named("gpt2-mini");
      with_name.*members[i] = bad;
      EXPECT_EQ(error_of(with_name), expected);
    }
    EXPECT_EQ(error_of(shapes(2, 64, 4, 128), bad),
              "--seq must be >= 1, got " + std::to_string(bad));
  }
}

TEST(ModelFlags, ExplicitShapesNeedAllFourNamingTheMissingOne) {
  const char* const names[] = {"--layers", "--hidden", "--heads", "--vocab"};
  for (size_t missing = 0; missing < 4; ++missing) {
    ModelFlags f = shapes(2, 64, 4, 128);
    std::optional<int64_t>* fields[] = {&f.layers, &f.hidden, &f.heads, &f.vocab};
    fields[missing]->reset();
    const std::string message = error_of(f);
    EXPECT_NE(message.find(std::string("explicit shapes need ") + names[missing]),
              std::string::npos)
        << message;
  }
  EXPECT_NE(error_of(ModelFlags{}).find("explicit shapes need --layers"), std::string::npos);
  // Other flags without the four are still explicit shapes missing some.
  ModelFlags only_ffn;
  only_ffn.ffn = 96;
  EXPECT_NE(error_of(only_ffn).find("explicit shapes need"), std::string::npos);
}

TEST(ModelFlags, UnknownModelAndFamilyAreNamed) {
  EXPECT_NE(error_of(named("gpt5")).find("unknown model 'gpt5'"), std::string::npos);
  ModelFlags family = shapes(2, 64, 4, 128);
  family.family = "bert";
  EXPECT_EQ(error_of(family), "unknown family 'bert' (expected gpt2 or llama)");
  ModelFlags contradiction = named("llama2-7b");
  contradiction.family = "gpt2";
  EXPECT_NE(error_of(contradiction).find("--family gpt2 contradicts --model llama2-7b"),
            std::string::npos);
  ModelFlags agreeing = named("llama2-7b");
  agreeing.family = "llama";
  EXPECT_EQ(agreeing.build().parameter_count(),
            model_config_by_name("llama2-7b").parameter_count());
}

TEST(ModelFlags, ANameAloneIsTheBuiltInConfiguration) {
  for (std::string_view name : model_config_names()) {
    const ModelConfig expected = model_config_by_name(name);
    const ModelConfig got = named(std::string(name).c_str()).build(7);  // --seq leaves it alone
    EXPECT_EQ(got.name, expected.name);
    EXPECT_EQ(got.family, expected.family);
    EXPECT_EQ(got.layers, expected.layers);
    EXPECT_EQ(got.hidden, expected.hidden);
    EXPECT_EQ(got.heads, expected.heads);
    EXPECT_EQ(got.kv_heads, expected.kv_heads);
    EXPECT_EQ(got.ffn_hidden, expected.ffn_hidden);
    EXPECT_EQ(got.vocab, expected.vocab);
    EXPECT_EQ(got.max_seq, expected.max_seq);
    EXPECT_EQ(got.rope_theta, expected.rope_theta);
  }
}

TEST(ModelFlags, OverridesReplaceOnlyTheirValues) {
  const ModelConfig base = model_config_by_name("gpt2-124m");
  ModelFlags layers = named("gpt2-124m");
  layers.layers = 3;
  const ModelConfig l = layers.build();
  EXPECT_EQ(l.layers, 3);
  EXPECT_EQ(l.hidden, base.hidden);
  EXPECT_EQ(l.name, "gpt2-124m");
  EXPECT_EQ(l.max_seq, base.max_seq);

  // gpt2: --heads also sets the kv heads (fused qkv), --hidden the 4C MLP.
  ModelFlags gpt2 = named("gpt2-124m");
  gpt2.heads = 16;
  gpt2.hidden = 1024;
  const ModelConfig g = gpt2.build();
  EXPECT_EQ(g.heads, 16);
  EXPECT_EQ(g.kv_heads, 16);
  EXPECT_EQ(g.ffn_hidden, 4096);
  EXPECT_EQ(g.vocab, base.vocab);

  // llama: --hidden keeps the named MLP width, --heads keeps the kv heads; --ffn, --kv-heads,
  // --vocab and --max-seq replace theirs; θ stays the named model's.
  const ModelConfig llama3 = model_config_by_name("llama3-8b");
  ModelFlags llama = named("llama3-8b");
  llama.hidden = 2048;
  llama.heads = 16;
  llama.layers = 2;
  llama.vocab = 1000;
  llama.max_seq = 512;
  const ModelConfig m = llama.build();
  EXPECT_EQ(m.ffn_hidden, llama3.ffn_hidden);
  EXPECT_EQ(m.kv_heads, llama3.kv_heads);
  EXPECT_EQ(m.heads, 16);
  EXPECT_EQ(m.vocab, 1000);
  EXPECT_EQ(m.max_seq, 512);
  EXPECT_EQ(m.rope_theta, 500000.0);
  llama.ffn = 5000;
  llama.kv_heads = 4;
  const ModelConfig m2 = llama.build();
  EXPECT_EQ(m2.ffn_hidden, 5000);
  EXPECT_EQ(m2.kv_heads, 4);
  // An override that breaks the shapes is reported by the model's validation.
  ModelFlags broken = named("gpt2-mini");
  broken.hidden = 100;
  broken.heads = 3;
  EXPECT_NE(error_of(broken).find("heads (3) must divide hidden (100)"), std::string::npos);
  ModelFlags huge = named("gpt2-mini");
  huge.hidden = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_NE(error_of(huge).find("overflows"), std::string::npos);
}

TEST(ModelFlags, ExplicitContextIsMaxSeqThenSeqThen1024) {
  const ModelFlags f = shapes(2, 64, 4, 128);
  EXPECT_EQ(f.build().max_seq, 1024);
  EXPECT_EQ(f.build(40).max_seq, 40);
  ModelFlags with_max = f;
  with_max.max_seq = 300;
  EXPECT_EQ(with_max.build().max_seq, 300);
  EXPECT_EQ(with_max.build(40).max_seq, 300);
  // The context is the position table: the parameter count follows it.
  EXPECT_EQ(f.build(40).parameter_count() + (1024 - 40) * 64, f.build().parameter_count());
  // A named model keeps its context whatever --seq says.
  EXPECT_EQ(named("gpt2-mini").build(16).max_seq, model_config_by_name("gpt2-mini").max_seq);
}

TEST(ModelFlags, ExplicitFamilyIsInferredFromKvHeadsAndFfn) {
  const ModelFlags base = shapes(2, 96, 6, 128);
  const ModelConfig plain = base.build();
  EXPECT_EQ(plain.family, ModelFamily::gpt2);
  EXPECT_EQ(plain.name, "custom");
  EXPECT_EQ(plain.ffn_hidden, 4 * 96);
  EXPECT_EQ(plain.kv_heads, 6);

  ModelFlags same_kv = base;
  same_kv.kv_heads = 6;
  EXPECT_EQ(same_kv.build().family, ModelFamily::gpt2);

  ModelFlags gqa = base;
  gqa.kv_heads = 2;
  const ModelConfig g = gqa.build();
  EXPECT_EQ(g.family, ModelFamily::llama);
  EXPECT_EQ(g.kv_heads, 2);
  EXPECT_EQ(g.ffn_hidden, width_by_counting(96));
  EXPECT_EQ(g.rope_theta, 10000.0);
  EXPECT_EQ(g.norm, NormKind::rmsnorm);

  ModelFlags ffn = base;
  ffn.ffn = 200;
  const ModelConfig f = ffn.build();
  EXPECT_EQ(f.family, ModelFamily::llama);
  EXPECT_EQ(f.ffn_hidden, 200);
  EXPECT_EQ(f.kv_heads, 6);

  ModelFlags forced_gpt2 = ffn;
  forced_gpt2.family = "gpt2";
  const ModelConfig fg = forced_gpt2.build();
  EXPECT_EQ(fg.family, ModelFamily::gpt2);
  EXPECT_EQ(fg.ffn_hidden, 200);

  ModelFlags forced_llama = base;
  forced_llama.family = "llama";
  const ModelConfig fl = forced_llama.build();
  EXPECT_EQ(fl.family, ModelFamily::llama);
  EXPECT_EQ(fl.kv_heads, 6);
  EXPECT_EQ(fl.ffn_hidden, width_by_counting(96));

  // gpt2 has a fused qkv: kv heads other than heads are named by the validation.
  ModelFlags gpt2_gqa = gqa;
  gpt2_gqa.family = "gpt2";
  EXPECT_NE(error_of(gpt2_gqa).find("kv_heads (2) must equal heads (6)"), std::string::npos);
  ModelFlags kv_above = base;
  kv_above.kv_heads = 12;
  EXPECT_NE(error_of(kv_above).find("kv_heads (12) must divide heads (6)"), std::string::npos);
}

TEST(ModelFlags, LlamaWidthFormulaAtSeveralWidths) {
  // Hand-checked points: 8·4096/3 = 10922.67 → 10944; 8·256/3 = 682.67 → 704; 8·96/3 = 256.
  EXPECT_EQ(llama_ffn_width(4096), 10944);
  EXPECT_EQ(llama_ffn_width(256), 704);
  EXPECT_EQ(llama_ffn_width(96), 256);
  EXPECT_EQ(llama_ffn_width(1), 64);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> width(1, 20000);
  for (int i = 0; i < 200; ++i) {
    const int64_t c = width(rng);
    EXPECT_EQ(llama_ffn_width(c), width_by_counting(c)) << "C = " << c;
    EXPECT_EQ(llama_ffn_width(c) % 64, 0);
  }
  EXPECT_THROW((void)llama_ffn_width(std::numeric_limits<int64_t>::max() / 4), UsageError);
}

ModelConfig parse_and_build(std::vector<std::string> args, std::optional<int64_t> seq = {}) {
  CLI::App app;
  ModelFlags flags;
  add_model_options(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  app.parse(args);
  return flags.build(seq);
}

TEST(ModelFlags, CommandLineParsingGivesTheSameConfigurations) {
  ModelFlags direct = shapes(3, 64, 4, 200);
  direct.kv_heads = 2;
  direct.max_seq = 48;
  const ModelConfig a = direct.build();
  const ModelConfig b = parse_and_build({"--layers", "3", "--hidden", "64", "--heads", "4",
                                         "--kv-heads", "2", "--vocab", "200", "--max-seq", "48"});
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.max_seq, b.max_seq);
  EXPECT_EQ(a.parameter_count(), b.parameter_count());
  const ModelConfig c = parse_and_build(
      {"--model", "llama-tiny", "--layers", "1", "--ffn", "320", "--family", "llama"});
  EXPECT_EQ(c.layers, 1);
  EXPECT_EQ(c.ffn_hidden, 320);
  EXPECT_EQ(c.name, "llama-tiny");
  EXPECT_THROW(parse_and_build({"--layers", "two"}), CLI::ParseError);
  EXPECT_THROW(parse_and_build({"--model", ""}), UsageError);  // "" = no name: shapes missing
}

TEST(ModelFlags, HelpListsEachFlagOnceInTheModelGroup) {
  CLI::App app;
  ModelFlags flags;
  flags.name = "gpt2-tiny";
  add_model_options(app, flags);
  const std::string help = app.help();
  for (const char* flag : {"--model", "--layers", "--hidden", "--heads", "--kv-heads", "--ffn",
                           "--family", "--vocab", "--max-seq"}) {
    const std::string needle = std::string("  ") + flag + " ";
    const size_t first = help.find(needle);
    ASSERT_NE(first, std::string::npos) << flag << " in\n" << help;
    EXPECT_EQ(help.find(needle, first + 1), std::string::npos) << flag;
  }
  EXPECT_NE(help.find("Model:"), std::string::npos);
  EXPECT_NE(help.find("gpt2-tiny"), std::string::npos);  // the default
  EXPECT_NE(help.find("else 1024"), std::string::npos);  // the context rule
}

}  // namespace
}  // namespace vramlab
