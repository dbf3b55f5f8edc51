// Model configurations: parameter counts against independently published numbers and against
// closed forms derived from the architectures, the per-tensor list, and bad shapes.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "common/model/model_config.h"
#include "common/platform/errors.h"

namespace vramlab {
namespace {

// Published counts: GPT-2 small (Hugging Face gpt2, tied head), Llama 2 / 3 model cards' exact
// counts (Hugging Face safetensors metadata).
TEST(ModelConfig, ParameterCountsMatchPublishedNumbers) {
  EXPECT_EQ(model_config_by_name("gpt2-124m").parameter_count(), 124'439'808);
  EXPECT_EQ(model_config_by_name("llama2-7b").parameter_count(), 6'738'415'616);
  EXPECT_EQ(model_config_by_name("llama2-13b").parameter_count(), 13'015'864'320);
  EXPECT_EQ(model_config_by_name("llama2-70b").parameter_count(), 68'976'648'192);
  EXPECT_EQ(model_config_by_name("llama3-8b").parameter_count(), 8'030'261'248);
}

// The model bench/train/compare_pytorch.py trains in vramlab and in PyTorch: 4 layers, width 256,
// 4 heads, T=128, vocab 4096, tied embeddings. By hand: embeddings 4096·256 + 128·256, per layer
// 2·256 + (256·768 + 768) + (256·256 + 256) + 2·256 + (256·1024 + 1024) + (1024·256 + 256) =
// 789,760, final norm 2·256: 4,240,896.
TEST(ModelConfig, GptTinyIsThePyTorchComparisonModel) {
  const ModelConfig c = model_config_by_name("gpt2-tiny");
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.hidden, 256);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.max_seq, 128);
  EXPECT_EQ(c.vocab, 4096);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.parameter_count(), 4'240'896);
}

// The other GPT-2 sizes as Hugging Face's gpt2-medium / -large / -xl report them (tied head), and
// Llama 3 70B's "70.6B".
TEST(ModelConfig, Gpt2FamilyAndLlama3CountsMatchPublishedNumbers) {
  EXPECT_EQ(model_config_by_name("gpt2-355m").parameter_count(), 354'823'168);
  EXPECT_EQ(model_config_by_name("gpt2-774m").parameter_count(), 774'030'080);
  EXPECT_EQ(model_config_by_name("gpt2-1.5b").parameter_count(), 1'557'611'200);
  EXPECT_NEAR(model_config_by_name("llama3-70b").parameter_count() / 1e9, 70.6, 0.05);
}

// Closed forms written from the architecture, not from the tensor list:
//   GPT-2: VC + TC + L(12C² + 13C) + 2C;  Llama: 2VC + L(2C² + 2·kvC·C + 3CF + 2C) + C.
TEST(ModelConfig, CountsMatchClosedFormsForRandomShapes) {
  std::mt19937_64 rng(20261121);
  std::uniform_int_distribution<int64_t> small(1, 9);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t heads = small(rng), head_dim = small(rng) * 2 + 1, L = small(rng);
    const int64_t C = heads * head_dim, V = small(rng) * 97 + 3, T = small(rng) * 13;
    const ModelConfig g = gpt2_config("g", L, C, heads, V, T);
    EXPECT_EQ(g.parameter_count(), V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C)
        << "L=" << L << " C=" << C << " V=" << V << " T=" << T;
    const int64_t kv = heads % 3 == 0 ? heads / 3 : heads;
    const int64_t kvC = kv * head_dim, F = small(rng) * 11 + 1;
    const ModelConfig l = llama_config("l", L, C, heads, kv, F, V, T);
    EXPECT_EQ(l.parameter_count(),
              2 * V * C + L * (2 * C * C + 2 * kvC * C + 3 * C * F + 2 * C) + C)
        << "L=" << L << " C=" << C << " kv=" << kv << " F=" << F;
  }
}

TEST(ModelConfig, ParameterListSumsToTheCountWithUniqueNames) {
  for (std::string_view name : model_config_names()) {
    const ModelConfig c = model_config_by_name(name);
    EXPECT_EQ(c.name, name);
    const auto specs = c.parameters();
    int64_t total = 0;
    std::set<std::string> names;
    for (const auto& s : specs) {
      total += s.numel();
      EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name << " in " << name;
    }
    EXPECT_EQ(total, c.parameter_count()) << name;
  }
}

TEST(ModelConfig, Gpt2LayoutIsTiedWithFusedQkvAndLlamaIsUntiedWithGqa) {
  const auto gpt2 = model_config_by_name("gpt2-mini").parameters();
  ASSERT_FALSE(gpt2.empty());
  EXPECT_EQ(gpt2[0].name, "wte");
  EXPECT_EQ(gpt2[0].shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(gpt2[1].name, "wpe");
  EXPECT_EQ(gpt2[1].shape, (std::vector<int64_t>{32, 64}));
  bool has_qkv = false;
  for (const auto& s : gpt2) {
    EXPECT_NE(s.name, "lm_head.weight");
    if (s.name == "blocks.1.attn.qkv.weight") {
      has_qkv = true;
      EXPECT_EQ(s.shape, (std::vector<int64_t>{192, 64}));
      EXPECT_EQ(s.layer, 1);
    }
  }
  EXPECT_TRUE(has_qkv);
  const auto llama = model_config_by_name("llama-tiny").parameters();
  EXPECT_EQ(llama.back().name, "lm_head.weight");
  bool has_k = false;
  for (const auto& s : llama) {
    EXPECT_EQ(s.name.find("bias"), std::string::npos) << s.name;
    if (s.name == "blocks.0.attn.k.weight") {
      has_k = true;
      EXPECT_EQ(s.shape, (std::vector<int64_t>{128, 256}));  // kv 2 of 4 heads × 64
    }
  }
  EXPECT_TRUE(has_k);
}

TEST(ModelConfig, UnknownNameListsTheValidOnes) {
  try {
    (void)model_config_by_name("gpt5");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'gpt5'"), std::string::npos) << message;
    EXPECT_NE(message.find("gpt2-124m"), std::string::npos) << message;
    EXPECT_NE(message.find("llama3-70b"), std::string::npos) << message;
  }
}

std::string validate_message(const ModelConfig& c) {
  try {
    c.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelConfig, BadShapesAreUsageErrorsNamingTheValue) {
  EXPECT_NE(
      validate_message(gpt2_config("x", 0, 64, 4, 256, 32)).find("layers must be positive, got 0"),
      std::string::npos);
  EXPECT_NE(validate_message(gpt2_config("x", 2, -64, 4, 256, 32)).find("-64"), std::string::npos);
  const std::string heads = validate_message(gpt2_config("x", 2, 100, 3, 256, 32));
  EXPECT_NE(heads.find("heads (3) must divide hidden (100)"), std::string::npos) << heads;
  const std::string kv = validate_message(llama_config("x", 2, 96, 6, 4, 128, 256, 32));
  EXPECT_NE(kv.find("kv_heads (4) must divide heads (6)"), std::string::npos) << kv;
  const std::string overflow = validate_message(gpt2_config("x", 2, 1LL << 31, 1, 1LL << 40, 32));
  EXPECT_NE(overflow.find("overflows"), std::string::npos) << overflow;
  const std::string deep = validate_message(gpt2_config("x", 1LL << 40, 8, 1, 8, 8));
  EXPECT_NE(deep.find("1099511627776"), std::string::npos) << deep;
  ModelConfig family = gpt2_config("x", 2, 64, 4, 256, 32);
  family.family = static_cast<ModelFamily>(7);
  EXPECT_NE(validate_message(family).find("invalid family value 7"), std::string::npos);
  EXPECT_THROW((void)family.parameter_count(), UsageError);
  ModelConfig norm = gpt2_config("x", 2, 64, 4, 256, 32);
  norm.norm = static_cast<NormKind>(-1);
  EXPECT_NE(validate_message(norm).find("invalid norm value -1"), std::string::npos);
  ModelConfig mlp = gpt2_config("x", 2, 64, 4, 256, 32);
  mlp.mlp = static_cast<MlpKind>(2);
  EXPECT_NE(validate_message(mlp).find("invalid mlp value 2"), std::string::npos);
  ModelConfig theta = llama_config("x", 2, 64, 4, 2, 96, 256, 32);
  theta.rope_theta = 0.0;
  EXPECT_NE(validate_message(theta).find("rope_theta must be positive"), std::string::npos);
}

TEST(ModelKinds, NamesRoundTripThroughTheParsers) {
  for (ModelFamily f : {ModelFamily::gpt2, ModelFamily::llama})
    EXPECT_EQ(parse_model_family(model_family_name(f)), f);
  for (NormKind n : {NormKind::layernorm, NormKind::rmsnorm})
    EXPECT_EQ(parse_norm_kind(norm_kind_name(n)), n);
  for (MlpKind m : {MlpKind::gelu, MlpKind::swiglu}) EXPECT_EQ(parse_mlp_kind(mlp_kind_name(m)), m);
  // The spellings are part of the JSON outputs.
  EXPECT_EQ(model_family_name(ModelFamily::gpt2), "gpt2");
  EXPECT_EQ(model_family_name(ModelFamily::llama), "llama");
  EXPECT_EQ(norm_kind_name(NormKind::layernorm), "layernorm");
  EXPECT_EQ(norm_kind_name(NormKind::rmsnorm), "rmsnorm");
  EXPECT_EQ(mlp_kind_name(MlpKind::gelu), "gelu");
  EXPECT_EQ(mlp_kind_name(MlpKind::swiglu), "swiglu");
}

TEST(ModelKinds, ParsersRejectOtherSpellingsNamingTheValue) {
  auto message = [](auto parse, std::string_view text) {
    try {
      (void)parse(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(parse_model_family, "bert"), "unknown family 'bert' (expected gpt2 or llama)");
  EXPECT_EQ(message(parse_model_family, "GPT2"), "unknown family 'GPT2' (expected gpt2 or llama)");
  EXPECT_EQ(message(parse_model_family, ""), "unknown family '' (expected gpt2 or llama)");
  EXPECT_EQ(message(parse_norm_kind, "batchnorm"),
            "unknown norm 'batchnorm' (expected layernorm or rmsnorm)");
  EXPECT_EQ(message(parse_mlp_kind, "relu"), "unknown mlp 'relu' (expected gelu or swiglu)");
  EXPECT_EQ(message(parse_mlp_kind, "gelu "), "unknown mlp 'gelu ' (expected gelu or swiglu)");
}

TEST(ModelConfig, RopeThetaFollowsTheReleasedConfigs) {
  for (std::string_view name : model_config_names()) {
    const ModelConfig c = model_config_by_name(name);
    if (c.family == ModelFamily::gpt2)
      EXPECT_EQ(c.rope_theta, 0.0) << name;
    else if (name.substr(0, 6) == "llama3")
      EXPECT_EQ(c.rope_theta, 500000.0) << name;
    else
      EXPECT_EQ(c.rope_theta, 10000.0) << name;
  }
  EXPECT_EQ(llama_config("x", 1, 8, 2, 2, 8, 8, 8).rope_theta, 10000.0);
  EXPECT_EQ(llama_config("x", 1, 8, 2, 2, 8, 8, 8, 123.5).rope_theta, 123.5);
}

TEST(ModelConfig, InitKindsFollowGpt2sScheme) {
  // Expected kinds from each tensor's role, derived here from the name independently of the
  // table in model_config.cpp.
  auto expected = [](const std::string& name) {
    auto ends = [&name](std::string_view s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends(".bias")) return InitKind::zeros;
    if (name.find("ln") != std::string::npos || name.find("norm") != std::string::npos)
      return InitKind::ones;
    if (ends("attn.proj.weight") || ends("attn.o.weight") || ends("mlp.proj.weight") ||
        ends("mlp.down.weight"))
      return InitKind::residual_normal;
    return InitKind::normal;
  };
  for (const char* name : {"gpt2-mini", "llama-tiny"}) {
    const ModelConfig c = model_config_by_name(name);
    int residual = 0;
    for (const ParameterSpec& s : c.parameters()) {
      EXPECT_EQ(s.init, expected(s.name)) << name << " " << s.name;
      residual += s.init == InitKind::residual_normal ? 1 : 0;
    }
    EXPECT_EQ(residual, 2 * c.layers) << name;  // one attention and one MLP output per block
  }
}

TEST(ModelConfig, EveryBuiltInConfigValidates) {
  for (std::string_view name : model_config_names())
    EXPECT_NO_THROW(model_config_by_name(name).validate()) << name;
}

}  // namespace
}  // namespace vramlab
