// Tests of exercise 01.2 (the bytes one GPT-2 layer saves for backward). They run against your
// code (`vramlab check 01.2`) and against the reference (ctest: test_ex_01_2_ref).
// Expectations: the runtime's saved-tensor layout (llm.c's GPT-2 block without its pre-softmax
// scores, listed tensor by tensor below and in common/estimate/runtime_activations.h), the
// estimator's runtime_activation_bytes_per_layer(), and what the runtime's SavedActivations store
// really holds after a forward pass of a small GPT-2.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/estimate/runtime_activations.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/decoder_model.h"
#include "common/nn/runtime.h"
#include "common/nn/saved_activations.h"
#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/01-memory-breakdown/api/layer_activations.h"

namespace vramlab::lesson01 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::string describe(const LayerShape& s, DType dtype) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq) +
         " C=" + std::to_string(s.hidden) + " H=" + std::to_string(s.heads) +
         " F=" + std::to_string(s.ffn_hidden) + " " + std::string(dtype_name(dtype));
}

// The layout, one shape per saved tensor (the test's own list); the norms' statistics are f32.
int64_t expected_bytes(const LayerShape& s, DType dtype) {
  const int64_t B = s.batch, T = s.seq, C = s.hidden, H = s.heads, F = s.ffn_hidden;
  const std::vector<int64_t> elements = {
      B * T * C,     B * T * 3 * C,          // ln1, qkv
      B * H * T * T,                         // att (the scores before the softmax are not kept)
      B * T * C,     B * T * C,              // atty, residual2
      B * T * C,                             // ln2
      B * T * F,     B * T * F, B * T * C};  // fch, fch_gelu, residual3
  const int64_t statistics = 4 * B * T;      // ln1_mean, ln1_rstd, ln2_mean, ln2_rstd
  int64_t total = 0;
  for (int64_t e : elements) total += e;
  return total * static_cast<int64_t>(dtype_size_bytes(dtype)) + statistics * 4;
}

// Random shapes: odd sizes, heads dividing hidden, F = 4C or arbitrary.
std::vector<LayerShape> random_shapes(uint64_t seed, size_t count, bool gpt2_mlp) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<LayerShape> shapes;
  for (size_t i = 0; i < count; ++i) {
    LayerShape s;
    s.batch = pick(1, 17);
    s.seq = pick(1, 1025);
    s.heads = pick(1, 13);
    s.hidden = s.heads * pick(1, 97);
    s.ffn_hidden = gpt2_mlp ? 4 * s.hidden : pick(1, 5000);
    shapes.push_back(s);
  }
  return shapes;
}

//! [test]
TEST(LayerActivations, MatchesTheSavedTensorLayoutOnRandomShapes) {
  Comparison bytes("layer activation bytes", Unit::kBytes);
  bytes.per_unit("token");  // a diff per token of k*C, k*F or 4 B names the forgotten tensor
  for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::fp8_e4m3})
    for (const LayerShape& shape : random_shapes(0x0102, 150, /*gpt2_mlp=*/false))
      bytes.add(describe(shape, dtype), static_cast<double>(expected_bytes(shape, dtype)),
                static_cast<double>(layer_activation_bytes(shape, dtype)),
                static_cast<double>(shape.batch * shape.seq));
  VRAMLAB_EXPECT_PASSES(bytes);
}
//! [test]

