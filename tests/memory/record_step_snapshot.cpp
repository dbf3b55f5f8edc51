// Test support: writes the memory snapshot of a real GPT-2 training step on sim, recorded with
// C++ call stacks and taken as backward starts (every saved activation is live then), as the
// pickle torch.cuda.memory._dump_snapshot() writes. check_memory_viz_frames.py reads it with
// PyTorch's own _memory_viz.
//   record_step_snapshot OUT.pickle
#include <cstdio>
#include <exception>

#include <nlohmann/json.hpp>

#include "common/memory/caching_allocator.h"
#include "common/memory/device.h"
#include "common/model/model_config.h"
#include "common/nn/runtime.h"
#include "common/nn/step_observer.h"
#include "common/snapshot/snapshot_pickle.h"
#include "common/train/trainer.h"

namespace {

using namespace vramlab;

// Takes the allocator's snapshot when the first backward pass starts.
struct SnapshotAtBackward : nn::StepObserver {
  explicit SnapshotAtBackward(memory::CachingAllocator& a) : allocator(a) {}
  void before(const nn::PhaseEvent& event) override {
    if (event.phase == nn::StepPhase::backward && snapshot.is_null())
      snapshot = allocator.snapshot();
  }
  memory::CachingAllocator& allocator;
  nlohmann::json snapshot;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: record_step_snapshot OUT.pickle\n");
    return 2;
  }
  try {
    nn::Runtime runtime(memory::parse_device("sim"));
    runtime.allocator().record_history(memory::RecordMode::all, SIZE_MAX, /*cpp_stacks=*/true);
    train::TrainOptions options;
    options.model = gpt2_config("viz-gpt2", 2, 64, 4, 96, 32);
    options.batch = 2;
    options.seq = 16;
    train::Trainer trainer(runtime, options);
    SnapshotAtBackward observer(runtime.allocator());
    trainer.add_observer(observer);
    trainer.step();
    trainer.remove_observer(observer);
    snapshot::write_snapshot_pickle(observer.snapshot, argv[1]);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "record_step_snapshot: %s\n", error.what());
    return 1;
  }
}
