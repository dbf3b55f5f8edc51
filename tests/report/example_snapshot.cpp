// A tiny caching allocator (segments of 2 MiB / 20 MiB, first-fit on the smallest fitting free
// block, splitting and coalescing) driven by a synthetic training loop, recording a PyTorch-schema
// snapshot. Only for tests and benchmarks of the report layer.
#include "tests/report/example_snapshot.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace vramlab::report::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSmallSize = 1 * kMiB;     // requests up to this go to the small pool
constexpr uint64_t kSmallBuffer = 2 * kMiB;   // small-pool segment size
constexpr uint64_t kLargeBuffer = 20 * kMiB;  // large-pool segment size for requests below 10 MiB
constexpr uint64_t kMinBlockSize = 512;

struct Block {
  uint64_t offset;
  uint64_t size;
  uint64_t requested_size;
  bool allocated;
  nlohmann::json owner;  // the keys naming who allocated it ("category", "frames", ...)
};

struct Segment {
  uint64_t address;
  uint64_t total_size;
  bool small;
  std::vector<Block> blocks;  // ordered by offset, covering the segment
};

nlohmann::json frame(const std::string& filename, int line, const std::string& name) {
  return {{"filename", filename}, {"line", line}, {"name", name}};
}

// What a vramlab runtime's C++ stack for this allocation would look like, innermost first: the
// allocator, the tensor factory, the op, the module's forward or backward, the trainer, main.
nlohmann::json cpp_frames(const std::string& phase, const std::string& module,
                          const std::string& name) {
  const std::string src = "/work/vramlab/common/";
  nlohmann::json frames = nlohmann::json::array(
      {frame(src + "memory/caching_allocator.cpp", 212,
             "vramlab::memory::CachingAllocator::malloc(unsigned long, int)"),
       frame(src + "tensor/tensor.cpp", 57,
             "vramlab::Tensor::empty(vramlab::Shape const&, vramlab::DType, "
             "vramlab::memory::Category, std::basic_string_view<char, std::char_traits<char> >)")});
  if (phase == "forward" && !module.empty()) {
    const bool attention = module.ends_with(".attn");
    if (name == "scores")
      frames.push_back(frame(src + "kernels/cpu/matmul.cpp", 133,
                             "void vramlab::kernels::matmul<float>(float const*, float const*, "
                             "float*, long, long, long)"));
    frames.push_back(frame(src + (attention ? "nn/attention.cpp" : "nn/mlp.cpp"),
                           attention ? 88 : 41,
                           attention ? "vramlab::nn::CausalSelfAttention::forward(vramlab::Tensor "
                                       "const&, vramlab::nn::ForwardContext&)"
                                     : "vramlab::nn::Mlp::forward(vramlab::Tensor const&, "
                                       "vramlab::nn::ForwardContext&)"));
    frames.push_back(frame(src + "nn/transformer_layer.cpp", 30,
                           "vramlab::nn::TransformerLayer::forward(vramlab::Tensor const&, "
                           "vramlab::nn::ForwardContext&)"));
    frames.push_back(frame(src + "nn/gpt.cpp", 112,
                           "vramlab::nn::Gpt::forward(vramlab::Tensor const&, "
                           "vramlab::nn::ForwardContext&)"));
  } else if (phase == "backward") {
    frames.push_back(frame(src + "nn/transformer_layer.cpp", 77,
                           "vramlab::nn::TransformerLayer::backward(vramlab::Tensor const&, "
                           "vramlab::nn::BackwardContext&)"));
    frames.push_back(
        frame(src + "nn/gpt.cpp", 160, "vramlab::nn::Gpt::backward(vramlab::Tensor const&)"));
  } else if (phase == "optimizer") {
    frames.push_back(frame(src + "optim/adamw.cpp", 64,
                           "vramlab::optim::AdamW::step()::{lambda(unsigned long)#1}::operator()"
                           "(unsigned long) const"));
    frames.push_back(frame(src + "optim/adamw.cpp", 70, "vramlab::optim::AdamW::step()"));
  } else if (phase == "setup") {
    frames.push_back(
        frame(src + "nn/gpt.cpp", 40, "vramlab::nn::Gpt::Gpt(vramlab::nn::GptConfig const&)"));
  } else {
    frames.push_back(frame(src + "data/loader.cpp", 19, "(anonymous namespace)::next_batch(int)"));
  }
  frames.push_back(phase == "setup"
                       ? frame(src + "train/trainer.cpp", 58,
                               "vramlab::train::Trainer::Trainer(vramlab::train::TrainConfig "
                               "const&)")
                       : frame(src + "train/trainer.cpp", 201, "vramlab::train::Trainer::step()"));
  frames.push_back(frame("/work/vramlab/tools/vramlab/main.cpp", 48, "main"));
  frames.push_back(frame("", 0, "__libc_start_main"));
  return frames;
}

