// Lesson 09's exercises beside the runtime (see exercise_results.h).
#include "lessons/09-optimizer-memory/exercise_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>

#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/optimizer_8bit.h"
#include "lessons/09-optimizer-memory/api/adam_mini_partition.h"
#include "lessons/09-optimizer-memory/api/blockwise_quantization.h"
#include "lessons/09-optimizer-memory/api/lion_step.h"
#include "lessons/09-optimizer-memory/api/moment_bytes.h"

namespace vramlab::lesson09 {

namespace {

using estimate::Optimizer;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::vector<float> normal_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);  // (n)
  for (float& v : x) v = normal(rng);
  return x;
}

// Runs one exercise; a stub's NOT IMPLEMENTED (or any error) becomes the line's text.
template <typename F>
ExerciseResult attempt(const std::string& id, F&& f) {
  ExerciseResult r{id, false, false, ""};
  try {
    f(r);
    r.ran = true;
  } catch (const std::exception& e) {
    r.text = e.what();
    r.text = r.text.substr(0, r.text.find('\n'));
  }
  return r;
}

// The measured run of an optimizer in fp32: the lesson's model's, else null.
const OptimizerRun* fp32_run(const Lesson& lesson, Optimizer o) {
  for (const std::vector<OptimizerRun>* runs : {&lesson.training, &lesson.compared})
    for (const OptimizerRun& r : *runs)
      if (r.optimizer == o && r.precision == amp::Precision::fp32) return &r;
  return nullptr;
}

ExerciseResult quantization(const Lesson& lesson) {
  return attempt("09.1", [&](ExerciseResult& r) {
    const int64_t block = lesson.settings.train.eight_bit.block_size;
    const std::vector<float> x = normal_values(1000, lesson.settings.train.seed);  // (1000)
    double map_diff = 0.0;
    for (const bool is_signed : {true, false}) {
      const CodeMap mine = dynamic_code_map(is_signed);
      const auto& runtime = kernels::cpu::dynamic_quantization_map(is_signed);
      for (size_t i = 0; i < mine.size(); ++i)
        map_diff =
            std::max(map_diff, std::abs(static_cast<double>(mine[i]) - runtime[i]) /
                                   std::max(1e-30, std::abs(static_cast<double>(runtime[i]))));
    }
    // Quantised with the runtime's map, so that only quantize_blockwise is compared here.
    const auto& runtime_map = kernels::cpu::dynamic_quantization_map(true);
    CodeMap code;
    std::copy(runtime_map.begin(), runtime_map.end(), code.begin());
    const BlockwiseQuantized q = quantize_blockwise(x, block, code);
    std::vector<uint8_t> codes(x.size());  // (1000)
    std::vector<float> absmax(
        static_cast<size_t>(kernels::cpu::quantization_block_count(1000, block)));
    kernels::cpu::quantize_blockwise(codes.data(), absmax.data(), x.data(), 1000, block,
                                     runtime_map);
    size_t equal = 0;
    for (size_t i = 0; i < codes.size() && i < q.codes.size(); ++i) equal += q.codes[i] == codes[i];
    r.agrees = map_diff <= 1e-6 && q.codes.size() == codes.size() && equal == codes.size() &&
               q.absmax == absmax;
    r.text = "quantize_blockwise of 1000 N(0,1) values, B=" + std::to_string(block) + ": " +
             std::to_string(equal) + " of 1000 codes and " +
             (q.absmax == absmax ? "every" : "NOT every") +
             " absmax equal to the runtime's; dynamic_code_map within " + number(map_diff) +
             " of its codes (relative)";
  });
}

ExerciseResult lion(const Lesson& lesson) {
  return attempt("09.2", [&](ExerciseResult& r) {
    kernels::cpu::LionHyperparameters hp;
    hp.learning_rate = lesson.settings.rates.lion;
    hp.weight_decay = 0.1f;
    constexpr size_t n = 777;
    std::vector<float> mine = normal_values(n, 3), runtime = mine;  // (n) parameters
    std::vector<float> m_mine(n, 0.0f), m_runtime(n, 0.0f);         // (n) momentum
    for (uint64_t step = 0; step < 3; ++step) {
      const std::vector<float> g = normal_values(n, 10 + step);  // (n)
      lion_step(mine, g, m_mine, hp);
      kernels::cpu::lion_update_reference<float>(runtime.data(), g.data(), m_runtime.data(),
                                                 static_cast<int64_t>(n), hp);
    }
    double diff = 0.0;
    for (size_t i = 0; i < n; ++i)
      diff = std::max({diff, std::abs(static_cast<double>(mine[i]) - runtime[i]),
                       std::abs(static_cast<double>(m_mine[i]) - m_runtime[i])});
    // Both are the same f32 formula; a contraction into an FMA may move the last bit.
    r.agrees = diff <= 1e-6;
    r.text = "3 lion_step calls on 777 N(0,1) values, lr " + number(hp.learning_rate) +
             ": max |diff| " + number(diff) + " against the runtime's kernel";
  });
}

ExerciseResult adam_mini(const Lesson& lesson) {
  return attempt("09.3", [&](ExerciseResult& r) {
    const ModelConfig& model = lesson.settings.train.model;
    const int64_t mine = adam_mini_v_count(model);
    const OptimizerRun* run = fp32_run(lesson, Optimizer::adam_mini);
    if (!run) {
      r.agrees = true;
      r.text = "adam_mini_v_count = " + std::to_string(mine) + " (no fp32 adam-mini run here)";
      return;
    }
    const int64_t measured = (run->bytes.moment_bytes - 4 * run->bytes.parameter_count) / 4;
    r.agrees = mine == measured;
    r.text = "adam_mini_v_count(" + model.name + ") = " + std::to_string(mine) +
             " (measured: " + std::to_string(measured) + " v values)";
  });
}

ExerciseResult moment_bytes(const Lesson& lesson) {
  return attempt("09.4", [&](ExerciseResult& r) {
    const ModelConfig& model = lesson.settings.train.model;
    const std::vector<ParameterSpec> tensors = model.parameters();
    const plan::EightBitOptions& eb = lesson.settings.train.eight_bit;
    const int64_t eight = adamw_8bit_moment_bytes(tensors, eb.block_size, eb.min_8bit_size).total;
    const int64_t factored = adafactor_moment_bytes(tensors, 4);
    r.agrees = true;
    r.text = "adamw_8bit_moment_bytes = " + std::to_string(eight);
    if (const OptimizerRun* run = fp32_run(lesson, Optimizer::adamw_8bit);
        run && !eb.fp32_embeddings) {
      const int64_t measured = run->bytes.moment_bytes + run->bytes.absmax_bytes;
      r.agrees = r.agrees && eight == measured;
      r.text += " (measured " + std::to_string(measured) + ")";
    }
    r.text += ", adafactor_moment_bytes = " + std::to_string(factored);
    if (const OptimizerRun* run = fp32_run(lesson, Optimizer::adafactor)) {
      r.agrees = r.agrees && factored == run->bytes.moment_bytes;
      r.text += " (measured " + std::to_string(run->bytes.moment_bytes) + ")";
    }
  });
}

}  // namespace

std::vector<ExerciseResult> exercise_results(const Lesson& lesson) {
  return {quantization(lesson), lion(lesson), adam_mini(lesson), moment_bytes(lesson)};
}

}  // namespace vramlab::lesson09
