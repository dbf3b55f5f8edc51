// Lesson 01 at scale (see measure_scale.h).
#include "lessons/01-memory-breakdown/measure_scale.h"

#include <tuple>

#include "common/estimate/estimator.h"
#include "common/memory/device.h"
#include "common/memory/memory_category.h"
#include "common/model/model_flags.h"
#include "common/plan/plan.h"
#include "common/report/terminal.h"
#include "lessons/01-memory-breakdown/measure_step.h"

namespace vramlab::lesson01 {

namespace {

using memory::MemoryCategory;

ScaleStep step_on_meta(const ModelConfig& model, int64_t batch, int64_t seq) {
  StepSettings s;
  s.model = model;
  s.batch = batch;
  s.seq = seq;
  s.device = memory::parse_device("meta");
  const StepMeasurement m = measure_training_step(s);
  return {model.name,
          batch,
          seq,
          m.parameter_count,
          m.peak_of(MemoryCategory::parameter),
          m.peak_of(MemoryCategory::gradient),
          m.peak_of(MemoryCategory::optimizer_state),
          m.peak_of(MemoryCategory::activation),
          m.peak_allocated_bytes};
}

struct FormulaSpec {
  std::string name;
  int64_t parameter_count = 0;  // 0 with a model
  plan::Precision precision = plan::Precision::fp32;
  estimate::Optimizer optimizer = estimate::Optimizer::adamw;
  plan::ZeroStage zero = plan::ZeroStage::ddp;
  std::string offload = "none";
};

ScaleFormula formula(const FormulaSpec& spec, const ModelConfig* model = nullptr,
                     int64_t batch = 0) {
  estimate::EstimateInputs in;
  if (model) {
    in.model = *model;
    in.micro_batch = batch;
  } else {
    in.parameter_count = spec.parameter_count;
  }
  in.plan.amp.precision = spec.precision;
  in.plan.optimizer.name = spec.optimizer;
  in.plan.parallel.zero = spec.zero;
  in.plan.offload = plan::parse_offload(spec.offload);
  const estimate::Estimate e = estimate::estimate_memory(in);
  return {spec.name,
          model ? model->name : "",
          std::string(plan::precision_name(spec.precision)),
          std::string(estimate::optimizer_name(spec.optimizer)),
          std::string(plan::zero_stage_name(spec.zero)),
          spec.offload,
          e.parameter_count,
          model ? batch : 0,
          e.parameters.bytes,
          e.gradients.bytes,
          e.optimizer_states.bytes,
          e.activations.bytes,
          e.total_bytes,
          e.cpu_offload_bytes};
}

}  // namespace

ModelConfig gpt_1_3b() {
  ModelFlags flags;
  flags.family = "gpt2";
  flags.layers = 24;
  flags.hidden = 2048;
  flags.heads = 16;
  flags.vocab = 50257;
  flags.max_seq = 2048;
  ModelConfig model = flags.build(2048);
  model.name = "gpt-1.3b";
  return model;
}

Scale measure_scale(void (*progress)(const std::string&)) {
  Scale scale;
  const ModelConfig llama = model_config_by_name("llama2-7b");
  const ModelConfig gpt = gpt_1_3b();
  for (const auto& [model, batch, seq] : {std::tuple{&llama, 1, 1024},
                                          {&llama, 4, 1024},
                                          {&llama, 1, 4096},
                                          {&gpt, 1, 2048},
                                          {&gpt, 8, 2048}}) {
    if (progress)
      progress("at scale on meta: " + model->name + ", B=" + std::to_string(batch) +
               ", T=" + std::to_string(seq));
    scale.steps.push_back(step_on_meta(*model, batch, seq));
  }
  using estimate::Optimizer;
  using plan::Precision;
  const int64_t seven = 7'000'000'000, one = 1'000'000'000;
  for (const FormulaSpec& spec : std::vector<FormulaSpec>{
           {"fp32, AdamW", seven},
           {"mixed-fp16, AdamW", seven, Precision::mixed_fp16},
           {"pure bf16, AdamW", seven, Precision::bf16},
           {"pure bf16, 8-bit AdamW", seven, Precision::bf16, Optimizer::adamw_8bit},
           {"mixed-bf16, ZeRO-2, optimizer offloaded", seven, Precision::mixed_bf16,
            Optimizer::adamw, plan::ZeroStage::gradients, "optimizer"},
           {"mixed-bf16, ZeRO-3, optimizer and parameters offloaded", seven, Precision::mixed_bf16,
            Optimizer::adamw, plan::ZeroStage::parameters, "both"},
           {"fp32, AdamW", one},
           {"mixed-fp16, AdamW", one, Precision::mixed_fp16}})
    scale.formulas.push_back(formula(spec));
  for (const int64_t batch : {1, 9})
    scale.formulas.push_back(formula({"mixed-bf16, AdamW", 0, Precision::mixed_bf16}, &gpt, batch));
  for (ScaleFormula& f : scale.formulas)
    if (f.model.empty())
      f.name = report::format_count_short(static_cast<uint64_t>(f.parameter_count)) + ", " + f.name;
  return scale;
}

}  // namespace vramlab::lesson01
