/// \file
/// \brief Lesson 01 at scale: the models the tutorials talk about, one fp32 AdamW step each on
/// `meta` (the allocator's exact bytes, nothing allocated), beside `vramlab estimate`'s model
/// states for a bare parameter count under other precisions, optimizers and offload. Their
/// tables are breakdown_report.h's render_scale().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model/model_config.h"

namespace vramlab::lesson01 {

/// One training step on meta: the allocator's peak of each category, and of all.
struct ScaleStep {
  std::string model;             ///< its name ("" for explicit shapes).
  int64_t batch = 0;             ///< B.
  int64_t seq = 0;               ///< T.
  int64_t parameter_count = 0;   ///< Ψ.
  int64_t parameters = 0;        ///< bytes, fp32.
  int64_t gradients = 0;         ///< bytes, fp32.
  int64_t optimizer_states = 0;  ///< bytes, AdamW's m and v.
  int64_t activations = 0;       ///< the saved activations' peak.
  int64_t peak = 0;              ///< allocated_bytes.all.peak of the step.
};

/// The estimator's bytes for a model (or a bare parameter count) under one plan, one device.
struct ScaleFormula {
  std::string name;              ///< the plan, e.g. "mixed-bf16, ZeRO-2, optimizer offloaded".
  std::string model;             ///< the model's name, or "" for a bare parameter count.
  std::string precision;         ///< e.g. "mixed-bf16".
  std::string optimizer;         ///< e.g. "adamw-8bit".
  std::string zero;              ///< "ddp", "zero1", "zero2" or "zero3".
  std::string offload;           ///< "none", "optimizer", "params" or "both".
  int64_t parameter_count = 0;   ///< Ψ.
  int64_t batch = 0;             ///< B (with a model; 0 without).
  int64_t parameters = 0;        ///< bytes on the device.
  int64_t gradients = 0;         ///< bytes on the device.
  int64_t optimizer_states = 0;  ///< bytes on the device.
  int64_t activations = 0;       ///< Korthikanti et al.'s 16-bit count (with a model; 0 without).
  int64_t device = 0;            ///< all of the above.
  int64_t host = 0;              ///< bytes offloaded to host memory.
};

/// What the lesson shows at scale.
struct Scale {
  std::vector<ScaleStep> steps;        ///< measured on meta.
  std::vector<ScaleFormula> formulas;  ///< the estimator's.
};

/// A GPT-2-shaped 1.3B model (24 layers, width 2048, 16 heads, V = 50257, T = 2048): the shape
/// of the tutorials' activation claims.
ModelConfig gpt_1_3b();

/// Runs the steps on meta and the estimator's rows (a second or two).
/// \param progress if not null, told one line per step.
/// \return the steps and rows.
Scale measure_scale(void (*progress)(const std::string&) = nullptr);

// `--json`'s "scale": {"steps": [...], "formulas": [...]}, each row an object of its fields
// (nlohmann's to_json/from_json; no documentation of their own).
/// \cond
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ScaleStep, model, batch, seq, parameter_count, parameters,
                                   gradients, optimizer_states, activations, peak)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ScaleFormula, name, model, precision, optimizer, zero, offload,
                                   parameter_count, batch, parameters, gradients, optimizer_states,
                                   activations, device, host)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Scale, steps, formulas)
/// \endcond

}  // namespace vramlab::lesson01
