// The plan's checks and its JSON form (see plan.h).
#include "common/plan/plan.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "common/platform/errors.h"
#include "common/platform/number_text.h"

namespace vramlab::plan {

namespace {

using nlohmann::json;

// A float as the shortest decimal that reads back as the same float ("0.001", not the double
// 0.0010000000474974513): JSON numbers are doubles, and a plan is read by people too.
double shortest(float value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  double wide = value;
  if (error == std::errc()) std::from_chars(text, end, wide);
  return wide;
}

// One JSON object being read: every key it takes, each read at most once, and at the end
// anything left over is a key the plan does not have.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object())
      throw UsageError(path_ + " must be a JSON object, got " + std::string(j_.type_name()));
  }
  ~ObjectReader() = default;
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  // Calls read(value, path) when the key is present.
  void field(std::string_view key,
             const std::function<void(const json&, const std::string&)>& read) {
    seen_.emplace(key);
    const auto it = j_.find(std::string(key));
    if (it != j_.end()) read(*it, path_ + "." + std::string(key));
  }
  void boolean(std::string_view key, bool& value) {
    field(key, [&](const json& v, const std::string& path) {
      if (!v.is_boolean()) throw bad_type(path, "true or false", v);
      value = v.get<bool>();
    });
  }
  void integer(std::string_view key, int64_t& value) {
    field(key, [&](const json& v, const std::string& path) { value = as_integer(v, path); });
  }
  void real(std::string_view key, float& value) {
    field(key, [&](const json& v, const std::string& path) {
      if (!v.is_number()) throw bad_type(path, "a number", v);
      const double wide = v.get<double>();
      // Converting a double beyond float's range is undefined, and inf would be named instead
      // of the value written.
      if (std::fabs(wide) > static_cast<double>(std::numeric_limits<float>::max()))
        throw UsageError(path + " " + number_text(wide) + " is beyond a float's range");
      value = static_cast<float>(wide);
    });
  }
  template <typename T>
  void text(std::string_view key, T& value, T (*parse)(std::string_view)) {
    field(key, [&](const json& v, const std::string& path) {
      if (!v.is_string()) throw bad_type(path, "a string", v);
      try {
        value = parse(v.get<std::string>());
      } catch (const UsageError& error) {
        throw UsageError(path + ": " + error.what());
      }
    });
  }
  // Every key of the object must have been asked for.
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!seen_.contains(key))
        throw UsageError("unknown key " + json(key).dump() + " in " + path_ +
                         " (expected one of: " + expected() + ")");
  }

  static UsageError bad_type(const std::string& path, const char* expected, const json& v) {
    return UsageError(path + " must be " + expected + ", got " + v.dump());
  }
  static int64_t as_integer(const json& v, const std::string& path) {
    if (!v.is_number_integer()) throw bad_type(path, "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw UsageError(path + " " + v.dump() + " is beyond a 64-bit integer");
    return v.get<int64_t>();
  }

 private:
  std::string expected() const {
    std::string list;
    for (const std::string& key : seen_) list += (list.empty() ? "" : ", ") + key;
    return list;
  }

  const json& j_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
};

json loss_scale_json(const std::optional<LossScaleSpec>& spec) {
  return spec ? json(loss_scale_name(*spec)) : json(nullptr);
}

}  // namespace

OffloadPlan parse_offload(std::string_view text) {
  if (text == "none") return {};
  if (text == "optimizer") return {.optimizer = true};
  if (text == "params") return {.parameters = true};
  if (text == "both") return {.optimizer = true, .parameters = true};
  throw UsageError("unknown offload '" + std::string(text) +
                   "' (expected one of: " + "none, optimizer, params, both)");
}

std::string_view offload_name(const OffloadPlan& offload) {
  if (offload.optimizer && offload.parameters) return "both";
  if (offload.optimizer) return "optimizer";
  if (offload.parameters) return "params";
  return "none";
}

OffloadDevice parse_offload_device(std::string_view text) {
  if (text == "cpu") return OffloadDevice::cpu;
  if (text == "nvme") return OffloadDevice::nvme;
  throw UsageError("unknown offload device '" + std::string(text) + "' (expected cpu or nvme)");
}

std::string_view offload_device_name(OffloadDevice device) {
  return device == OffloadDevice::nvme ? "nvme" : "cpu";
}

int64_t parse_delay_update(std::string_view text) {
  if (text == "off") return 0;
  int64_t step = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, step);
  if (text.empty() || error != std::errc() || at != end || step < 1)
    throw UsageError(
        "--offload-dpu takes off or the step from which the update is delayed "
        "(an integer >= 1), got '" +
        std::string(text) + "'");
  return step;
}