TEST(LayerActivations, GPT2_124MAtSeq1024IsWhatTheRuntimeSaves) {
  // GPT-2 124M, B=4, T=1024, f32: (16·768·4096 + 4·4096 + 12·4·1024²)·4 B.
  const LayerShape shape{4, 1024, 768, 12, 3072};
  const int64_t elements = 16 * 768 * 4096 + 4 * 4096 + int64_t{12} * 4 * 1024 * 1024;
  Comparison bytes("GPT-2 124M layer bytes", Unit::kBytes);
  bytes.add(describe(shape, DType::f32), static_cast<double>(elements * 4),
            static_cast<double>(layer_activation_bytes(shape, DType::f32)));
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(LayerActivations, AgreesWithTheRuntimeLayoutOfTheEstimator) {
  Comparison bytes("layer bytes vs runtime_activation_bytes_per_layer", Unit::kBytes);
  for (const LayerShape& s : random_shapes(0x0102'0002, 60, /*gpt2_mlp=*/true)) {
    const ModelConfig model = gpt2_config("custom", 2, s.hidden, s.heads, 257, s.seq);
    for (DType dtype : {DType::f32, DType::bf16})
      bytes.add(describe(s, dtype),
                static_cast<double>(
                    estimate::runtime_activation_bytes_per_layer(model, s.batch, s.seq, dtype)),
                static_cast<double>(layer_activation_bytes(s, dtype)));
  }
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(LayerActivations, MatchesWhatTheSavedActivationsStoreHolds) {
  // Real forward passes of small random GPT-2 models on the CPU: the bytes block 0 saved in the
  // store are the measurement.
  std::mt19937_64 rng(0x0102'0003);
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Comparison bytes("layer bytes vs the SavedActivations store", Unit::kBytes);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t heads = pick(1, 3), hidden = heads * 4 * pick(1, 3), batch = pick(1, 3),
                  seq = pick(1, 13);
    const ModelConfig config = gpt2_config("custom", 2, hidden, heads, 61, seq);
    nn::Runtime runtime(memory::parse_device("cpu"));
    nn::DecoderModel model(runtime, config, 7);
    nn::SavedActivations saved(runtime, config.layers);
    std::vector<int32_t> tokens(static_cast<size_t>(batch * seq)), targets(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<int32_t>(pick(0, 60));
      targets[i] = static_cast<int32_t>(pick(0, 60));
    }
    // cpu device memory is host memory, so host vectors can be viewed as the step's inputs.
    model.forward(saved, memory::TensorView(tokens.data(), DType::i32, {batch, seq}),
                  memory::TensorView(targets.data(), DType::i32, {batch, seq}), batch, seq);
    int64_t layer0_bytes = 0;
    for (const auto& info : saved.list())
      if (info.layer == 0) layer0_bytes += info.bytes;
    const LayerShape shape{batch, seq, hidden, heads, 4 * hidden};
    bytes.add(describe(shape, DType::f32) + " (store)", static_cast<double>(layer0_bytes),
              static_cast<double>(layer_activation_bytes(shape, DType::f32)));
    saved.clear();
  }
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(LayerActivations, AttentionScoresDominateAtLongSequences) {
  // At T = 8192 with C = 64, H = 8 the (B,H,T,T) probabilities are almost everything: changing T
  // by one changes the bytes by the layout's exact difference.
  const LayerShape a{1, 8192, 64, 8, 256}, b{1, 8193, 64, 8, 256};
  Comparison diff("bytes(T+1) - bytes(T)", Unit::kBytes);
  diff.add("T=8192 -> 8193 f32",
           static_cast<double>(expected_bytes(b, DType::f32) - expected_bytes(a, DType::f32)),
           static_cast<double>(layer_activation_bytes(b, DType::f32) -
                               layer_activation_bytes(a, DType::f32)));
  VRAMLAB_EXPECT_PASSES(diff);
}

TEST(LayerActivations, RealModelsAtLongContextNeed64BitArithmetic) {
  // The GPT-2 layout with the widths of real models at T = 8192 and beyond: B*H*T*T alone reaches
  // 2^31 (Llama 2-7B widths) and 2^38 (70B widths, B = 8), so any 32-bit intermediate wraps.
  const LayerShape shapes[] = {{1, 8192, 4096, 32, 11008},
                               {8, 8192, 8192, 64, 28672},
                               {1, 32768, 4096, 32, 14336},
                               {3, 8191, 5120, 40, 13824}};
  Comparison bytes("layer activation bytes at long context", Unit::kBytes);
  bytes.per_unit("token");
  for (const LayerShape& shape : shapes)
    for (DType dtype : {DType::f32, DType::bf16})
      bytes.add(describe(shape, dtype), static_cast<double>(expected_bytes(shape, dtype)),
                static_cast<double>(layer_activation_bytes(shape, dtype)),
                static_cast<double>(shape.batch * shape.seq));
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(LayerActivations, TheLargestShapesThatFitAreExactAndOneMoreStepThrows) {
  // B = H = C = F = 1: T*T + 10*T elements plus 4*T fp32 statistics. At T = 2^30 that fits int64
  // in 1-, 2- and 4-byte elements; at T = 2^31 (2^62 + 10*2^31 elements) only in 1-byte ones. At T = 2^32 the T*T
  // alone is 2^64: a product computed first and checked later has wrapped around to 0.
  struct Fits {
    int64_t seq;
    DType dtype;
  };
  const int64_t t = int64_t{1} << 30;
  const Fits fits[] = {{t, DType::bf16}, {t, DType::f32}, {2 * t, DType::fp8_e4m3}};
  Comparison bytes("bytes of the largest shapes that fit", Unit::kBytes);
  for (const Fits& f : fits) {
    const LayerShape shape{1, f.seq, 1, 1, 1};
    const int64_t elements = f.seq * f.seq + 10 * f.seq;
    try {
      bytes.add(describe(shape, f.dtype),
                static_cast<double>(elements * static_cast<int64_t>(dtype_size_bytes(f.dtype)) +
                                    16 * f.seq),
                static_cast<double>(layer_activation_bytes(shape, f.dtype)));
    } catch (const UsageError& e) {
      ADD_FAILURE() << describe(shape, f.dtype) << " fits in int64 (" << elements
                    << " elements), but it threw: " << e.what();
    }
  }
  if (bytes.count() > 0) {
    VRAMLAB_EXPECT_PASSES(bytes);
  }
  const Fits too_big[] = {{2 * t, DType::bf16}, {2 * t, DType::f32}, {4 * t, DType::fp8_e4m3}};
  for (const Fits& f : too_big) {
    const LayerShape shape{1, f.seq, 1, 1, 1};
    try {
      const int64_t got = layer_activation_bytes(shape, f.dtype);
      ADD_FAILURE() << describe(shape, f.dtype) << " needs 2^63 bytes or more, so it must throw "
                    << "vramlab::UsageError; it returned " << got
                    << " (a product that wrapped around before the check?)";
    } catch (const UsageError&) {
    }
  }
}

TEST(LayerActivations, RejectsBadShapesNamingTheValue) {
  struct Bad {
    LayerShape shape;
    std::string named;
  };
  const Bad cases[] = {{{0, 8, 8, 2, 32}, "0"},  {{1, -3, 8, 2, 32}, "-3"},
                       {{1, 8, 8, 3, 32}, "3"},  {{1, 8, 8, 0, 32}, "0"},
                       {{1, 8, 8, 2, -7}, "-7"}, {{1'000'000, 1'000'000, 8, 8, 32}, "overflow"}};
  for (const Bad& bad : cases) {
    try {
      layer_activation_bytes(bad.shape, DType::f32);
      ADD_FAILURE() << "no vramlab::UsageError for " << describe(bad.shape, DType::f32);
    } catch (const UsageError& e) {
      if (std::string(e.what()).find(bad.named) == std::string::npos)
        ADD_FAILURE() << "the message should name " << bad.named << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace vramlab::lesson01