bool has_owner_keys(OwnerStyle style) {
  return style == OwnerStyle::owner_keys || style == OwnerStyle::owner_keys_with_stacks;
}

// The keys an allocation's entries carry in `style` (see OwnerStyle).
nlohmann::json owner_keys(OwnerStyle style, const std::string& category, const std::string& phase,
                          const std::string& module, const std::string& name) {
  switch (style) {
    case OwnerStyle::label_frame:
      return {{"category", category},
              {"frames", nlohmann::json::array({frame(phase + "/" + module, 0, name)})}};
    case OwnerStyle::pytorch:
      return {{"frames", cpp_frames(phase, module, name)}};
    case OwnerStyle::owner_keys:
    case OwnerStyle::owner_keys_with_stacks:
      break;
  }
  nlohmann::json frames = nlohmann::json::array({frame(module, 0, name)});
  if (style == OwnerStyle::owner_keys_with_stacks) {
    for (nlohmann::json& cpp : cpp_frames(phase, module, name)) frames.push_back(std::move(cpp));
  }
  return {{"category", category},
          {"module", module},
          {"phase", phase},
          {"tensor", name},
          {"frames", std::move(frames)}};
}

class ExampleAllocator {
 public:
  explicit ExampleAllocator(OwnerStyle style) : style_(style) {}