std::string delay_update_name(int64_t delay_update_from) {
  return delay_update_from == 0 ? "off" : std::to_string(delay_update_from);
}

void check_dropout_probability(double p) {
  if (!(p >= 0 && p < 1)) throw UsageError("--dropout must be in [0, 1), got " + number_text(p));
}

void validate(const Plan& plan) {
  const OptimizerPlan& o = plan.optimizer;
  if (!(std::isfinite(o.learning_rate) && o.learning_rate > 0))
    throw UsageError("--lr must be a positive number, got " + number_text(o.learning_rate));
  if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0))
    throw UsageError("weight decay must be a finite number >= 0, got " +
                     number_text(o.weight_decay));
  if (!(std::isfinite(o.max_grad_norm) && o.max_grad_norm >= 0))
    throw UsageError("--clip-grad-norm " + number_text(o.max_grad_norm) +
                     " must be a finite number >= 0 (0 turns clipping off)");
  o.eight_bit.validate();
  check_dropout_probability(plan.dropout.p);
  // A micro-batch list of K entries is made from grad_accum: a K past any real run is bad input,
  // not an allocation that fails (std::length_error) after the model is built.
  constexpr int64_t kMaxGradAccum = int64_t{1} << 24;
  if (plan.batch.grad_accum < 1 || plan.batch.grad_accum > kMaxGradAccum)
    throw UsageError("--grad-accum must be in [1, 2^24], got " +
                     std::to_string(plan.batch.grad_accum));
  for (const int64_t b : plan.batch.micro_batch_sizes)
    if (b < 1) throw UsageError("a micro-batch must hold >= 1 sequence, got " + std::to_string(b));
  const ParallelPlan& p = plan.parallel;
  if (p.data_parallel < 1)
    throw UsageError("--dp must be >= 1, got " + std::to_string(p.data_parallel));
  if (p.tensor_parallel < 1)
    throw UsageError("--tp must be >= 1, got " + std::to_string(p.tensor_parallel));
  if (p.prefetch && p.zero != ZeroStage::parameters)
    throw UsageError("--prefetch gathers ZeRO-3's next unit early: it needs --zero 3");
  if (plan.offload.parameters && p.zero != ZeroStage::parameters)
    throw UsageError("parameter offload needs ZeRO stage 3 (--zero 3), got stage " +
                     std::to_string(static_cast<int64_t>(p.zero)));
  if (!plan.offload.overlap && !plan.offload.optimizer)
    throw UsageError(
        "--offload-overlap off says how offloaded gradients reach the host: it needs "
        "--offload optimizer or both, got --offload " +
        std::string(offload_name(plan.offload)));
  if (!plan.offload.pin_memory && !plan.offload.optimizer)
    throw UsageError(
        "--offload-pin-memory off says how the offloaded optimizer's host buffers are held: it "
        "needs --offload optimizer or both, got --offload " +
        std::string(offload_name(plan.offload)));
  if (plan.activations.loss_chunks < 1 || plan.activations.loss_chunks > kMaxLossChunks)
    throw UsageError("--loss-chunks must be in [1, " + std::to_string(kMaxLossChunks) + "], got " +
                     std::to_string(plan.activations.loss_chunks));
  if (plan.activations.offload && plan.activations.compression != ActivationCompression::none)
    throw UsageError(
        "--offload-activations on moves the saved tensors as they are; --compress-activations " +
        std::string(compression_name(plan.activations.compression)) +
        " keeps them on the device in int8: choose one");
  if (plan.offload.delay_update_from < 0)
    throw UsageError("--offload-dpu must be off or a step >= 1, got " +
                     std::to_string(plan.offload.delay_update_from));
  if (plan.offload.tiled_copy_back && !plan.offload.optimizer)
    throw UsageError(
        "--offload-copy-back tiled says how the host's update returns the parameters: it needs "
        "--offload optimizer or both, got --offload " +
        std::string(offload_name(plan.offload)));
  if (plan.offload.optimizer_device == OffloadDevice::nvme && !plan.offload.optimizer)
    throw UsageError(
        "--offload-optimizer-device nvme says where the offloaded optimizer states live: it needs "
        "--offload optimizer or both, got --offload " +
        std::string(offload_name(plan.offload)));
  if (plan.offload.param_device == OffloadDevice::nvme && !plan.offload.parameters)
    throw UsageError(
        "--offload-param-device nvme says where the offloaded parameters live: it needs "
        "--offload both, got --offload " +
        std::string(offload_name(plan.offload)));
  if (plan.offload.param_device == OffloadDevice::nvme &&
      plan.offload.optimizer_device != OffloadDevice::nvme)
    throw UsageError(
        "--offload-param-device nvme writes a unit's parameters where the update swaps its "
        "states: it needs --offload-optimizer-device nvme");
  // DeepSpeed's rule (docs/_pages/config-json.md: "NVMe offloading is available only with ZeRO
  // stage 3"): the states come to host memory one ZeRO-3 unit at a time.
  if (plan.offload.optimizer_device == OffloadDevice::nvme && p.zero != ZeroStage::parameters)
    throw UsageError(
        "--offload-optimizer-device nvme swaps the states one ZeRO-3 unit at a time: it needs "
        "--zero 3, got stage " +
        std::to_string(static_cast<int64_t>(p.zero)));
  const Optimizer kind = plan.optimizer.name;
  if (plan.offload.optimizer_device == OffloadDevice::nvme && kind != Optimizer::sgd &&
      kind != Optimizer::sgd_momentum && kind != Optimizer::adamw && kind != Optimizer::lion)
    throw UsageError(
        "--offload-optimizer-device nvme swaps states element by element, part by "
        "part: it needs sgd, sgd-momentum, adamw or lion, got " +
        std::string(optimizer_name(kind)));
  if (plan.offload.delay_update_from > 0 && !plan.offload.optimizer)
    throw UsageError(
        "--offload-dpu " + std::to_string(plan.offload.delay_update_from) +
        " delays the host's optimizer update: it needs --offload optimizer or both, got "
        "--offload " +
        std::string(offload_name(plan.offload)));
}

