// A real training step's memory history: the training phase and module path of every saved
// activation of a GPT-2 and a Llama step, with and without recomputation, and the C++ call stack
// of the attention probabilities.
//   build/tests/bin/test_recorded_step
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/estimate/runtime_activations.h"
#include "common/memory/call_stack.h"
#include "common/memory/device.h"
#include "common/memory/history.h"
#include "common/model/model_config.h"
#include "common/model/saved_tensor_names.h"
#include "common/nn/runtime.h"
#include "common/recompute/recompute_spec.h"
#include "common/train/trainer.h"

namespace vramlab::memory {
namespace {

constexpr int64_t kBatch = 2;
constexpr int64_t kSeq = 11;

std::vector<ModelConfig> models() {
  return {gpt2_config("rec-gpt2", 3, 32, 4, 40, 16),
          llama_config("rec-llama", 3, 32, 4, 2, 64, 40, 16)};
}

train::TrainOptions options_for(const ModelConfig& model, std::string_view recompute) {
  train::TrainOptions options;
  options.model = model;
  options.batch = kBatch;
  options.seq = kSeq;
  options.seed = 7;
  options.plan.recompute = recompute::parse_recompute_spec(recompute);
  return options;
}

// The module inside a block that saves \p name, by the parameter names of \p model's family:
// ln1/norm1, attn, ln2/norm2 or mlp.
std::string block_submodule(const ModelConfig& model, const std::string& name) {
  const bool gpt2 = model.family == ModelFamily::gpt2;
  for (const char* norm : {saved::ln1, saved::norm1}) {
    if (name == norm || name == saved::mean_of(norm) || name == saved::rstd_of(norm))
      return gpt2 ? "ln1" : "norm1";
  }
  for (const char* norm : {saved::ln2, saved::norm2}) {
    if (name == norm || name == saved::mean_of(norm) || name == saved::rstd_of(norm))
      return gpt2 ? "ln2" : "norm2";
  }
  for (const char* attn : {saved::qkv, saved::q, saved::k, saved::v, saved::att, saved::lse,
                           saved::atty, saved::residual2}) {
    if (name == attn) return "attn";
  }
  for (const char* mlp :
       {saved::fch, saved::fch_gelu, saved::gate, saved::up, saved::swiglu, saved::residual3}) {
    if (name == mlp) return "mlp";
  }
  return "(no module for " + name + ")";
}

// The module outside the blocks that saves \p name.
std::string outer_module(const ModelConfig& model, const std::string& name) {
  const bool gpt2 = model.family == ModelFamily::gpt2;
  if (name == saved::encoded) return gpt2 ? "wte" : "embed";
  if (name == saved::lnf || name == saved::mean_of(saved::lnf) ||
      name == saved::rstd_of(saved::lnf))
    return gpt2 ? "lnf" : "normf";
  if (name == saved::probs || name == saved::losses) return "loss";
  if (name == saved::logits) return "lm_head";
  return "(no module for " + name + ")";
}

struct SavedAllocation {
  std::string module;
  TrainingPhase phase;
};

// Every activation allocated in the step, by its full name ("blocks.1.att", "probs"), in order.
std::map<std::string, std::vector<SavedAllocation>> activations_of(
    const std::vector<TraceEntry>& trace) {
  std::map<std::string, std::vector<SavedAllocation>> by_name;
  for (const TraceEntry& e : trace) {
    if (e.action == TraceAction::alloc && e.category == MemoryCategory::activation)
      by_name[e.name].push_back({e.module, e.phase});
  }
  return by_name;
}

void expect_labelled_step(const ModelConfig& model, std::string_view recompute) {
  SCOPED_TRACE(model.name + " --recompute " + std::string(recompute));
  nn::Runtime runtime(parse_device("sim:t4-16g"));
  const train::TrainOptions options = options_for(model, recompute);
  train::Trainer trainer(runtime, options);
  runtime.allocator().record_history(RecordMode::all);
  trainer.step();
  const std::vector<TraceEntry> trace = runtime.allocator().trace();
  const auto by_name = activations_of(trace);
  const bool recomputed = recompute != "none";

  std::set<std::string> expected;
  for (const auto& spec : estimate::runtime_saved_activations_per_layer(model, kBatch, kSeq))
    for (int64_t l = 0; l < model.layers; ++l)
      expected.insert("blocks." + std::to_string(l) + "." + spec.name);
  for (const auto& spec : estimate::runtime_saved_activations_outside_layers(model, kBatch, kSeq))
    if (spec.name != saved::logits) expected.insert(spec.name);  // a temporary, checked below
  std::set<std::string> seen;
  for (const auto& [name, allocations] : by_name) seen.insert(name);
  EXPECT_EQ(seen, expected);

  for (const auto& [name, allocations] : by_name) {
    std::string want_module;
    bool in_block = name.starts_with("blocks.");
    if (in_block) {
      const size_t dot = name.find('.', 7);
      want_module = name.substr(0, dot) + "." + block_submodule(model, name.substr(dot + 1));
    } else {
      want_module = outer_module(model, name);
    }
    std::vector<TrainingPhase> phases;
    for (const SavedAllocation& a : allocations) {
      EXPECT_EQ(a.module, want_module) << name;
      phases.push_back(a.phase);
    }
    // Under full recomputation every block runs its forward again inside backward.
    const std::vector<TrainingPhase> want_phases =
        in_block && recomputed
            ? std::vector<TrainingPhase>{TrainingPhase::forward, TrainingPhase::recompute}
            : std::vector<TrainingPhase>{TrainingPhase::forward};
    EXPECT_EQ(phases, want_phases) << name;
  }

  int logits = 0;
  for (const TraceEntry& e : trace) {
    if (e.action != TraceAction::alloc || e.name != saved::logits) continue;
    ++logits;
    EXPECT_EQ(e.module, "lm_head");
    EXPECT_EQ(e.phase, TrainingPhase::forward);
    EXPECT_EQ(e.category, MemoryCategory::temporary);
  }
  EXPECT_EQ(logits, 1);
}

TEST(RecordedStep, EverySavedActivationCarriesItsModuleAndForwardPhase) {
  for (const ModelConfig& model : models()) expect_labelled_step(model, "none");
}

TEST(RecordedStep, RecomputedBlocksSaveAgainInTheRecomputePhase) {
  for (const ModelConfig& model : models()) expect_labelled_step(model, "full");
}

TEST(RecordedStep, EveryAllocationHasAPhaseAndStatesAreTheOptimizers) {
  nn::Runtime runtime(parse_device("sim:t4-16g"));
  train::Trainer trainer(runtime, options_for(models()[0], "none"));
  runtime.allocator().record_history(RecordMode::all);
  trainer.step();
  std::map<std::string, int> states;
  for (const TraceEntry& e : runtime.allocator().trace()) {
    if (e.action != TraceAction::alloc) continue;
    EXPECT_NE(e.phase, TrainingPhase::none) << e.name << " was allocated outside every phase";
    if (e.category == MemoryCategory::gradient) {
      EXPECT_EQ(e.phase, TrainingPhase::backward) << e.name;
    } else if (e.category == MemoryCategory::optimizer_state) {
      EXPECT_EQ(e.phase, TrainingPhase::optimizer) << e.name;
      EXPECT_EQ(e.module, "optimizer") << e.name;
      ++states[e.name];
    }
  }
  EXPECT_EQ(states.size(), 2u);  // AdamW's two moments
}

// Line \p number (1-based) of the file at \p path, "" when there is none.
std::string source_line(const std::string& path, std::int64_t number) {
  std::ifstream file(path);
  std::string line;
  for (std::int64_t i = 0; i < number && std::getline(file, line); ++i) {
  }
  return number > 0 && file ? line : std::string();
}

bool names_function(const std::vector<StackFrame>& frames, std::string_view function) {
  for (const StackFrame& frame : frames) {
    if (frame.function.find(function) != std::string::npos) return true;
  }
  return false;
}

TEST(RecordedStep, AttentionProbabilitiesComeFromAttentionForward) {
  nn::Runtime runtime(parse_device("sim:t4-16g"));
  train::Trainer trainer(runtime, options_for(models()[0], "none"));
  runtime.allocator().record_history(RecordMode::all, SIZE_MAX, /*cpp_stacks=*/true);
  trainer.step();
  int found = 0;
  for (const TraceEntry& e : runtime.allocator().trace()) {
    if (e.action != TraceAction::alloc || e.name != "blocks.1.att") continue;
    ++found;
    ASSERT_NE(e.stack, 0u);
    const std::vector<StackFrame> frames = resolve_call_stack(e.stack);
    std::string listing;
    for (const StackFrame& frame : frames) listing += "\n  " + frame.function;
    EXPECT_TRUE(names_function(frames, "vramlab::nn::Attention::forward")) << listing;
    for (const StackFrame& frame : frames) {
      if (!frame.function.starts_with("vramlab::nn::Attention::forward")) continue;
      if (VRAMLAB_LINE_TABLES) {
        // The frame's line is the call that saves att.
        EXPECT_TRUE(frame.file.ends_with("common/nn/attention.cpp")) << frame.file;
        EXPECT_NE(source_line(VRAMLAB_SOURCE_DIR "/common/nn/attention.cpp", frame.line)
                      .find("saved::att,"),
                  std::string::npos)
            << "attention.cpp:" << frame.line;
      } else {
        EXPECT_EQ(frame.line, 0) << frame.file;
      }
    }
    EXPECT_TRUE(names_function(frames, "vramlab::nn::TransformerLayer::forward")) << listing;
    EXPECT_TRUE(names_function(frames, "vramlab::train::Trainer::step")) << listing;
    for (const char* machinery :
         {"CachingAllocator::", "capture_call_stack",
          "vramlab::memory::Tensor::", "Runtime::allocate", "boost::stacktrace", "__libc_start"}) {
      EXPECT_FALSE(names_function(frames, machinery)) << machinery << " in" << listing;
    }
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace vramlab::memory