  uint64_t malloc(uint64_t requested, const std::string& category, const std::string& phase,
                  const std::string& module, const std::string& name) {
    const uint64_t size =
        std::max(kMinBlockSize, (requested + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize);
    const bool small = size <= kSmallSize;
    const nlohmann::json owner = owner_keys(style_, category, phase, module, name);
    auto [segment_index, block_index] = find_free(size, small);
    if (segment_index < 0) {
      const uint64_t segment_size =
          small
              ? kSmallBuffer
              : (size < 10 * kMiB ? kLargeBuffer : (size + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB));
      Segment segment{next_address_, segment_size, small, {free_block(0, segment_size)}};
      next_address_ += segment_size + 2 * kMiB;  // gaps make addresses look like a real device
      trace("segment_alloc", segment.address, segment_size, owner);
      segments_.push_back(std::move(segment));
      segment_index = static_cast<long>(segments_.size() - 1);
      block_index = 0;
    }
    Segment& segment = segments_[static_cast<size_t>(segment_index)];
    Block& block = segment.blocks[static_cast<size_t>(block_index)];
    const uint64_t remaining = block.size - size;
    const bool split = small ? remaining >= kMinBlockSize : remaining > kSmallSize;
    if (split) {
      Block rest = free_block(block.offset + size, remaining);
      block.size = size;
      segment.blocks.insert(segment.blocks.begin() + block_index + 1, rest);
    }
    Block& chosen = segment.blocks[static_cast<size_t>(block_index)];
    chosen.allocated = true;
    chosen.requested_size = requested;
    chosen.owner = owner;
    const uint64_t address = segment.address + chosen.offset;
    trace("alloc", address, requested, owner);
    return address;
  }

  void free(uint64_t address) {
    for (Segment& segment : segments_) {
      if (address < segment.address || address >= segment.address + segment.total_size) continue;
      for (size_t i = 0; i < segment.blocks.size(); ++i) {
        Block& block = segment.blocks[i];
        if (segment.address + block.offset != address || !block.allocated) continue;
        trace("free_requested", address, block.requested_size, block.owner);
        trace("free_completed", address, block.requested_size, block.owner);
        block = free_block(block.offset, block.size);
        merge_free_neighbours(segment, i);
        return;
      }
    }
  }

  void empty_cache() {
    for (auto it = segments_.begin(); it != segments_.end();) {
      if (it->blocks.size() == 1 && !it->blocks[0].allocated) {
        trace("segment_free", it->address, it->total_size, no_owner());
        it = segments_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void oom(uint64_t requested) {
    nlohmann::json entry = {{"action", "oom"},       {"size", requested},
                            {"device_free", 0},      {"stream", 0},
                            {"time_us", time_us_++}, {"frames", nlohmann::json::array()}};
    if (has_owner_keys(style_)) entry["time_ns"] = time_ns_;
    entry.update(no_owner());
    trace_.push_back(std::move(entry));
  }

  void start_recording() { trace_ = nlohmann::json::array(); }

  nlohmann::json snapshot() const {
    std::vector<const Segment*> by_address;
    for (const Segment& segment : segments_) by_address.push_back(&segment);
    std::sort(by_address.begin(), by_address.end(),
              [](const Segment* a, const Segment* b) { return a->address < b->address; });
    nlohmann::json segments = nlohmann::json::array();
    for (const Segment* segment : by_address) {
      nlohmann::json blocks = nlohmann::json::array();
      uint64_t allocated = 0;
      uint64_t requested = 0;
      for (const Block& block : segment->blocks) {
        nlohmann::json entry = {{"address", segment->address + block.offset},
                                {"size", block.size},
                                {"requested_size", block.requested_size},
                                {"state", block.allocated ? "active_allocated" : "inactive"},
                                {"frames", nlohmann::json::array()}};
        entry.update(block.owner);
        if (block.allocated) {
          allocated += block.size;
          requested += block.requested_size;
        }
        blocks.push_back(std::move(entry));
      }
      segments.push_back({{"device", 0},
                          {"address", segment->address},
                          {"total_size", segment->total_size},
                          {"allocated_size", allocated},
                          {"active_size", allocated},
                          {"requested_size", requested},
                          {"stream", 0},
                          {"segment_type", segment->small ? "small" : "large"},
                          {"segment_pool_id", {0, 0}},
                          {"is_expandable", false},
                          {"frames", nlohmann::json::array()},
                          {"blocks", std::move(blocks)}});
    }
    return {{"segments", std::move(segments)},
            {"device_traces", nlohmann::json::array({trace_})},
            {"allocator_settings",
             {{"PYTORCH_CUDA_ALLOC_CONF", ""},
              {"max_split_size", -1},
              {"garbage_collection_threshold", 0.0},
              {"expandable_segments", false},
              {"release_lock_on_cudamalloc", false},
              {"pinned_use_host_register", false},
              {"roundup_power2_divisions", {{"1", 0}, {"2", 0}, {"4", 0}, {"8", 0}}}}}};
  }

 private:
  // What a free block or a segment event says of its owner: nobody.
  nlohmann::json no_owner() const {
    if (!has_owner_keys(style_)) return nlohmann::json::object();
    return {{"module", ""}, {"phase", "none"}, {"tensor", ""}};
  }

  Block free_block(uint64_t offset, uint64_t size) const {
    return {offset, size, 0, false, no_owner()};
  }

  // Smallest free block of the right pool that fits; {-1, -1} if none.
  std::pair<long, long> find_free(uint64_t size, bool small) const {
    std::pair<long, long> best{-1, -1};
    uint64_t best_size = UINT64_MAX;
    for (size_t s = 0; s < segments_.size(); ++s) {
      if (segments_[s].small != small) continue;
      for (size_t b = 0; b < segments_[s].blocks.size(); ++b) {
        const Block& block = segments_[s].blocks[b];
        if (!block.allocated && block.size >= size && block.size < best_size) {
          best = {static_cast<long>(s), static_cast<long>(b)};
          best_size = block.size;
        }
      }
    }
    return best;
  }

  static void merge_free_neighbours(Segment& segment, size_t index) {
    if (index + 1 < segment.blocks.size() && !segment.blocks[index + 1].allocated) {
      segment.blocks[index].size += segment.blocks[index + 1].size;
      segment.blocks.erase(segment.blocks.begin() + static_cast<long>(index) + 1);
    }
    if (index > 0 && !segment.blocks[index - 1].allocated) {
      segment.blocks[index - 1].size += segment.blocks[index].size;
      segment.blocks.erase(segment.blocks.begin() + static_cast<long>(index));
    }
  }

  void trace(const char* action, uint64_t address, uint64_t size, const nlohmann::json& owner) {
    nlohmann::json entry = {{"action", action},    {"addr", address},
                            {"size", size},        {"stream", 0},
                            {"time_us", time_us_}, {"frames", nlohmann::json::array()}};
    if (has_owner_keys(style_)) entry["time_ns"] = time_ns_;
    entry.update(owner);
    time_us_ += 3;
    time_ns_ += 2500;
    trace_.push_back(std::move(entry));
  }

  OwnerStyle style_;
  std::vector<Segment> segments_;
  uint64_t next_address_ = 0x7f0000000000ull;
  uint64_t time_us_ = 1'700'000'000'000'000ull;
  uint64_t time_ns_ = 5'000'000'000ull;  // a steady clock
  nlohmann::json trace_ = nlohmann::json::array();
};

}  // namespace

nlohmann::json make_example_snapshot(const ExampleWorkload& workload) {
  std::mt19937_64 rng(workload.seed);
  auto jitter = [&](uint64_t bytes) {
    std::uniform_int_distribution<uint64_t> extra(0, bytes / 4);
    return bytes + extra(rng);
  };
  ExampleAllocator allocator(workload.owner_style);
  const uint64_t hidden = workload.hidden_bytes;
  const std::string prefix = "blocks.";

  // Parameters exist before recording starts: they appear only in "segments".
  struct Tensor {
    uint64_t address;
    uint64_t bytes;
  };
  std::vector<Tensor> parameters;
  for (size_t layer = 0; layer < workload.layer_count; ++layer) {
    const std::string block = prefix + std::to_string(layer);
    for (const char* weight :
         {"attn.qkv.weight", "attn.proj.weight", "mlp.fc.weight", "mlp.proj.weight", "ln.bias"}) {
      const uint64_t bytes =
          std::string(weight) == "ln.bias" ? hidden / 256 + 64 : jitter(3 * hidden);
      const std::string module =
          block + "." + std::string(weight).substr(0, std::string(weight).find('.'));
      parameters.push_back(
          {allocator.malloc(bytes, "parameter", "setup", module, block + "." + weight), bytes});
    }
  }
  allocator.start_recording();

  std::vector<std::optional<uint64_t>> gradients(parameters.size());
  std::vector<uint64_t> optimizer_state;
  for (size_t step = 0; step < workload.step_count; ++step) {
    const uint64_t input = allocator.malloc(hidden / 8, "input", "forward", "", "tokens");
    std::vector<uint64_t> activations;
    for (size_t layer = 0; layer < workload.layer_count; ++layer) {
      const std::string block = prefix + std::to_string(layer);
      for (const char* part : {"attn", "mlp"}) {
        const std::string module = block + "." + part;
        const uint64_t temporary =
            allocator.malloc(jitter(hidden * 2), "temporary", "forward", module, "scores");
        activations.push_back(
            allocator.malloc(jitter(hidden), "activation", "forward", module, "out"));
        activations.push_back(
            allocator.malloc(jitter(hidden / 4), "activation", "forward", module, "saved"));
        allocator.free(temporary);
      }
    }
    for (size_t p = parameters.size(); p-- > 0;) {
      const std::string module = prefix + std::to_string(p / 5);
      if (!gradients[p]) {
        gradients[p] =
            allocator.malloc(parameters[p].bytes, "gradient", "backward", module, "grad");
      }
      const uint64_t temporary =
          allocator.malloc(jitter(hidden / 2), "temporary", "backward", module, "grad_input");
      if (p % 5 == 0) {
        for (int i = 0; i < 4 && !activations.empty(); ++i) {
          allocator.free(activations.back());
          activations.pop_back();
        }
      }
      allocator.free(temporary);
    }
    for (const uint64_t activation : activations) allocator.free(activation);
    if (optimizer_state.empty()) {
      for (size_t p = 0; p < parameters.size(); ++p) {
        optimizer_state.push_back(allocator.malloc(parameters[p].bytes, "optimizer_state",
                                                   "optimizer", "optimizer", "exp_avg"));
        optimizer_state.push_back(allocator.malloc(parameters[p].bytes, "optimizer_state",
                                                   "optimizer", "optimizer", "exp_avg_sq"));
      }
    }
    for (auto& gradient : gradients) {
      allocator.free(*gradient);
      gradient.reset();
    }
    allocator.free(input);
    if (step == 0 && workload.empty_cache_after_first_step) allocator.empty_cache();
  }
  if (workload.end_with_oom) allocator.oom(1ull << 40);
  return allocator.snapshot();
}

}  // namespace vramlab::report::testing
