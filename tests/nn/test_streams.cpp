// The runtime on its stream clock (Runtime's file comment, Note [The stream clock]): a real kernel
// on the compute stream and a real copy on a copy stream of a sim device overlap, an event joins
// them, and the link's bandwidth decides whether the copy hides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/memory/device.h"
#include "common/nn/runtime.h"
#include "common/stream/event.h"

namespace vramlab::nn {
namespace {

// What one step of the scenario gave: the clock's times and the copy's link time.
struct OverlapStep {
  double step = 0.0;     // host time after synchronize()
  double compute = 0.0;  // the compute stream's kernel time
  double copy = 0.0;     // bytes over the link
  double exposed = 0.0;  // the compute stream's wait on the copy
  bool bytes_arrived = false;
};

// A linear layer's forward on the compute stream while `bytes` go to the device; the next kernel
// reads what the copy brought, so the compute stream waits on the copy's event first. With
// `side_stream` false the copy goes to the compute stream itself.
OverlapStep run_overlap_step(memory::Device device, int64_t bytes, bool side_stream) {
  Runtime runtime(device);
  stream::Clock& clock = runtime.clock();
  const stream::StreamId copy_stream =
      side_stream ? clock.new_stream("copy h2d") : stream::Clock::compute_stream();
  const int64_t N = 64, C = 96, OC = 80, count = bytes / 4;
  const Tensor inp = runtime.zeros({N, C}, memory::MemoryCategory::activation, "inp");
  const Tensor weight = runtime.zeros({OC, C}, memory::MemoryCategory::parameter, "weight");
  const Tensor out =
      runtime.allocate({N, OC}, DType::f32, memory::MemoryCategory::activation, "out");
  const Tensor incoming = runtime.allocate({count}, DType::f32, memory::MemoryCategory::activation,
                                           "incoming");  // (count) f32
  std::vector<float> host(static_cast<size_t>(count));   // (count) f32
  for (int64_t i = 0; i < count; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 977);
  const double before = clock.synchronize();  // the zero fills above

  const stream::Span copy = runtime.copy_to_device_async(incoming, host.data(), copy_stream);
  stream::Event copied;
  copied.record(clock, copy_stream);
  const double compute_before = clock.busy_seconds(stream::Clock::compute_stream());
  runtime.kernels().linear_forward(out.view(), inp.view(), weight.view(), {}, N, C, OC);
  const double compute = clock.busy_seconds(stream::Clock::compute_stream()) - compute_before;
  copied.wait(clock, stream::Clock::compute_stream());
  OverlapStep step;
  step.step = clock.synchronize() - before;
  step.compute = compute;
  step.copy = copy.end - copy.start;
  step.exposed = clock.waited_seconds(stream::Clock::compute_stream());
  std::vector<float> back(host.size());
  runtime.copy_to_host(back.data(), incoming);
  step.bytes_arrived = back == host;
  return step;
}

TEST(RuntimeStreams, ACopyOnASideStreamTakesMaxOfComputeAndCopyAndOnTheComputeStreamTheirSum) {
  memory::Device device = memory::parse_device("sim:a100-40g");
  const double bandwidth = device.spec.host_to_device_bytes_per_s;
  ASSERT_GT(bandwidth, 0.0);
  for (int64_t bytes : {int64_t{4} << 10, int64_t{3} << 20, int64_t{40} << 20}) {
    const OverlapStep side = run_overlap_step(device, bytes, true);
    const OverlapStep same = run_overlap_step(device, bytes, false);
    ASSERT_TRUE(side.bytes_arrived && same.bytes_arrived) << bytes;
    EXPECT_NEAR(side.copy, static_cast<double>(bytes) / bandwidth, 1e-15) << bytes;  // end - start
    EXPECT_GT(side.compute, 0.0);
    const double tolerance = 1e-12;
    EXPECT_NEAR(side.step, std::max(side.compute, side.copy), tolerance) << bytes;
    EXPECT_NEAR(side.exposed, std::max(0.0, side.copy - side.compute), tolerance) << bytes;
    EXPECT_NEAR(same.step, same.compute + same.copy, tolerance) << bytes;
    EXPECT_EQ(same.exposed, 0.0) << bytes;
  }
}

TEST(RuntimeStreams, TurningTheLinkDownMovesTheCopyFromHiddenToExposedAtThePredictedTime) {
  memory::Device device = memory::parse_device("sim:h100-80g");
  const int64_t bytes = int64_t{8} << 20;
  // A link fast enough that the copy takes a thousandth of the kernel's time, then one slow enough
  // that it takes 1 s (far longer than a 64x96x80 product anywhere).
  const OverlapStep probe = run_overlap_step(device, 4, true);
  device.spec.host_to_device_bytes_per_s = static_cast<double>(bytes) / (probe.compute * 1e-3);
  const OverlapStep fast = run_overlap_step(device, bytes, true);
  EXPECT_EQ(fast.exposed, 0.0) << "compute " << fast.compute << " s, copy " << fast.copy << " s";
  device.spec.host_to_device_bytes_per_s = static_cast<double>(bytes) / 1.0;
  const OverlapStep slow = run_overlap_step(device, bytes, true);
  EXPECT_NEAR(slow.copy, 1.0, 1e-12);
  EXPECT_NEAR(slow.exposed, 1.0 - slow.compute, 1e-12);
  EXPECT_NEAR(slow.step, 1.0, 1e-12);
}

TEST(RuntimeStreams, SynchronousCopiesMakeTheHostWaitAndAreCountedAtTheLinksTime) {
  Runtime runtime(memory::parse_device("sim:rtx4090-24g"));
  const memory::DeviceSpec& spec = runtime.device().spec;
  const Tensor t = runtime.allocate({1000, 3}, DType::f32, memory::MemoryCategory::other, "t");
  std::vector<float> host(3000, 1.5f);
  runtime.copy_to_device(t, host.data());
  const double h2d = 12000.0 / spec.host_to_device_bytes_per_s;
  EXPECT_DOUBLE_EQ(runtime.transfer_stats().host_to_device_seconds, h2d);
  EXPECT_DOUBLE_EQ(runtime.clock().host_time(), h2d);  // the host waited for it
  runtime.copy_to_host(host.data(), t.view(0, {100}));
  EXPECT_DOUBLE_EQ(runtime.transfer_stats().device_to_host_seconds,
                   400.0 / spec.device_to_host_bytes_per_s);
  EXPECT_THROW(runtime.copy_to_device_async(t, host.data(), 7), UsageError);
  EXPECT_EQ(runtime.transfer_stats().host_to_device_copies, 1);  // the refused copy moved nothing
}

TEST(RuntimeStreams, AStreamGuardSendsKernelsToItsStream) {
  Runtime runtime(memory::parse_device("sim:64MiB"));
  stream::Clock& clock = runtime.clock();
  const stream::StreamId side = clock.new_stream("side");
  const Tensor t = runtime.allocate({4096}, DType::f32, memory::MemoryCategory::other, "t");
  clock.synchronize();
  const double compute_busy = clock.busy_seconds(stream::Clock::compute_stream());
  {
    stream::StreamGuard guard(clock, side);
    runtime.fill_zero(t);
  }
  EXPECT_GT(clock.busy_seconds(side), 0.0);
  EXPECT_EQ(clock.busy_seconds(stream::Clock::compute_stream()), compute_busy);
  runtime.fill_zero(t);
  EXPECT_GT(clock.busy_seconds(stream::Clock::compute_stream()), compute_busy);
}

}  // namespace
}  // namespace vramlab::nn

