// RAII CUDA streams and events (compiled only with VRAMLAB_HAVE_CUDA).
#include "common/cuda/stream.h"

namespace vramlab::cuda_runtime {

Stream::Stream() {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
}

Stream::~Stream() {
  cudaStreamDestroy(stream_);
}

void Stream::synchronize() const {
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

Event::Event() {
  check_cuda(cudaEventCreate(&event_), "cudaEventCreate");
}

Event::~Event() {
  cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) {
  check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
}

void Event::synchronize() const {
  check_cuda(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

float elapsed_ms(const Event& start, const Event& stop) {
  stop.synchronize();
  float milliseconds = 0.0f;
  check_cuda(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()), "cudaEventElapsedTime");
  return milliseconds;
}

}  // namespace vramlab::cuda_runtime