LossScaleSpec effective_loss_scale(const AmpPlan& amp) {
  if (amp.loss_scale) return *amp.loss_scale;
  return amp.precision == Precision::mixed_fp16 ? LossScaleSpec{LossScaleKind::dynamic, 65536.0}
                                                : LossScaleSpec{LossScaleKind::none, 1.0};
}

json to_json(const Plan& plan) {
  const OptimizerPlan& o = plan.optimizer;
  const ParallelPlan& p = plan.parallel;
  return {
      {"amp",
       {{"precision", precision_name(plan.amp.precision)},
        {"fp32_grads", plan.amp.fp32_grads},
        {"stochastic_rounding", plan.amp.stochastic_rounding},
        {"loss_scale", loss_scale_json(plan.amp.loss_scale)}}},
      {"recompute", to_string(plan.recompute)},
      {"activations",
       {{"compression", compression_name(plan.activations.compression)},
        {"offload", plan.activations.offload},
        {"loss_chunks", plan.activations.loss_chunks}}},
      {"attention", attention_kind_name(plan.attention)},
      {"optimizer",
       {{"name", optimizer_name(o.name)},
        {"learning_rate", shortest(o.learning_rate)},
        {"weight_decay", shortest(o.weight_decay)},
        {"max_grad_norm", shortest(o.max_grad_norm)},
        {"eight_bit",
         {{"block_size", o.eight_bit.block_size},
          {"min_8bit_size", o.eight_bit.min_8bit_size},
          {"fp32_embeddings", o.eight_bit.fp32_embeddings}}}}},
      {"batch",
       {{"grad_accum", plan.batch.grad_accum},
        {"micro_batch_sizes", plan.batch.micro_batch_sizes}}},
      {"parallel",
       {{"data_parallel", p.data_parallel},
        {"zero", zero_stage_name(p.zero)},
        {"tensor_parallel", p.tensor_parallel},
        {"sequence_parallel", p.sequence_parallel},
        {"prefetch", p.prefetch}}},
      {"offload",
       {{"optimizer", plan.offload.optimizer},
        {"parameters", plan.offload.parameters},
        {"overlap", plan.offload.overlap},
        {"delay_update_from", plan.offload.delay_update_from},
        {"tiled_copy_back", plan.offload.tiled_copy_back},
        {"optimizer_device", offload_device_name(plan.offload.optimizer_device)},
        {"param_device", offload_device_name(plan.offload.param_device)},
        {"pin_memory", plan.offload.pin_memory}}},
      {"dropout",
       {{"p", shortest(plan.dropout.p)}, {"preserve_rng_state", plan.dropout.preserve_rng_state}}},
  };
}