namespace vramlab::nn {
namespace {

// The caching allocator's record_stream on the runtime's clock: a block a copy stream still reads
// is not handed out again until the host has reached the copy's end, as PyTorch's cudaEvent
// query decides.
TEST(RuntimeStreams, ABlockACopyStreamUsesIsReusedOnlyOnceTheCopysEventHasCompleted) {
  for (const int64_t count : {int64_t{1000}, int64_t{3} << 20}) {  // small and large pool
    Runtime runtime(memory::parse_device("sim:t4-16g"));
    stream::Clock& clock = runtime.clock();
    const stream::StreamId side = clock.new_stream("copy d2h");
    std::vector<float> host(static_cast<size_t>(count));  // (count) f32
    Tensor source = runtime.zeros({count}, memory::MemoryCategory::activation, "source");
    clock.synchronize();
    const stream::Span copy = runtime.copy_to_host_async(host.data(), source, side);
    source.record_stream(side);
    const void* const address = source.data();
    source.reset();
    EXPECT_GT(copy.end, clock.host_time());
    // The copy is still reading it: a tensor of the same size gets other memory.
    Tensor while_copying =
        runtime.allocate({count}, DType::f32, memory::MemoryCategory::activation, "next");
    EXPECT_NE(while_copying.data(), address) << count;
    // The host does its own work until just before the copy ends: still pending.
    clock.host_work(copy.end - clock.host_time() - 1e-9);
    Tensor almost = runtime.allocate({count}, DType::f32, memory::MemoryCategory::activation, "b");
    EXPECT_NE(almost.data(), address) << count;
    clock.host_work(2e-9);  // now past the copy's end: the event has completed
    Tensor after = runtime.allocate({count}, DType::f32, memory::MemoryCategory::activation, "c");
    EXPECT_EQ(after.data(), address) << count;
    EXPECT_THROW(after.record_stream(9), UsageError);
  }
}

}  // namespace
}  // namespace vramlab::nn
