/// \file
/// \brief RAII CUDA streams and events (only with VRAMLAB_HAVE_CUDA), and event-based timing of
/// GPU work.
#pragma once

#include <cuda_runtime_api.h>

#include "common/cuda/cuda_check.h"

namespace vramlab::cuda_runtime {

/// An owned cudaStream_t (non-blocking with respect to the legacy default stream).
class Stream {
 public:
  /// Creates the stream. \throws CudaError when cudaStreamCreateWithFlags fails (e.g. no GPU).
  Stream();
  /// Destroys the stream (pending work still completes, as cudaStreamDestroy specifies).
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// For launches and cudaMemcpyAsync; valid while this object lives.
  cudaStream_t get() const { return stream_; }
  /// Waits until everything queued on the stream is done. \throws CudaError on a failure.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// An owned cudaEvent_t with timing enabled.
class Event {
 public:
  /// Creates the event. \throws CudaError when cudaEventCreate fails.
  Event();
  /// cudaEventDestroy; errors are ignored (a destructor must not throw).
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// Records the event on \p stream (nullptr: the default stream).
  /// \throws CudaError on a failure.
  void record(cudaStream_t stream = nullptr);
  /// Waits until the recorded work is done. \throws CudaError on a failure.
  void synchronize() const;
  /// Valid while this object lives.
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Milliseconds between \p start and \p stop as the GPU measured them (cudaEventElapsedTime,
/// about 0.5 µs resolution); waits for \p stop.
/// \throws CudaError on a failure.
float elapsed_ms(const Event& start, const Event& stop);

}  // namespace vramlab::cuda_runtime