Plan plan_from_json(const json& j, const Plan& defaults) {
  Plan plan = defaults;
  ObjectReader top(j, "plan");
  top.field("amp", [&](const json& v, const std::string& path) {
    ObjectReader amp(v, path);
    amp.text("precision", plan.amp.precision, parse_precision);
    amp.boolean("fp32_grads", plan.amp.fp32_grads);
    amp.boolean("stochastic_rounding", plan.amp.stochastic_rounding);
    amp.field("loss_scale", [&](const json& s, const std::string& at) {
      if (s.is_null()) {
        plan.amp.loss_scale.reset();
        return;
      }
      if (!s.is_string()) throw ObjectReader::bad_type(at, "a string or null", s);
      try {
        plan.amp.loss_scale = parse_loss_scale(s.get<std::string>());
      } catch (const UsageError& error) {
        throw UsageError(at + ": " + error.what());
      }
    });
    amp.finish();
  });
  top.text("recompute", plan.recompute, parse_recompute_spec);
  top.field("activations", [&](const json& v, const std::string& path) {
    ObjectReader activations(v, path);
    activations.text("compression", plan.activations.compression, parse_compression);
    activations.boolean("offload", plan.activations.offload);
    activations.integer("loss_chunks", plan.activations.loss_chunks);
    activations.finish();
  });
  top.text("attention", plan.attention, parse_attention_kind);
  top.field("optimizer", [&](const json& v, const std::string& path) {
    ObjectReader o(v, path);
    o.text("name", plan.optimizer.name, parse_optimizer);
    o.real("learning_rate", plan.optimizer.learning_rate);
    o.real("weight_decay", plan.optimizer.weight_decay);
    o.real("max_grad_norm", plan.optimizer.max_grad_norm);
    o.field("eight_bit", [&](const json& e, const std::string& at) {
      ObjectReader eight(e, at);
      eight.integer("block_size", plan.optimizer.eight_bit.block_size);
      eight.integer("min_8bit_size", plan.optimizer.eight_bit.min_8bit_size);
      eight.boolean("fp32_embeddings", plan.optimizer.eight_bit.fp32_embeddings);
      eight.finish();
    });
    o.finish();
  });
  top.field("batch", [&](const json& v, const std::string& path) {
    ObjectReader batch(v, path);
    batch.integer("grad_accum", plan.batch.grad_accum);
    batch.field("micro_batch_sizes", [&](const json& list, const std::string& at) {
      if (!list.is_array()) throw ObjectReader::bad_type(at, "an array of integers", list);
      plan.batch.micro_batch_sizes.clear();
      for (size_t i = 0; i < list.size(); ++i)
        plan.batch.micro_batch_sizes.push_back(
            ObjectReader::as_integer(list[i], at + "[" + std::to_string(i) + "]"));
    });
    batch.finish();
  });
  top.field("parallel", [&](const json& v, const std::string& path) {
    ObjectReader p(v, path);
    p.integer("data_parallel", plan.parallel.data_parallel);
    p.text("zero", plan.parallel.zero, parse_zero_stage_name);
    p.integer("tensor_parallel", plan.parallel.tensor_parallel);
    p.boolean("sequence_parallel", plan.parallel.sequence_parallel);
    p.boolean("prefetch", plan.parallel.prefetch);
    p.finish();
  });
  top.field("offload", [&](const json& v, const std::string& path) {
    ObjectReader offload(v, path);
    offload.boolean("optimizer", plan.offload.optimizer);
    offload.boolean("parameters", plan.offload.parameters);
    offload.boolean("overlap", plan.offload.overlap);
    offload.integer("delay_update_from", plan.offload.delay_update_from);
    offload.boolean("tiled_copy_back", plan.offload.tiled_copy_back);
    offload.text("optimizer_device", plan.offload.optimizer_device, parse_offload_device);
    offload.text("param_device", plan.offload.param_device, parse_offload_device);
    offload.boolean("pin_memory", plan.offload.pin_memory);
    offload.finish();
  });
  top.field("dropout", [&](const json& v, const std::string& path) {
    ObjectReader dropout(v, path);
    dropout.real("p", plan.dropout.p);
    dropout.boolean("preserve_rng_state", plan.dropout.preserve_rng_state);
    dropout.finish();
  });
  top.finish();
  validate(plan);
  return plan;
}

Plan read_plan_file(const std::string& path, const Plan& defaults) {
  // A directory opens as a stream on Linux and fails only when read, with the C++ library's text.
  std::error_code error_code;
  if (std::filesystem::is_directory(path, error_code))
    throw UsageError("--plan '" + path + "': is a directory, not a plan file");
  std::ifstream in(path);
  if (!in) throw UsageError("--plan '" + path + "': cannot open the file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& error) {
    throw UsageError("--plan '" + path + "' is not JSON: " + error.what());
  }
  const bool wrapped = j.is_object() && j.contains("plan");
  try {
    return plan_from_json(wrapped ? j["plan"] : j, defaults);
  } catch (const UsageError& error) {
    throw UsageError("--plan '" + path + "': " + error.what());
  }
}

}  // namespace vramlab::plan
